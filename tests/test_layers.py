"""studylib's layers, read from the source with ``ast``: no module imports a higher layer, and no
import cycle exists (imports inside functions count: a lazy import is still a dependency).

Layers follow the packages, lowest first; a module may import its own layer and the ones below it:

  core         studylib/sims/ (one module or folder per simulator: its record and array dynamics;
               a folder's ``native``, ``backend`` and ``cuda_backend``
               modules, its C/CUDA binding, are environment layer) and the modules at studylib/'s root: episodes, policy, settings, implspec,
               devices, arrays, costs, errors (what the study is about)
  environment  studylib/envs/ (the seven implementations, their base, registry, backend_env),
               studylib/native/ (building and loading the C++ and CUDA sources, the backends),
               studylib/adapters/ (gymnasium's vector and single-env API, gymnax-style functions),
               the package itself (``studylib/__init__``) and the two public aliases of adapters
  harness      studylib/harness/: timing, measure, store, sweep, provenance, profiler, roofline, and
               what it measures beside the implementations (peers, atari, costmodel)
  top          studylib/book/ (the chapters' helpers), studylib/train/ and the command line (__main__, studylib/cli/);
               within it, train imports nothing from book (directly or through another module): the
               book renders training, training does not know the book
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "studylib"
LAYERS = ("core", "environment", "harness", "top")
ENVIRONMENT = {"envs", "native", "adapters"}
PUBLIC_ALIASES = {"gym_vector", "jax_functional"}  # studylib.<name> is studylib.adapters.<name>
CORE = {"episodes", "policy", "settings", "implspec", "records", "devices", "arrays", "costs", "errors"}
NATIVE_BINDINGS = {"native", "backend", "cuda_backend"}  # a simulator folder's C/CUDA binding and its backends: environment layer


def _module_name(path: Path) -> str:
    parts = ["studylib", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts or parts[0] in ENVIRONMENT or parts[0] in PUBLIC_ALIASES or parts[0] == "sims" and parts[-1] in NATIVE_BINDINGS:
        return "environment"  # studylib/__init__: make, the classes, the settings
    if parts[0] == "harness":
        return "harness"
    if parts[0] in ("book", "train", "cli", "__main__"):
        return "top"
    return "core"  # a module at the root


def imports_of(module: str) -> set[str]:
    """The studylib modules ``module`` imports (a package's own name for names its __init__ defines)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "studylib"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = ".".join(base[:len(base) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            elif (node.module or "").split(".")[0] == "studylib":
                target = node.module
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
    found.discard(module)
    return {m for m in found if m in MODULES}


GRAPH = {m: imports_of(m) for m in MODULES}


def upward_imports(graph) -> list[str]:
    return [f"{m} ({layer(m)}) imports {d} ({layer(d)})" for m, deps in sorted(graph.items()) for d in sorted(deps)
            if LAYERS.index(layer(d)) > LAYERS.index(layer(m))]


def cycles(graph) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def reaches(graph, start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for d in graph.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def train_imports_of_book(graph) -> list[str]:
    return [f"{m} reaches {d}" for m in sorted(graph) if m.startswith("studylib.train")
            for d in sorted(reaches(graph, m)) if d == "studylib.book" or d.startswith("studylib.book.")]


def test_the_layers_are_classified_as_documented():
    assert layer("studylib.sims.cartpole") == "core" and layer("studylib.settings") == "core"
    assert layer("studylib.envs.cpp_env") == layer("studylib.native.backends") == layer("studylib") == "environment"
    assert layer("studylib.gym_vector") == layer("studylib.adapters.gym_vector") == "environment"
    assert layer("studylib.harness.sweep") == layer("studylib.harness.peers") == "harness"
    assert layer("studylib.book.plans") == layer("studylib.__main__") == "top"
    assert {"studylib.harness.timing", "studylib.book.presets", "studylib.harness.peers"} <= set(MODULES)
    # the parser sees relative, absolute and lazy imports
    assert "studylib.harness.timing" in GRAPH["studylib.harness.measure"]
    assert "studylib.settings" in GRAPH["studylib.harness.peers"]
    assert "studylib.harness.profiler" in GRAPH["studylib.book.plans"]  # imported inside a function


def test_the_checks_can_fail():
    assert upward_imports({"studylib.sims.cartpole": {"studylib.harness.sweep"}})
    assert upward_imports({"studylib.envs.cpp_env": {"studylib.harness.measure"}})
    assert upward_imports({"studylib.devices": {"studylib.envs.registry"}})
    assert upward_imports({"studylib.harness.sweep": {"studylib.book"}})
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert train_imports_of_book({"studylib.train.chapter": {"studylib.cli"}, "studylib.cli": {"studylib.book.presets"}})


def test_train_imports_nothing_from_book():
    assert "studylib.train.params" in GRAPH and "studylib.book.chapters" in GRAPH
    assert train_imports_of_book(GRAPH) == []


def test_no_upward_import():
    assert upward_imports(GRAPH) == []


def test_no_import_cycle():
    assert cycles(GRAPH) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer(m) == "harness"))
def test_harness_imports_neither_book_nor_cli(module):
    assert not {d for d in GRAPH[module] if layer(d) == "top"}


def test_the_root_holds_the_core_only():
    """Packages by role: what sits at studylib/'s root is the core (and the two public aliases);
    a new module belongs in envs/, native/, adapters/, harness/, book/ or train/."""
    root = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert root == CORE | PUBLIC_ALIASES and len(root) + 1 <= 12  # and __main__: at most 12 modules


def test_a_simulator_has_its_own_room():
    """studylib/sims/ holds one module or folder per simulator (its record and array dynamics), in
    the core layer."""
    assert layer("studylib.sims.cartpole") == layer("studylib.sims") == layer("studylib.sims.chain.dynamics") == "core"


@pytest.mark.parametrize("name", sorted(PUBLIC_ALIASES))
def test_the_public_aliases_are_the_adapters_themselves(name):
    import importlib

    assert importlib.import_module(f"studylib.{name}") is importlib.import_module(f"studylib.adapters.{name}")


def test_no_source_file_is_over_450_lines():
    """A module or a native source a maintainer can read through: studylib/'s Python and cuda/'s
    C++/CUDA files hold at most 450 lines each (a longer one is split by job)."""
    sources = [*PACKAGE.rglob("*.py"), *(f for f in (PACKAGE.parent / "cuda").rglob("*") if f.suffix in {".h", ".cu", ".cpp"})]
    assert len(sources) > 100
    long = {str(f.relative_to(PACKAGE.parent)): n for f in sources if (n := len(f.read_text().splitlines())) > 450}
    assert long == {}


def test_no_folder_holds_more_than_twelve_modules():
    """A maintainer finds a module by its folder: no package of studylib/ holds more than 12
    modules (``__init__`` aside); a thirteenth means a new subpackage by role."""
    crowded = {str(d.relative_to(PACKAGE.parent)): n for d in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir())]
               if (n := len([f for f in d.glob("*.py") if f.stem != "__init__"])) > 12}
    assert crowded == {}
