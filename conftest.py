"""Root conftest: let nbval collect the book's jupytext MyST chapters (``book/*.md``).

nbval 0.11 only collects ``.ipynb`` and reads them with nbformat. Here ``pytest --nbval-lax book/``
also collects every ``.md`` under ``book/`` whose front matter declares a ``kernelspec`` (skipping
``_build``), reading it with jupytext. When nbval collects chapters, the chapters run at the
``tiny`` preset and measure into a temporary folder unless ``STUDYLIB_PRESET`` /
``STUDYLIB_DATA_DIR`` are set, so a test never touches the committed ``data/``.
(A conftest in ``tests/`` would not apply to ``book/``: pytest only uses conftests on the path.)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
BOOK = ROOT / "book"


def _is_chapter(path: Path) -> bool:
    if path.suffix != ".md" or BOOK not in path.resolve().parents:
        return False
    if any(part.startswith("_") or part.startswith(".") for part in path.resolve().relative_to(BOOK).parts[:-1]):
        return False  # _build, _static, ...
    head = path.read_text(encoding="utf-8")[:2000]
    return head.startswith("---") and "kernelspec:" in head.split("\n---", 1)[0]


def _install_jupytext_reader() -> None:
    import jupytext
    import nbformat
    import nbval.plugin

    if getattr(nbval.plugin.nbformat, "_studylib_jupytext", False):
        return

    class _Reader:
        """nbformat, except that ``read`` of a ``.md`` goes through jupytext."""

        _studylib_jupytext = True

        def __getattr__(self, name):
            return getattr(nbformat, name)

        def read(self, path, as_version=4, **kw):
            if str(path).endswith(".md"):
                return jupytext.read(path)
            return nbformat.read(path, as_version=as_version, **kw)

    nbval.plugin.nbformat = _Reader()


def _tiny_environment() -> None:
    os.environ.setdefault("STUDYLIB_PRESET", "tiny")
    if "STUDYLIB_DATA_DIR" not in os.environ:
        os.environ["STUDYLIB_DATA_DIR"] = tempfile.mkdtemp(prefix="studylib-nbval-data-")


def pytest_collect_file(file_path, parent):
    opt = parent.config.option
    if not (getattr(opt, "nbval", False) or getattr(opt, "nbval_lax", False)):
        return None
    if not _is_chapter(Path(file_path)):
        return None
    from nbval.plugin import IPyNbFile

    _install_jupytext_reader()
    _tiny_environment()  # before the kernel starts: it inherits this process's environment
    return IPyNbFile.from_parent(parent, path=file_path)


def pytest_ignore_collect(collection_path, config):
    # Built pages and caches hold copies of chapters (and executed .ipynb) that must not be collected.
    parts = Path(collection_path).parts
    if "_build" in parts or ".jupyter_cache" in parts:
        return True
    return None


# One XLA compilation cache for the whole run, shared by the pytest-xdist workers and the processes
# the tests start (the book's build, its kernels, snippets): many tests compile the same jax
# programs (an environment at the same n and N, MJX on the same model), each in a new process or
# closure, and a program compiled once is then loaded, not compiled again. Made empty for each run
# (the suite's time is a cold machine's) and removed at its end. Tests never read compile times;
# the book's own builds do (rows record them), so only the tests use it.
_JAX_CACHE_ENV = "JAX_COMPILATION_CACHE_DIR"
_OWN_JAX_CACHE: list[str] = []


# TorchInductor's first compile into an empty cache asks g++ which vector ISAs it accepts by
# compiling six probe programs against ATen's headers (7.5 s of a fresh run here). With
# TORCHINDUCTOR_VEC_ISA_OK it takes /proc/cpuinfo's flags for the answer: the ISA it then picks is
# the same (AVX-512 here, which g++ 12 compiles), and the tests never read inductor's timings.
_INDUCTOR_ISA_ENV = "TORCHINDUCTOR_VEC_ISA_OK"


def pytest_configure(config):
    os.environ.setdefault(_INDUCTOR_ISA_ENV, "1")  # before any worker, kernel or snippet starts
    if os.environ.get("PYTEST_XDIST_WORKER") or _JAX_CACHE_ENV in os.environ:
        return  # a worker inherits its controller's; a cache the caller set is theirs
    _OWN_JAX_CACHE.append(tempfile.mkdtemp(prefix="studylib-tests-xla-cache-"))
    os.environ[_JAX_CACHE_ENV] = _OWN_JAX_CACHE[0]
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")


def pytest_unconfigure(config):
    import shutil

    for path in _OWN_JAX_CACHE:
        shutil.rmtree(path, ignore_errors=True)
        os.environ.pop(_JAX_CACHE_ENV, None)
