"""The book: every chapter executes in the book's build, which succeeds with warnings as errors,
and the built pages' Altair charts really render in headless Chromium (offline).

The build runs at the ``tiny`` preset and measures into a temporary folder: the committed
``data/`` and the main ``_build/`` are never touched. Time on 2 cores: about 2 min for the build
(every chapter measuring or training at its tiny size, but for the cost-model calibration, which
the suite measures once), seconds for the browser checks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from studylib.book.chapters import REFERENCE_PAGES
from tests.conftest import copy_calibration

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
CHAPTERS = sorted(p.stem for p in BOOK.glob("*.md") if p.stem not in REFERENCE_PAGES)  # the executed pages
CHART_PAGES = ["cartpole", "vectorization", "overheads", "fusion", "complexity", "beyond", "model", "training", "robot",
               "machines"]
BIN = Path(sys.executable).parent


def _env(tmp_path: Path) -> dict:
    """The build's environment: the tiny preset, measuring into ``tmp_path / "data"``. (The suite's
    conftest has set XLA's backend optimization level 0, which the chapters' kernels inherit: the
    tiny preset's numbers mean nothing, harness/presets.py.)"""
    env = dict(os.environ)
    env["STUDYLIB_PRESET"] = "tiny"
    env["STUDYLIB_DATA_DIR"] = str(tmp_path / "data")
    env["PYTHONWARNINGS"] = env.get("PYTHONWARNINGS", "")
    return env


def test_chapters_listed_in_toc():
    toc = (ROOT / "_toc.yml").read_text()
    listed = set(re.findall(r"(?:root|file):\s*(\S+)", toc))
    pages = set(CHAPTERS) | set(REFERENCE_PAGES)
    assert listed == pages, f"pages {sorted(pages ^ listed)} are not both in book/ and _toc.yml"
    assert (BOOK / "_toc.yml").resolve() == (ROOT / "_toc.yml").resolve(), "book/_toc.yml must link to ../_toc.yml"
    assert not list(BOOK.glob("*.ipynb")), "no .ipynb in book/: chapters are jupytext .md"


@pytest.mark.parametrize("page", REFERENCE_PAGES)
def test_a_reference_page_is_plain_markdown(page):
    """A page that is not a chapter has no kernel (nbval and the build do not execute it) and no code
    cell: its code is shown, and run by its own test."""
    text = (BOOK / f"{page}.md").read_text()
    assert text.startswith("# ") and "kernelspec:" not in text and "{code-cell}" not in text, page


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_has_parameters_cell(chapter):
    text = (BOOK / f"{chapter}.md").read_text()
    assert re.search(r"```\{code-cell\}[^\n]*\n:tags: \[parameters\]", text), f"{chapter}: no cell tagged parameters"
    assert "name: python3" in text.split("\n---", 1)[0], f"{chapter}: kernelspec must be python3"


SHOWN = ("md", "table", "finish")  # book helpers whose value is an output only when the cell displays it


def discarded_outputs(source: str) -> list[str]:
    """Calls ``book.md/table/finish(...)`` in a code cell whose value is thrown away: an expression
    statement that is not the cell's last top-level statement (Jupyter shows only that one's
    value), e.g. inside an if/else branch. Such a call must be wrapped in ``display(...)``."""
    import ast

    tree = ast.parse(source)
    last = tree.body[-1] if tree.body else None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and node is not last and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Attribute) and f.attr in SHOWN and getattr(f.value, "id", None) == "book":
                found.append(f"line {node.lineno}: book.{f.attr}(...)")
    return found


def _code_cells(chapter: str) -> list[str]:
    text = (BOOK / f"{chapter}.md").read_text()
    return re.findall(r"```\{code-cell\}[^\n]*\n(?::tags:[^\n]*\n)?(.*?)\n```", text, flags=re.S)


def test_the_discarded_output_check_can_fail():
    assert discarded_outputs("if x:\n    book.md('a')\nelse:\n    book.md('b')") == ["line 2: book.md(...)",
                                                                                    "line 4: book.md(...)"]
    assert discarded_outputs("book.table(t)\nx = 1") == ["line 1: book.table(...)"]
    assert discarded_outputs("if x:\n    display(book.md('a'))\nbook.md('b')") == []


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_chapter_output_is_discarded(chapter):
    cells = _code_cells(chapter)
    assert cells, f"{chapter}: no code cells found"
    bad = [f"cell {i + 1}, {d}" for i, c in enumerate(cells) for d in discarded_outputs(c)]
    assert not bad, f"{chapter}: outputs computed and thrown away (wrap them in display()): {bad}"


# Every chapter executes in ``built_book`` (warnings as errors); nbval checks, on two cheap chapters
# of different kinds (test_book_runs.py), that the root conftest.py's collection of jupytext .md
# chapters works, without executing them all a second time (the suite's budget).
def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def built_book(tmp_path_factory, calibrated):
    """``jupyter-book build book/ -W -n --keep-going`` at the tiny preset into a temporary folder,
    whose data folder starts with the session's cost-model calibration (conftest's ``calibrated``:
    measured once for the suite, which also tests its measuring); the chapters measure the rest."""
    out = tmp_path_factory.mktemp("book-build")
    env = _env(out)
    copy_calibration(calibrated, out / "data")
    r = subprocess.run(
        [str(BIN / "jupyter-book"), "build", "book/", "-W", "-n", "--keep-going", "--path-output", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    html = out / "_build" / "html"
    log = (r.stdout + r.stderr)[-8000:]
    assert r.returncode == 0, f"jupyter-book build failed (warnings are errors):\n{log}"
    assert (html / "index.html").exists(), f"no HTML in {html}:\n{log}"
    return html


def test_build_has_offline_vega_bundle(built_book):
    bundle = built_book / "_static" / "vega-offline.js"
    assert bundle.exists() and bundle.stat().st_size > 300_000, "the vega bundle must ship with the site"
    for page in CHART_PAGES:
        text = (built_book / f"{page}.html").read_text()
        assert "vega-offline.js" in text, f"{page}.html does not load the local vega bundle"
        assert "altair-viz-" in text, f"{page}.html has no Altair chart"


def _dump_dom(chromium: str, page: Path, profile: Path) -> str:
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--window-size=1200,900",
           "--dump-dom", page.as_uri()]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"chromium failed on {page.name}: {r.stderr[-2000:]}"
    return r.stdout


@pytest.mark.parametrize("page", CHART_PAGES)
def test_charts_render_in_headless_chromium(built_book, page, tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium on this machine (CI installs it: apt-get install -y chromium)")
    dom = _dump_dom(chromium, built_book / f"{page}.html", tmp_path / "profile")
    visible = re.sub(r"<script\b.*?</script>", "", dom, flags=re.S)  # the chart scripts quote the error texts
    assert "Error loading script" not in visible, f"{page}: a chart failed to load vega (CDN fallback?)"
    assert "Javascript Error" not in visible, f"{page}: vega-embed reported an error"
    ids = re.findall(r'<div id="(altair-viz-[0-9a-f]+)"', dom)
    assert ids, f"{page}: no chart container in the rendered DOM"
    for i, chart_id in enumerate(ids):
        start = dom.index(f'id="{chart_id}"')
        end = dom.find("altair-viz-", start + len(chart_id) + 10)
        segment = dom[start: end if end > 0 else len(dom)]
        assert "<svg" in segment and 'class="marks"' in segment, f"{page}: chart {i + 1} ({chart_id}) did not render an SVG"
        assert re.search(r'<path[^>]+d="M', segment), f"{page}: chart {i + 1} ({chart_id}) has no drawn marks"


def _words(text: str) -> list[str]:
    """The words of a text, lower case: markup, quotes and punctuation (which Markdown and Sphinx
    rewrite) left out."""
    return re.findall(r"[a-z0-9]+", text.lower())


def _markdown_text(line: str) -> str:
    """What a reader sees of one Markdown line: a directive's title, a link's text, no options."""
    line = line.strip()
    if line.startswith(":::"):
        return line.split("}", 1)[-1]
    if re.match(r":\w+:", line):
        return ""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line)


def _visible_text(html: str) -> str:
    """A page's text as a reader sees it (code cells included): no scripts, styles, tags or attributes."""
    import html as html_lib

    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S | re.I)
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", html))


def test_every_computed_text_reaches_the_html(built_book):
    """Each Markdown output of every executed chapter (its conclusion included) is in the built
    page: a conclusion computed but never displayed, or displayed but not rendered, fails."""
    import nbformat

    executed = built_book.parent / "jupyter_execute"
    missing = {}
    for chapter in CHAPTERS:
        nb = nbformat.read(executed / f"{chapter}.ipynb", as_version=4)
        page = " ".join(_words(_visible_text((built_book / f"{chapter}.html").read_text())))
        texts = [o["data"]["text/markdown"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                 if "text/markdown" in o.get("data", {})]
        assert texts, f"{chapter}: no computed text at all"
        after = [i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "## Conclusion" in c.source]
        for i in after:  # the conclusion's code cell shows its text
            outputs = nb.cells[i].get("outputs", []) if i < len(nb.cells) else []
            assert any("text/markdown" in o.get("data", {}) for o in outputs), f"{chapter}: the conclusion shows nothing"
        for text in texts:
            for line in filter(None, (_markdown_text(ln) for ln in text.splitlines())):
                words = _words(line)[:12]
                if len(words) >= 4 and " ".join(words) not in page:
                    missing.setdefault(chapter, []).append(line[:100])
    assert not missing, f"computed text absent from the HTML: {missing}"


FORBIDDEN = re.compile(r"\b(goals?|issues?|targets?)\b", re.I)


def test_the_book_speaks_of_the_paper_and_the_measurements_only(built_book):
    """No internal goal, issue or target in any built page's visible text (code shown included)."""
    found = {}
    for page in sorted(built_book.glob("*.html")):
        hits = FORBIDDEN.findall(_visible_text(page.read_text()))
        if hits:
            found[page.name] = sorted(set(hits))
    assert not found, f"words for internal targets in the book: {found}"
    assert FORBIDDEN.search(_visible_text("<p>our <b>goal</b> was 1.5x</p>"))  # the check can fail


REMOTE_LOAD = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


def remote_loads(html: str) -> list[str]:
    """The tags of a page that make the browser fetch something from another host: a script, a
    stylesheet (or any <link>), an image or a frame whose address is http(s) or protocol-relative.
    Plain links (<a href>) are not loads; neither are URLs inside a script's text."""
    return REMOTE_LOAD.findall(re.sub(r"<script\b[^>]*>(?!\s*</script>).*?</script>", lambda m: m.group(0).split(">", 1)[0] + ">",
                                      html, flags=re.S | re.I))


def test_remote_loads_detector_can_fail():
    assert remote_loads('<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>')
    assert remote_loads("<link rel='stylesheet' href='//fonts.example.org/a.css'>")
    assert remote_loads('<script async="async" src="http://x.org/thebe.js"></script>')
    assert not remote_loads('<script src="_static/mathjax/tex-chtml.js"></script><a href="https://arxiv.org">paper</a>')
    assert not remote_loads('<script>const url = "https://unpkg.com/thebe"; </script>')


def test_no_page_loads_anything_from_the_network(built_book):
    """Nothing a reader needs comes from the network: no page loads a script, stylesheet, image or
    frame from http(s); MathJax and the parameters cell are handled at build time."""
    found = {p.name: remote_loads(p.read_text()) for p in sorted(built_book.glob("*.html"))}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"pages loading from the network: {found}"
    assert (built_book / "_static" / "mathjax" / "tex-chtml.js").is_file(), "MathJax must ship in _static"
    page = (built_book / "cartpole.html").read_text()
    assert 'src="_static/mathjax/tex-chtml.js' in page, "the chapters must load the local MathJax"


def test_pages_show_no_parameters_cell_and_no_raw_errors(built_book):
    """The papermill parameters cell is removed from every page, and no raw driver error reaches a
    page (the CUDA status is one sentence in the machine note)."""
    for page in sorted(built_book.glob("*.html")):
        text = _visible_text(page.read_text())
        assert "papermill overrides these" not in text, f"{page.name}: the parameters cell is shown"
        assert "cudaError" not in text and "CUDA driver version is insufficient" not in text, f"{page.name}: raw CUDA error"
    css = (built_book / "_static" / "study.css").read_text()
    assert "overflow-x: auto" in css and "study.css" in (built_book / "overheads.html").read_text()


def test_cuda_status_is_one_sentence_without_the_raw_error():
    from studylib.book.notes import cuda_sentence

    raw = "no CUDA device: cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"
    sentence = cuda_sentence(False, raw)
    assert "cudaError" not in sentence and "insufficient" not in sentence
    assert sentence.startswith("No CUDA device here: ") and sentence.count(".") == 1 and "driver" in sentence
    assert cuda_sentence(True, "NVIDIA H100") == "CUDA device: NVIDIA H100."


def test_the_hardware_note_names_its_host_without_importing_torch():
    """Every page shows the note; a chapter that only reads its data must not pay torch's import
    (1.3 s) and exit (0.5 s) for it: the note reads the host (``host_info``), not the measuring
    process's torch threads (``machine_info``)."""
    code = ("import sys; from studylib.book.notes import machine_note; text = machine_note().data; "
            "print('torch' in sys.modules, 'cores' in text and 'by commit' in text)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.stdout.split() == ["False", "True"], out.stdout + out.stderr[-2000:]


def test_a_chapters_kernel_and_only_a_kernel_freezes_the_heap_at_exit(monkeypatch):
    """studylib.book in IPython (a chapter's kernel) registers gc.freeze at exit; imported by a
    script (no IPython shell) it registers nothing."""
    import atexit
    import gc
    import types

    import studylib.book

    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    for shell in (None, object()):
        monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda shell=shell: shell))
        studylib.book._kernel_exits_without_collecting()
    monkeypatch.delitem(sys.modules, "IPython")
    studylib.book._kernel_exits_without_collecting()
    assert registered == [gc.freeze]


def test_pages_name_the_commit_that_measured_their_data(tmp_path, monkeypatch):
    from studylib.book.notes import measured_by, provenance_sentence
    from studylib.harness.data import provenance, semantics

    monkeypatch.setattr(provenance, "host_info", lambda: {"commit": "3" * 40, "dirty": False})
    monkeypatch.setattr(provenance, "machine_key", lambda: "this-machine")

    folder = tmp_path / "some-machine"
    folder.mkdir()
    runs = [{"run_id": "a", "provenance": {"commit": "1" * 40, "dirty": False, "date": "2026-11-01T00:00:00+00:00"}},
            {"run_id": "b", "provenance": {"commit": "2" * 40, "dirty": True, "date": "2026-11-02T00:00:00+00:00"}}]
    current = semantics.stamp("throughput")
    rows = [{"run_id": "a", "semantics": current}, {"run_id": "a", "semantics": current},
            {"run_id": "b", "semantics": current}, {"run_id": "b"}]  # the last one stale: not counted
    (folder / "fig8.json").write_text(json.dumps({"runs": runs, "rows": rows}))
    found = measured_by(folder, ["fig8", "absent"])
    assert found["`1111111111`"]["rows"] == 2 and found["`2222222222` + local changes"]["rows"] == 1
    text = provenance_sentence("fusion", tmp_path, "some-machine")
    assert "`1111111111` (2 points, 2026-11-01)" in text and "`2222222222` + local changes (1 point" in text
    assert "page built by commit `3333333333`." in text
    assert "this build" in provenance_sentence("fusion", tmp_path / "empty", None)


def test_one_palette_for_every_implementation():
    from studylib.book.figures.charts import IMPL_COLORS, impl_color, impl_scale
    from studylib.settings import IMPLEMENTATIONS, PEERS

    names = set(IMPLEMENTATIONS) | set(PEERS) | {"fused-step"}
    assert names <= set(IMPL_COLORS), f"no colour for {sorted(names - set(IMPL_COLORS))}"
    assert len(set(IMPL_COLORS.values())) == len(IMPL_COLORS), "two implementations share a colour"
    # The same implementation gets the same colour whatever else a chart shows.
    a, b = impl_scale(["torch", "jax"]).to_dict(), impl_scale(["jax", "cpp", "torch", "sb3"]).to_dict()
    assert dict(zip(a["domain"], a["range"]))["jax"] == dict(zip(b["domain"], b["range"]))["jax"] == IMPL_COLORS["jax"]
    assert impl_color(["cpp"], field_="collector").to_dict()["field"] == "collector"


def printed_snippets(text: str) -> list[str]:
    """The code cells a page shows as code to copy: neither hidden nor removed nor the parameters."""
    cells = re.finditer(r"```\{code-cell\}[^\n]*\n(?::tags: \[([^\]]*)\]\n)?(.*?)```", text, flags=re.S)
    return [body for tags, body in ((m.group(1) or "", m.group(2)) for m in cells)
            if not any(t in tags for t in ("hide-input", "hide-cell", "remove-", "parameters"))]


def test_printed_snippets_run_as_printed(tmp_path):
    """A snippet a reader copies runs in a fresh interpreter, with nothing the book defined before."""
    assert printed_snippets("```{code-cell} ipython3\n:tags: [hide-input]\nx = 1\n```\n```{code-cell} ipython3\ny = 2\n```")\
        == ["y = 2\n"]
    snippets = [(ch, s) for ch in CHAPTERS for s in printed_snippets((BOOK / f"{ch}.md").read_text())]
    assert snippets, "the book prints no snippet"
    for chapter, code in snippets:
        r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{chapter}: a printed snippet fails outside the book:\n{code}\n{r.stderr[-2000:]}"
