"""Rerun one chapter with new parameters: ``python -m studylib.book rerun <chapter> -p NAME VALUE``.

The parameters are checked first (``check_parameters``: a name the chapter's ``parameters`` cell
does not declare, or a value its parameters' type (``book.chapters``) does not accept, is refused with one line naming the chapter's
parameters, and nothing is run or written). Then papermill executes ``book/<chapter>.md`` with them
(its measurements are saved in data/), the parameters are recorded in the chapter as a visible
``injected-parameters`` cell, and the book is rebuilt (only that chapter re-executes, reading the
points papermill just measured).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from ..errors import ConfigError, StudyError
from ..harness.presets import repo_root
from .chapters import CHAPTERS

INJECTED_TAG = "injected-parameters"
PARAMETERS_CELL = re.compile(r"```\{code-cell\}[^\n]*\n:tags: \[parameters\]\n(.*?)\n```\n", flags=re.S)


def _code_cell(tag: str, body: str) -> str:
    return f"```{{code-cell}} ipython3\n:tags: [{tag}]\n\n{body.rstrip()}\n```\n"


def chapter_path(chapter: str) -> Path:
    return repo_root() / "book" / f"{chapter}.md"


def rerunnable_chapters() -> list[str]:
    """The chapters (``book.chapters.CHAPTERS``) whose page has a ``parameters`` cell."""
    return [c for c in CHAPTERS if chapter_path(c).exists() and PARAMETERS_CELL.search(chapter_path(c).read_text())]


def declared_parameters(text: str) -> dict:
    """Name -> default of each assignment in a chapter's ``parameters`` cell."""
    m = PARAMETERS_CELL.search(text)
    if not m:
        raise ConfigError("the chapter has no cell tagged 'parameters'")
    out = {}
    for node in ast.parse(m.group(1)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def check_parameters(chapter: str, parameters: dict) -> dict:
    """``parameters`` if chapter ``chapter`` declares every name and accepts every value; else
    ConfigError, one line naming the chapter's parameters."""
    path = chapter_path(chapter)
    if chapter not in CHAPTERS or not path.exists():
        raise ConfigError(f"no chapter {chapter!r}; chapters with parameters: {', '.join(rerunnable_chapters())}")
    declared = declared_parameters(path.read_text())
    unknown = [k for k in parameters if k not in declared]
    if unknown:
        raise ConfigError(f"chapter {chapter!r} has no parameter {unknown[0]!r}; its parameters: {', '.join(declared)}")
    try:  # the chapter's own typed parameters check every value, as the chapter will
        CHAPTERS[chapter].params(**parameters)
    except ConfigError as e:
        raise ConfigError(f"chapter {chapter!r}: {e}; its parameters: {', '.join(declared)}") from None
    return parameters


def inject_parameters(text: str, parameters: dict) -> str:
    """Return chapter source with one ``injected-parameters`` cell after the ``parameters`` cell
    (replacing an earlier one); with no parameters, just remove it."""
    text = re.sub(r"\n```\{code-cell\}[^\n]*\n:tags: \[" + INJECTED_TAG + r"\]\n.*?\n```\n", "", text, flags=re.S)
    if not parameters:
        return text
    m = PARAMETERS_CELL.search(text)
    if not m:
        raise ConfigError("the chapter has no cell tagged 'parameters'")
    body = "# Injected by `python -m studylib.book rerun` (papermill); `--reset` removes this cell\n"
    body += "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
    return text[: m.end()] + "\n" + _code_cell(INJECTED_TAG, body) + text[m.end():]


def rerun(chapter: str, parameters: dict, *, build: bool = True, reset: bool = False) -> Path:
    """Check ``parameters``, execute ``book/<chapter>.md`` with papermill and them (saving its
    measurements in data/), record them in the chapter as an ``injected-parameters`` cell, and
    rebuild the book (only this chapter re-executes; it reads the points papermill just measured)."""
    import subprocess

    root = repo_root()
    parameters = {} if reset else check_parameters(chapter, parameters)
    src = chapter_path(chapter)
    text = src.read_text()
    if parameters:
        import jupytext
        import papermill

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


def build_parser():
    from ..cli.options import OneLineParser

    ap = OneLineParser(prog="python -m studylib.book",
                       description="Rerun one chapter of the book with new parameters (papermill), then rebuild.")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=OneLineParser)
    r = sub.add_parser("rerun", help="papermill one chapter with parameters, keep them in the chapter, rebuild the book")
    r.add_argument("chapter", choices=rerunnable_chapters())
    r.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help='e.g. -p num_envs "[1, 64, 4096]" -p preset paper (values are Python literals)')
    r.add_argument("--no-build", action="store_true", help="do not run jupyter-book build afterwards")
    r.add_argument("--reset", action="store_true", help="remove injected parameters (back to the preset) and rebuild")
    return ap


def main(argv=None) -> int:
    """The command line; exit status 0, or 2 with one line on stderr for parameters refused."""
    try:
        a = build_parser().parse_args(argv)
        rerun(a.chapter, {k: _literal(v) for k, v in a.parameter}, build=not a.no_build, reset=a.reset)
    except StudyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
