"""The presets: what every chapter measures (or trains) at each size, in one table, and where a
run's data and preset come from. Every chapter's parameters (``book.presets``, ``train.params``)
start from here; ``book.chapters`` lists the chapters.

Presets, chosen with ``preset=`` or the environment variable ``STUDYLIB_PRESET``:
  tiny     seconds per chapter; what the tests build (no conclusion is meaningful at this size)
  default  what ``jupyter-book build book/`` runs: a cold build in a few minutes on 2 CPU cores
  paper    the paper's ranges (N up to 2^26, K up to 10^3, S up to 2^11, C up to 2^10); hours on a CPU,
           and memory-limited points are skipped with the reason
``PRESETS[preset]["_timing"]`` holds the timed repeats of every measured chapter. The data folder is
``data_dir=``, else ``$STUDYLIB_DATA_DIR``, else ``<repo>/data``.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigError
from .params import parse


def _pow2(lo, hi, step=1):
    return [2**k for k in range(lo, hi + 1, step)]


PRESETS: dict[str, dict[str, dict]] = {
    # tiny: the same N and K across the CartPole chapters where they can be (N = 4 and 64, K = 1
    # and 4), so that a compiled program (XLA's, inductor's) of one chapter is the next one's too
    # where the tests share a compilation cache
    "tiny": {
        "_timing": {"repeats": 1, "min_seconds": 0.01},
        # cartpole: Fig 2's Brax line is our CartPole through the Brax harness alone (Brax's own
        # inverted_pendulum compiled in 7.8 s of a 2.5-minute tiny build; tests/test_brax_peer.py runs it)
        "cartpole": {"num_envs": [4, 64], "steps": [4], "brax_envs": [], "brax_num_envs": [4],
                     "brax_steps": 2, "conformance_envs": 32},
        "vectorization": {"num_envs": [1, 64], "steps": [1, 4], "cap": {"gym": 2**5, "*": 2**10}},
        "overheads": {"num_envs": [4, 64], "steps": [1, 4], "cap": {"*": 2**10}, "profile_num_envs": 64,
                      "profile_steps": [1, 4]},
        "fusion": {"num_envs": [4, 64], "steps": [1, 4], "cap": {"*": 2**12}},
        "complexity": {"num_envs": [4, 64], "steps": [1, 4], "state_factor": [1, 4], "compute_factor": [1, 4],
                       "cap": {"*": 2**14}, "memory_steps": [1, 4], "memory_cache_multiple": 1 / 16,
                       "memory_max_bytes": 2**20},
        # beyond: torch-compile over the cap at every point, listed as such (its compile took 16.5 s
        # of a 2.5-minute tiny build; tests/test_torch_compile.py compiles and checks it)
        "beyond": {"num_envs": [4, 64], "steps": [1, 4], "peer_num_envs": [64], "peer_steps": 4,
                   "cap": {"torch-compile": 1, "*": 2**12}, "rollout_steps": 8},
        "atari": {"games": ["pong"], "num_envs": [2], "steps": [1], "async_num_envs": [1],
                  "breakdown_num_envs": [2], "breakdown_seconds": 0.05},
        "model": {"num_envs": [2**10, 2**20], "steps": [1, 1000], "gpu_flops_per_s": None, "gpu_bytes_per_s": None},
        "chain": {"links": [2], "num_envs": [16], "steps": [1, 4], "cap": {"*": 2**6},
                  "engines": ["mujoco-rollout"], "formulations": ["aba"], "formulation_links": [1],
                  "formulation_num_envs": 4, "formulation_steps": 4},
        "engines": {"engines": ["mujoco-python", "mujoco-rollout"], "models": ["inverted_pendulum"], "num_envs": [4],
                    "steps": [1, 2], "compiled_models": [], "cap": {"*": 2**4}, "policies": ["none", "mlp"]},
    },
    "default": {
        # timed regions of 0.05 s: regions of 0.1 s took about 118 s of a 2-core cold build's 237
        # timed rows; the snapshots measured with 0.1 s (or the paper's 0.5 s) still serve, a row
        # timed at least as carefully answering a point (harness.data.store)
        "_timing": {"repeats": 3, "min_seconds": 0.05},
        "cartpole": {"num_envs": _pow2(4, 16, 3), "steps": [100], "brax_envs": ["ant"],
                     "brax_num_envs": [2**10], "brax_steps": 10, "conformance_envs": 1024},
        "vectorization": {"num_envs": _pow2(0, 15, 3), "steps": [1, 100],
                          "cap": {"gym": 2**12, "*": 2**21}},
        "overheads": {"num_envs": _pow2(4, 12, 4), "steps": [1, 10, 100, 1000],
                      "cap": {"torch": 2**20, "*": 2**22}, "profile_num_envs": 2**10,
                      "profile_steps": [1, 10, 100, 1000], "profile_cap": {"torch": 2**17, "*": 2**20}},
        "fusion": {"num_envs": _pow2(6, 18, 4), "steps": [1, 10, 100, 1000],
                   "cap": {"cpp": 2**26, "cuda": 2**30, "jax": 2**24, "torch": 2**20}},
        "complexity": {"num_envs": [2**8, 2**14], "steps": [1, 10, 100, 1000], "state_factor": [1, 64, 1024],
                       "compute_factor": [1, 32, 1024], "cap": {"*": 2**26}, "memory_steps": [1, 1000],
                       "memory_cache_multiple": 8, "memory_max_bytes": 2**30},
        "beyond": {"num_envs": [2**10, 2**13, 2**16], "steps": [1, 100], "peer_num_envs": [2**12, 2**16],
                   "peer_steps": 100, "cap": {"torch": 2**20, "torch-compile": 2**20, "gym": 2**12, "envpool": 2**19,
                                             "*": 2**24}, "rollout_steps": 256},
        # atari: one game (breakout too in paper: its 14 rows took about 12 s of a cold build)
        "atari": {"games": ["pong"], "num_envs": [1, 4], "steps": [1], "async_num_envs": [1, 4],
                  "breakdown_num_envs": [16], "breakdown_seconds": 0.5},
        "model": {"num_envs": [2**10, 2**20], "steps": [1, 1000], "gpu_flops_per_s": None, "gpu_bytes_per_s": None},
        # the chain: three sizes (n = 3, 6, 8 in paper: each n costs about 28 s of a cold build
        # on 2 cores, its sweep, counts and MuJoCo rows: cold builds with n = 6 took 11:02-11:08 here);
        # K = 100 where N·K ≤ the cap (gym's Python loop of MujocoEnv objects at K = 1 only: its K
        # fuses nothing); jax compiles each (n, N, K) apart (n = 4: about 1.3 s each, n = 8: 14 s,
        # in paper); torch-compile compiles a graph per (n, N) (15-30 s each on 2 cores): in paper
        # only (cap 1: every point over it, listed as such)
        # engines: MuJoCo C (mujoco.rollout on every core) on the chain's own MJCF at every n and N at
        # the largest K (in environment steps: frame_skip mj_steps each); MJX (a compile per (n, N, K)) in paper
        "chain": {"links": [1, 2, 4], "num_envs": [2**4, 2**8, 2**12], "steps": [1, 100],
                  "cap": {"gym": 2**8, "torch": 2**12, "torch-compile": 1, "*": 2**15},
                  "engines": ["mujoco-rollout"],
                  # XLA's formulations at the N and K of the chapter's §7 comparison; columns_poly,
                  # aba_flat and n = 1, 3, 6, 8 in paper (each (formulation, n) a compile: 1-11 s at n <= 4)
                  "formulations": ["columns", "aba", "aba_unrolled"], "formulation_links": [2, 4],
                  "formulation_num_envs": 2**8, "formulation_steps": 100},
        # the engines: MJX compiles each (model, N, K) apart (inverted_pendulum: 5-10 s each, 25-28 s
        # on a 2-core AVX2 Zen 3; hopper about 45 s; humanoid: no result within 8 minutes), so it runs
        # on the pendulum at one N here, without the MLP (K = 1 and 10: its F.3; the MLP in paper);
        # walker2d (contacts, like hopper) in paper only: the cold build is within 2% of 10 minutes; N up
        # to 2^10: envpool builds its N environments anew for every row (6-8 s each at N = 4096),
        # and, its state hidden, steps them past the initial transient itself (humanoid at N = 2^7:
        # about 4 s a row, 2^10: 30 s), so it runs at N = 2^4 only here (its six rows at N = 2^7
        # took about 12 s of a cold build)
        "engines": {"engines": ["mujoco-python", "mujoco-rollout", "mjx", "envpool"],
                    "models": ["inverted_pendulum", "chain2", "hopper", "humanoid"],
                    "num_envs": [2**4, 2**7, 2**10], "steps": [1, 10], "compiled_models": ["inverted_pendulum"],
                    "compiled_num_envs": [2**7], "compiled_policies": ["none"], "cap": {"envpool": 2**4, "*": 2**14}, "policies": ["none", "mlp"]},
    },
    "paper": {
        "_timing": {"repeats": 5, "min_seconds": 0.5},
        "cartpole": {"num_envs": _pow2(4, 22, 2), "steps": [1000],
                     "brax_envs": ["ant", "humanoid", "halfcheetah", "hopper", "walker2d", "inverted_pendulum"],
                     "brax_num_envs": _pow2(4, 14, 2), "brax_steps": 100, "conformance_envs": 65536},
        "vectorization": {"num_envs": _pow2(0, 26, 2), "steps": [1, 1000], "cap": {"gym": 2**22, "*": 2**34}},
        "overheads": {"num_envs": _pow2(0, 20, 2), "steps": [1, 10, 100, 1000], "cap": {"*": 2**34},
                      "profile_num_envs": 2**16, "profile_steps": [1, 10, 100, 1000], "profile_cap": {"*": 2**30}},
        "fusion": {"num_envs": _pow2(0, 26, 2), "steps": [1, 10, 100, 1000], "cap": {"*": 2**36}},
        "complexity": {"num_envs": _pow2(10, 20, 5), "steps": [1, 10, 100, 1000],
                       "state_factor": _pow2(0, 10, 2) + [2**11], "compute_factor": _pow2(0, 10, 2), "cap": {"*": 2**38},
                       "memory_steps": [1, 10, 100, 1000], "memory_cache_multiple": 8},
        "beyond": {"num_envs": _pow2(10, 20, 2), "steps": [1, 1000], "peer_num_envs": _pow2(10, 20, 2),
                   "peer_steps": 1000, "cap": {"envpool": 2**26, "gym": 2**22, "*": 2**34}, "rollout_steps": 1000},
        "atari": {"games": ["breakout", "pong"], "num_envs": _pow2(0, 8, 1), "steps": [1],
                  "async_num_envs": _pow2(0, 5, 1), "breakdown_num_envs": [1, 16, 64, 256], "breakdown_seconds": 2.0},
        "model": {"num_envs": [2**10, 2**16, 2**20, 2**26], "steps": [1, 1000], "gpu_flops_per_s": None,
                  "gpu_bytes_per_s": None},
        "chain": {"links": [1, 2, 3, 4, 6, 8], "num_envs": _pow2(4, 16, 4), "steps": [1, 100, 1000], "policies": ["none", "mlp"],
                  "cap": {"gym": 2**10, "torch": 2**16, "*": 2**22},
                  "engines": ["mujoco-rollout", "mjx", "mjx-unfused"],
                  "formulations": ["columns", "columns_poly", "aba", "aba_unrolled", "aba_flat", "aba_u2", "aba_u4"],
                  "formulation_links": [1, 2, 3, 4, 6, 8], "formulation_num_envs": 2**12, "formulation_steps": 100},
        "engines": {"engines": ["mujoco-python", "mujoco-rollout", "mjx", "envpool", "gymnasium-async"],
                    "models": ["inverted_pendulum", "inverted_double_pendulum", "chain2", "chain8", "hopper", "walker2d",
                               "humanoid"],
                    "num_envs": _pow2(4, 12, 4), "steps": [1, 10, 100],
                    "compiled_models": ["inverted_pendulum", "chain2", "chain8", "hopper", "walker2d"],
                    "cap": {"gymnasium-async": 2**6, "*": 2**20}, "policies": ["none", "mlp"]},
    },
}

# The training chapter (book/training.md, ``train.params.TrainingParams``). Two measures, kept
# apart: wall-clock to solve from single-seed runs (``seeds``, one at a time, every collector and
# peer); samples and updates to solve, and the solve rate, from populations (``population_seeds``
# of each ``population_collectors`` in one program: the JAX PPO vmapped, the PyTorch PPO batched).
_TRAINING = {
    # tiny: no jax (its compilation alone takes longer than the rest of the preset)
    "tiny": {"collectors": ["cpp", "fused", "fused-step", "torch"], "peers": ["sb3", "gymnasium-vector"], "seeds": [0],
             "num_envs": 16, "budget_s": 0.5, "population_collectors": ["torch"], "population_seeds": [0, 1],
             "population_budget_s": 0.5, "sweep_num_envs": [8, 64], "sweep_seeds": [], "sweep_budget_s": 0.5},
    # default: what fits the book's build on 2 cores (a cold build of the whole book measured 10 min
    # 19 s with torch and gymnasium-vector single runs too, so they run in paper only). 8 single
    # runs per trainer: gym and fused (the slowest and the fastest collector feeding the same
    # PyTorch PPO), jax and the SB3 peer (cpp, torch, torch-compile, fused-step, cuda and the
    # gymnasium-vector peer in paper); populations of 16 seeds of the JAX PPO and of the PyTorch PPO
    # (on torch); the N sweep from JAX populations of 5 seeds per N (N = the population's N reuses
    # its seeds; N = 512 and larger only in paper). One budget for every trainer and population,
    # peers included. num_envs None: PPOSettings' N.
    "default": {"collectors": ["gym", "fused", "jax"], "peers": ["sb3"],
                "seeds": list(range(8)), "num_envs": None, "budget_s": 15.0,
                "population_collectors": ["jax", "torch"], "population_seeds": list(range(16)), "population_budget_s": 15.0,
                "sweep_num_envs": [8, 64], "sweep_seeds": list(range(5)), "sweep_budget_s": 15.0},
    # paper: every collector and peer (train.settings.COLLECTORS, PEER_TRAINERS; a test keeps them equal)
    "paper": {"collectors": ["gym", "cpp", "torch", "torch-compile", "jax", "fused", "fused-step", "cuda"],
              "peers": ["sb3", "gymnasium-vector"], "seeds": list(range(32)), "num_envs": None, "budget_s": 120.0,
              "population_collectors": ["jax", "torch", "torch-compile", "gym"], "population_seeds": list(range(64)),
              "population_budget_s": 600.0,
              "sweep_num_envs": [2**k for k in range(3, 15)], "sweep_seeds": list(range(16)), "sweep_budget_s": 600.0},
}
for _name, _values in _TRAINING.items():
    PRESETS[_name]["training"] = _values

# The robot chapter (book/robot.md, ``train.chain.params.RobotParams``): PPO on the n-link chain
# (n = 2: InvertedDoublePendulum-v5's model), one single-seed run after another. ``seeds``: seeds
# per collector (``"*"``: every other one), seeds 0, 1, ... of each; ``budget_s``: per run.
_ROBOT = {
    # tiny: seconds; two PyTorch-PPO collectors (the JAX PPO's compilation alone took 4-9 s on 2
    # cores: its tests train it); a budget in which no run solves, so gymnasium's judge (about
    # 10 s per solve) never runs
    "tiny": {"collectors": ["fused", "cpp"], "links": [1], "seeds": {"*": 1}, "budget_s": 0.1},
    # default: n = 1 (InvertedPendulum-v5's model: the shortest chain, the cheapest judge), one seed each of
    # the fully jitted PPO and the PyTorch PPO on the fastest collector (fused); the MuJoCo (gym)
    # collector, n = 2 and 3 and 16 seeds in paper, whose saved study the page shows. At n = 2 this
    # page took 47-50 s of a cold build on a 2-core Zen 4 and 177 s on a 2-core AVX2 Zen 3 (the
    # PyTorch update's 59 s and gymnasium's judge with the transfer check, 300 MuJoCo episodes per
    # solved run, 43 s a run, untimed); n = 1 solves sooner and has no transfer check. The paper's
    # budget: a run stops when solved (every n = 1 seed of both within 21 s on the Zen 4), and its
    # two runs are then the paper study's seed 0, which a committed snapshot already holds
    "default": {"collectors": ["jax", "fused"], "links": [1], "seeds": {"*": 1}, "budget_s": 600.0},
    # paper: every trainer (train.chain.settings.CHAIN_TRAINERS: the collectors and the peers, a
    # peer only at the n it has a task for),
    # n = 2 first (the published task), then 1 and 3; 16 seeds each. The default page shows the
    # rows of this plan the machine's file holds (chapter.study), trained with this preset only.
    "paper": {"collectors": ["jax", "sb3", "sb3-defaults", "fused", "fused-step", "gym", "cpp", "torch", "torch-compile", "brax"],
              "links": [2, 1, 3],
              "seeds": {"*": 16}, "budget_s": 600.0},
}
for _name, _values in _ROBOT.items():
    PRESETS[_name]["robot"] = _values
PRESET_NAMES = tuple(PRESETS)


def preset_values(preset: str, chapter: str) -> dict:
    """A copy of ``chapter``'s values at ``preset`` (ConfigError for a chapter the table lacks)."""
    if chapter.startswith("_") or chapter not in PRESETS[preset]:
        raise ConfigError(f"no preset values for chapter {chapter!r}")
    return dict(PRESETS[preset][chapter])


def resolve_preset(preset=None) -> str:
    """``preset``, else ``$STUDYLIB_PRESET``, else "default"; ConfigError for an unknown one."""
    preset = preset or os.environ.get("STUDYLIB_PRESET") or "default"
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; valid: {', '.join(PRESETS)}")
    return preset


def repo_root() -> Path:
    """The folder holding ``_config.yml`` (searched upwards from the working directory)."""
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "_config.yml").exists() and (d / "studylib").is_dir():
            return d
    return Path(__file__).resolve().parents[2]


def resolve_data_dir(data_dir=None) -> Path:
    """``data_dir``, else ``$STUDYLIB_DATA_DIR``, else ``<repo>/data``, as an absolute path."""
    data_dir = parse("data_dir", Path | None, data_dir)
    if data_dir:
        return Path(data_dir).expanduser().resolve()
    env = os.environ.get("STUDYLIB_DATA_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return repo_root() / "data"


def display_path(p: Path) -> str:
    """``p`` relative to the repository where it lies inside it."""
    try:
        return str(Path(p).resolve().relative_to(repo_root()))
    except ValueError:
        return str(p)
