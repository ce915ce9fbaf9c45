"""The library's reference page, "Using studylib" (book/using.md), and the README's library
snippet, as a reader uses them: every ```python block runs in a fresh namespace (at small sizes:
``SMALL`` rewrites the numbers of environments and steps, and nothing else), the one fragment of
another program (cleanrl's logging block) inside that program's state, and every command shown
(``python -m studylib ...``, ``python -m studylib.book rerun ...``, ``pip install ".[extra]"``,
``python benchmarks/...``, ``pytest tests/...``) is checked against what it names: the command
line's own parsers and checks, the extras of pyproject.toml, the files of the repository.

The page is plain Markdown (nothing executes it in the build), so this file is what keeps it true.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
USING = ROOT / "book" / "using.md"
README = ROOT / "README.md"

# Small sizes for the snippets: (pattern, replacement), applied to every block.
SMALL = [
    (r"\b4096\b", "64"),  # environments
    (r"\b1024\b", "32"),
    (r"rollout\(1000\b", "rollout(10"),  # steps per call
    (r"rollout\(100\b", "rollout(10"),
    (r"\.learn\(10_000\)", ".learn(64)"),  # Stable-Baselines3: one rollout of its 2048 steps, one update
    # many seeds of the JAX PPO: two seeds of a few updates each (TINY_PPO below)
    (r'TrainRun\("jax", 64, seed=k\) for k in range\(32\)', 'TrainRun("jax", 8, seed=k, settings=TINY_PPO) for k in range(2)'),
]
FORBIDDEN = re.compile(r"\b(goals?|issues?|targets?)\b", re.I)  # as test_book's check of the built pages


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def small(code: str) -> str:
    for pattern, replacement in SMALL:
        code = re.sub(pattern, replacement, code)
    return code


def _cleanrl_state() -> dict:
    """What cleanrl's ppo.py has around its logging block after a step: ``infos`` of its
    ``SyncVectorEnv`` of ``RecordEpisodeStatistics`` envs (made from the module-qualified id, as
    ``--env-id studylib.gym_vector:studylib/CartPole-v1``) at a step where an episode ended, a writer."""
    import gymnasium

    def make():
        return gymnasium.wrappers.RecordEpisodeStatistics(gymnasium.make("studylib.gym_vector:studylib/CartPole-v1", impl="cpp"))

    envs = gymnasium.vector.SyncVectorEnv([make for _ in range(4)])
    envs.reset(seed=1)
    envs.action_space.seed(1)
    for global_step in range(1, 1000):
        infos = envs.step(envs.action_space.sample())[-1]
        if "episode" in infos:
            break
    envs.close()

    class Writer:
        def __init__(self):
            self.scalars = []

        def add_scalar(self, tag, value, step):
            self.scalars.append((tag, float(value), step))

    return {"np": np, "infos": infos, "global_step": global_step, "writer": Writer()}


FRAGMENTS = {"writer.add_scalar": _cleanrl_state}  # a block holding this runs in that program's state


def _namespace(code: str) -> dict:
    for marker, state in FRAGMENTS.items():
        if marker in code:
            return state()
    from studylib.train import PPOSettings

    return {"TINY_PPO": PPOSettings(num_envs=8, num_steps=8, num_minibatches=2, update_epochs=1, max_samples=256,
                                    eval_every_samples=128, eval_episodes=2)} if "TINY_PPO" in code else {}


USING_BLOCKS = python_blocks(USING.read_text())


def test_the_page_and_the_readme_have_snippets():
    assert len(USING_BLOCKS) >= 10
    (readme,) = python_blocks(README.read_text())  # the README's library in a dozen lines
    assert len(readme.splitlines()) <= 12
    # every size rule still finds its number on the page (a rewritten snippet would escape it)
    text = USING.read_text() + README.read_text()
    assert all(re.search(pattern, text) for pattern, _ in SMALL), [p for p, _ in SMALL if not re.search(p, text)]


@pytest.mark.parametrize("i", range(len(USING_BLOCKS)))
def test_each_python_snippet_runs_by_itself(i, tmp_path, monkeypatch):
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3's learn makes a log folder even at verbose 0
    code = small(USING_BLOCKS[i])
    namespace = _namespace(code)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"book/using.md (python block {i + 1})", "exec"), namespace)
    if "writer" in namespace:  # cleanrl's block: an episode's return printed and logged
        assert "episodic_return=" in out.getvalue()
        assert {tag for tag, _, _ in namespace["writer"].scalars} == {"charts/episodic_return", "charts/episodic_length"}
    if "results" in namespace:  # train_population: one result per seed
        assert len(namespace["results"]) == 2


def test_the_readmes_library_snippet_runs_by_itself():
    (code,) = python_blocks(README.read_text())
    namespace = {}
    exec(compile(small(code), "README.md (the library)", "exec"), namespace)
    assert namespace["obs"].shape == (64, 4) and namespace["envs"].num_envs == 64


def test_the_page_shows_no_internal_words():
    """The built page is checked for these in test_book (a full build); the source is checked here."""
    assert not FORBIDDEN.findall(USING.read_text())
    assert not FORBIDDEN.findall(README.read_text())


# ---- the commands -----------------------------------------------------------------------------


def shell_commands(text: str) -> list[str]:
    """Every command line of the ```bash blocks (continuations joined) and of inline code spans."""
    lines = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        lines += block.replace("\\\n", " ").splitlines()
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    spans = (" ".join(s.split()) for s in re.findall(r"`([^`\n]+(?:\n[^`\n]+)?)`", prose))
    lines += [s for s in spans if re.match(r"([A-Z_]+=\S+ )*(python3?|pip|pytest) ", s)]
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


def _words(command: str) -> list[str]:
    return shlex.split(command, comments=True)


def _after(words: list[str], *head: str) -> list[list[str]]:
    """The arguments after each occurrence of ``head`` in a command line (``&&`` ends one)."""
    found, n = [], len(head)
    for k in range(len(words) - n + 1):
        if tuple(words[k:k + n]) == head:
            rest = words[k + n:]
            found.append(rest[:rest.index("&&")] if "&&" in rest else rest)
    return found


def check_studylib_command(args: list[str]) -> None:
    """``python -m studylib ARGS``: parsed by the command line's own parser, and the options that
    name points, chapters or presets checked as the command checks them before it measures."""
    from studylib.__main__ import MEASURED_CHAPTERS, build_parser
    from studylib.cli.options import points_of
    from studylib.harness.presets import PRESETS

    if not args:  # the bare command: its usage
        return
    if "--help" in args:
        from studylib.__main__ import main

        with contextlib.redirect_stdout(io.StringIO()):
            assert main(args) == 0
        return
    if args[0] == "train":
        from studylib.train import cli

        cli._preflight(cli._parser().parse_args(args[1:]))
        return
    if args[0] == "data":
        assert args[1:] == ["check"], args
        return
    parsed = build_parser().parse_args(args)
    if parsed.command in ("bench", "sweep", "profile"):
        assert points_of(parsed)
    if parsed.command == "measure":
        assert parsed.chapters == "all" or set(parsed.chapters.split(",")) <= set(MEASURED_CHAPTERS), parsed.chapters
        assert parsed.preset is None or parsed.preset in PRESETS, parsed.preset


def check_rerun_command(args: list[str]) -> None:
    """``python -m studylib.book rerun ...``: its parser, and the parameters checked by the
    chapter's own types (what the command does before it runs anything)."""
    from studylib.book import rerun

    a = rerun.build_parser().parse_args(args)
    if not a.reset:
        parameters = {k: rerun._literal(v) for k, v in a.parameter}
        if parameters.get("machine", "").startswith("<"):  # a placeholder: a machine key of data/ stands in
            parameters["machine"] = sorted(p.parent.name for p in (ROOT / "data").glob("*/machine.json"))[0]
        rerun.check_parameters(a.chapter, parameters)


COMMANDS = sorted(set(shell_commands(USING.read_text()) + shell_commands(README.read_text())))


def test_the_commands_are_found():
    joined = "\n".join(COMMANDS)
    for needle in ("python -m studylib bench", "python -m studylib measure", "python -m studylib.book rerun",
                   "python -m studylib train", "python -m studylib advise", "pip install \".[clients]\"",
                   "python -m studylib bench --impl fused,cpp,jax --sim chain --links 1,4"):
        assert needle in joined, needle


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_names_what_exists(command):
    words = _words(command)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for args in _after(words, "python", "-m", "studylib"):
        check_studylib_command(args)
    for args in _after(words, "python", "-m", "studylib.book"):
        check_rerun_command(args)
    for args in _after(words, "pip", "install"):
        for spec in args:
            m = re.fullmatch(r"\.\[(\w+)\]", spec)
            if m:
                assert m.group(1) in extras, spec
    for word in words:
        if re.fullmatch(r"(benchmarks|tests|cuda|book|studylib)/[\w/.-]+\.(py|cu|cuh|cpp|md|sh)", word):
            assert (ROOT / word).is_file(), word


def test_a_bench_command_runs_at_a_tiny_size(capsys):
    """The page's first ``bench`` line, run in-process at N = 64, K = 10, one short region."""
    from studylib.__main__ import main

    (line,) = [c for c in COMMANDS if c.startswith("python -m studylib bench --impl cpp,jax")]
    args = _words(line)[3:]
    args[args.index("--num-envs") + 1] = "64"
    args[args.index("--steps") + 1] = "10"
    args[args.index("--impl") + 1] = "cpp"
    assert main([*args, "--repeats", "1", "--min-seconds", "0.01"]) == 0
    assert "cpp" in capsys.readouterr().out
