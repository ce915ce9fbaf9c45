"""Sphinx extension: the chapters' ``parameters`` cell does not appear on the page.

Each chapter keeps a cell tagged ``parameters`` (papermill's defaults, used by ``python -m
studylib.book rerun``); the reader needs none of it, since the "Parameters of this run" note says
what the page ran with. When Sphinx reads a chapter, the cell's tags gain ``remove-cell`` (myst-nb
then drops it from the HTML) — in memory only: the file on disk, papermill and the execution cache
(which hashes code, not tags) are untouched. A rerun's ``injected-parameters`` cell, the record of
what differs from the defaults, stays visible.
"""

from __future__ import annotations

import re

TAGGED = re.compile(r"^(```\{code-cell\}[^\n]*\n:tags: \[)parameters\]", flags=re.M)


def hide_parameters(source: str) -> str:
    return TAGGED.sub(r"\1parameters, remove-cell]", source)


def _source_read(app, docname, source):
    source[0] = hide_parameters(source[0])


def setup(app):
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
