"""Rerun one chapter with new parameters: ``python -m studylib.book rerun <chapter> -p NAME VALUE``.

papermill executes ``book/<chapter>.md`` with the parameters (its measurements are saved in
data/), the parameters are recorded in the chapter as a visible ``injected-parameters`` cell, and
the book is rebuilt (only that chapter re-executes, reading the points papermill just measured).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .presets import CHAPTERS, repo_root

INJECTED_TAG = "injected-parameters"


def _code_cell(tag: str, body: str) -> str:
    return f"```{{code-cell}} ipython3\n:tags: [{tag}]\n\n{body.rstrip()}\n```\n"


def inject_parameters(text: str, parameters: dict) -> str:
    """Return chapter source with one ``injected-parameters`` cell after the ``parameters`` cell
    (replacing an earlier one); with no parameters, just remove it."""
    text = re.sub(r"\n```\{code-cell\}[^\n]*\n:tags: \[" + INJECTED_TAG + r"\]\n.*?\n```\n", "", text, flags=re.S)
    if not parameters:
        return text
    m = re.search(r"```\{code-cell\}[^\n]*\n:tags: \[parameters\]\n.*?\n```\n", text, flags=re.S)
    if not m:
        raise ValueError("the chapter has no cell tagged 'parameters'")
    body = "# Injected by `python -m studylib.book rerun` (papermill); `--reset` removes this cell\n"
    body += "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
    return text[: m.end()] + "\n" + _code_cell(INJECTED_TAG, body) + text[m.end():]


def rerun(chapter: str, parameters: dict, *, build: bool = True, reset: bool = False) -> Path:
    """Execute ``book/<chapter>.md`` with papermill and ``parameters`` (saving its measurements in
    data/), record the parameters in the chapter as an ``injected-parameters`` cell, and rebuild
    the book (only this chapter re-executes; it reads the points papermill just measured)."""
    import subprocess
    import sys

    import jupytext
    import papermill

    root = repo_root()
    src = root / "book" / f"{chapter}.md"
    if not src.exists():
        raise SystemExit(f"no chapter {src}")
    text = src.read_text()
    if reset:
        parameters = {}
    else:
        out = root / "_build" / "reruns" / f"{chapter}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        nb = jupytext.reads(inject_parameters(text, {}), fmt="md:myst")
        papermill.execute_notebook(nb, str(out), parameters=parameters, cwd=str(root / "book"),
                                   kernel_name="python3", progress_bar=False)
        print(f"executed notebook: {out}")
    src.write_text(inject_parameters(text, parameters))
    if build:
        subprocess.run([str(Path(sys.executable).with_name("jupyter-book")), "build", "book/"], cwd=root, check=True)
        print(f"see {root / '_build' / 'html' / (chapter + '.html')}")
    return src


def _literal(v: str):
    try:
        return ast.literal_eval(v)
    except (ValueError, SyntaxError):
        return v


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m studylib.book",
                                 description="Rerun one chapter of the book with new parameters (papermill), then rebuild.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rerun", help="papermill one chapter with parameters, keep them in the chapter, rebuild the book")
    r.add_argument("chapter", choices=[*CHAPTERS, "beyond", "intro"])
    r.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help='e.g. -p num_envs "[1, 64, 4096]" -p preset paper (values are Python literals)')
    r.add_argument("--no-build", action="store_true", help="do not run jupyter-book build afterwards")
    r.add_argument("--reset", action="store_true", help="remove injected parameters (back to the preset) and rebuild")
    a = ap.parse_args(argv)
    rerun(a.chapter, {k: _literal(v) for k, v in a.parameter}, build=not a.no_build, reset=a.reset)
    return 0
