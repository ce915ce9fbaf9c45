"""PPO's settings for CartPole-v1: every hyperparameter in one frozen, documented object.

cleanrl's ``Args`` is the model: one dataclass, a comment per field, derived values marked as
derived. ``PPOSettings`` holds the algorithm and the solve rule, the same for every collector;
``TrainRun`` adds what one training run is (collector, N, seed, time budget). Both are checked
once, where they are made (ConfigError, one line); nothing below them checks a value again.

    s = PPOSettings()                                   # the study's PPO
    run = TrainRun("fused", 4096, seed=0, settings=s)   # ConfigError here if anything is off
    run.batch_size                                      # N * T samples per update (derived)

Why these defaults (chosen after short trials on this project's 2-core machines; the chapter
measures the consequences): on a CPU, learning, not collection, is most of PPO's wall-clock for a
64-64 MLP, and CartPole needs few samples when updates are frequent. So the defaults favour many
small updates: N = 64 environments, a short rollout (T = 16), 2 epochs of 4 minibatches, and a
learning rate 10x cleanrl's (2.5e-3), which CartPole tolerates at these batch sizes. The rest
(gamma, lambda, clipping, value/entropy weights, gradient clipping, advantage normalization,
orthogonal initialization) are cleanrl's and PureJaxRL's CartPole defaults.

The learner's cost, and why the minibatch settings stay (measured on this project's 2-core CPU
with one PyTorch thread while other jobs ran, so +-20%): at N = 64, T = 16 one PPO update takes
about 14 ms, eight minibatch steps of about 1.5 ms, each some hundred PyTorch calls (forward,
loss, backward, clipping, Adam); collecting the trajectory with the fused kernel takes about
0.5 ms. Tried, and kept only where the algorithm stays the same and the time went down:
  * num_minibatches = 2 instead of 4: an update costs 30% less, but the median samples to solve
    rose 40% (6 seeds) and the median time to solve did not fall: not adopted;
  * all parameters as views of one flat tensor (Adam and the clipping one call each instead of
    twelve): what the step saved, the views' backward cost: not adopted;
  * tanh as 2 sigmoid(2x) - 1 (PyTorch's CPU tanh is ~8x slower than numpy's here): an autograd
    Function's overhead cancels the gain: not adopted;
  * the fused Adam (one kernel over all parameters) and one gather per epoch instead of one per
    minibatch (the same minibatches): adopted (studylib/train/cartpole/ppo_torch.py).
The same settings object drives every collector and the JAX PPO, so their comparison holds.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from ..errors import ConfigError
from ..implspec import spec as impl_spec
from ..settings import check_seed, positive_int

# Collectors PPO trains with. "jax" runs the fully jitted JAX PPO (collection and update in one
# XLA program); every other collector feeds the PyTorch PPO. "fused" samples the actions inside
# its kernel (one call per trajectory); "fused-step" is the same kernel stepped once per step with
# the actions sampled in PyTorch, as every other PyTorch collector. "cuda" needs a GPU.
COLLECTORS = ("gym", "cpp", "torch", "torch-compile", "jax", "fused", "fused-step", "cuda")
# Peer trainers timed the same way (studylib/train/peers.py): Stable-Baselines3's PPO with
# rl-zoo's CartPole-v1 settings, and our PyTorch PPO with cleanrl's settings on gymnasium's CartPoleVectorEnv.
PEER_TRAINERS = ("sb3", "gymnasium-vector")
TRAINERS = COLLECTORS + PEER_TRAINERS


@dataclass(frozen=True)
class CollectorSpec:
    """What a collector is, read instead of its name: the implementation it steps, the trainer
    that learns from it, where the actions are sampled. An implementation's collector is derived
    from its record (``studylib.implspec``); the two collectors that are not one implementation
    stepped as it ships have their own records below."""

    name: str
    impl: str  # the studylib implementation whose environments it steps (its ImplSpec)
    trainer: str  # "torch-ppo" (studylib.train.cartpole.ppo_torch) or "jax-ppo" (studylib.train.cartpole.ppo_jax, one XLA program)
    samples_in_kernel: bool  # the kernel samples the actions (one call per trajectory), else PyTorch per step

    @property
    def devices(self) -> tuple[str, ...]:
        return impl_spec(self.impl).devices

    @property
    def gpu_only(self) -> bool:
        return impl_spec(self.impl).gpu_only


_OWN_RECORDS = {
    # the fused kernel stepped once per step, its actions sampled in PyTorch (for the comparison)
    "fused-step": CollectorSpec("fused-step", "fused", "torch-ppo", samples_in_kernel=False),
    # the fully jitted JAX PPO: its environment (studylib.jax_functional) is traced into the program
    "jax": CollectorSpec("jax", "jax", "jax-ppo", samples_in_kernel=False),
}


def collector_spec(name: str) -> CollectorSpec:
    """The record of collector ``name`` (ConfigError for a name that is no collector)."""
    if name in _OWN_RECORDS:
        return _OWN_RECORDS[name]
    if name not in COLLECTORS:
        raise ConfigError(f"unknown collector {name!r}; valid: {', '.join(COLLECTORS)}")
    return CollectorSpec(name, name, "torch-ppo", impl_spec(name).samples_in_kernel)


def _positive_float(name: str, value, *, allow_zero: bool = False, upper: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero) or (upper is not None and value > upper):
        bound = f"in [0, {upper}]" if allow_zero and upper is not None else (
            f"in (0, {upper}]" if upper is not None else ("≥ 0" if allow_zero else "> 0"))
        raise ConfigError(f"{name} must be {bound}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class PPOSettings:
    """Clipped PPO with GAE (Schulman et al. 2017), as cleanrl's ppo.py and PureJaxRL's ppo.py."""

    # ---- data per update ----------------------------------------------------------------------
    num_envs: int = 64  # N, environments per update (the CLI's default; --num-envs overrides)
    num_steps: int = 16  # T, steps of every environment per update (the rollout length)
    # ---- the return estimate ------------------------------------------------------------------
    gamma: float = 0.99  # discount
    gae_lambda: float = 0.95  # GAE's lambda
    # ---- the update ---------------------------------------------------------------------------
    learning_rate: float = 2.5e-3  # Adam, constant (no annealing: a run's length is not known ahead)
    adam_eps: float = 1e-5  # Adam's epsilon (cleanrl, PureJaxRL)
    update_epochs: int = 2  # passes over each batch
    num_minibatches: int = 4  # minibatches per pass; minibatch size = N * T / num_minibatches (derived)
    clip_coef: float = 0.2  # PPO's ratio clipping epsilon
    ent_coef: float = 0.0  # entropy bonus weight
    vf_coef: float = 0.5  # value loss weight
    max_grad_norm: float = 0.5  # global gradient-norm clip
    norm_adv: bool = True  # normalize advantages per minibatch
    # ---- when is it solved --------------------------------------------------------------------
    eval_every_samples: int = 2**13  # greedy check after the update that crosses each multiple of this
    eval_episodes: int = 100  # episodes per greedy check (CartPole-v1's "solved" is over 100)
    solve_return: float = 475.0  # mean greedy return that counts as solved (CartPole-v1's threshold)
    # ---- how it runs --------------------------------------------------------------------------
    torch_threads: int = 1  # PyTorch intra-op threads while training (learner, sampling, torch envs):
    # a 64-wide MLP gains little from a second thread, and OpenMP's spin-waiting makes 2 threads
    # 2-40x slower whenever the cores are shared (measured; another process or our own OpenMP kernels)
    # ---- budget -------------------------------------------------------------------------------
    max_samples: int = 10_000_000  # give up after this many samples (solved: false)
    max_seconds: float = 120.0  # give up after this much training wall-clock (solved: false)

    def __post_init__(self):
        fix = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        for name in ("num_envs", "num_steps", "update_epochs", "num_minibatches", "eval_every_samples",
                     "eval_episodes", "max_samples", "torch_threads"):
            fix(name, positive_int(name, getattr(self, name)))
        fix("gamma", _positive_float("gamma", self.gamma, allow_zero=True, upper=1.0))
        fix("gae_lambda", _positive_float("gae_lambda", self.gae_lambda, allow_zero=True, upper=1.0))
        fix("learning_rate", _positive_float("learning_rate", self.learning_rate))
        fix("adam_eps", _positive_float("adam_eps", self.adam_eps))
        fix("clip_coef", _positive_float("clip_coef", self.clip_coef))
        fix("ent_coef", _positive_float("ent_coef", self.ent_coef, allow_zero=True))
        fix("vf_coef", _positive_float("vf_coef", self.vf_coef, allow_zero=True))
        fix("max_grad_norm", _positive_float("max_grad_norm", self.max_grad_norm))
        fix("solve_return", _positive_float("solve_return", self.solve_return))
        fix("max_seconds", _positive_float("max_seconds", self.max_seconds))
        if not isinstance(self.norm_adv, bool):
            raise ConfigError(f"norm_adv must be True or False, got {self.norm_adv!r}")

    def replace(self, **changes) -> "PPOSettings":
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return asdict(self)

    def key(self) -> tuple:
        """The identity of these settings in a data file (every field but the budget)."""
        return tuple((f.name, getattr(self, f.name)) for f in fields(self) if f.name not in BUDGET_FIELDS)


BUDGET_FIELDS = ("max_seconds", "max_samples")  # how long to try; not part of what is trained


@dataclass(frozen=True)
class TrainRun:
    """One training run: a collector (or peer trainer), N environments, a seed, the settings."""

    collector: str  # one of TRAINERS
    num_envs: int | None = None  # N; None: the settings' (peers: their own default)
    seed: int = 0  # the networks' initialization, the action sampling and the environments
    settings: PPOSettings = field(default_factory=PPOSettings)
    max_seconds: float | None = None  # None: the settings' budget

    def __post_init__(self):
        fix = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        if self.collector not in TRAINERS:
            raise ConfigError(f"unknown collector {self.collector!r}; valid: {', '.join(COLLECTORS)} "
                              f"(peer trainers: {', '.join(PEER_TRAINERS)})")
        if not isinstance(self.settings, PPOSettings):
            raise ConfigError(f"settings must be a PPOSettings, got {type(self.settings).__name__}")
        if self.num_envs is not None:
            fix("num_envs", positive_int("num_envs", self.num_envs))
        fix("seed", check_seed(self.seed))
        if self.max_seconds is not None:
            fix("max_seconds", _positive_float("max_seconds", self.max_seconds))

    @property
    def n(self) -> int:
        """N for the PPO collectors (the settings' when not given)."""
        return self.num_envs if self.num_envs is not None else self.settings.num_envs

    @property
    def batch_size(self) -> int:  # derived: samples per update
        return self.n * self.settings.num_steps

    @property
    def minibatch_size(self) -> int:  # derived: at least one sample per minibatch
        return max(1, self.batch_size // self.settings.num_minibatches)

    @property
    def budget_seconds(self) -> float:
        return self.max_seconds if self.max_seconds is not None else self.settings.max_seconds

    @property
    def is_peer(self) -> bool:
        return self.collector in PEER_TRAINERS


def check_save_path(path) -> Path:
    """Refuse, before training, a --save path that cannot be written (one line, nothing written).
    Here, with the run's other checks, so that the command line checks it before torch is imported."""
    p = Path(path).expanduser()
    if p.suffix != ".npz":
        raise ConfigError(f"--save must name a .npz file, got {str(path)!r}")
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise ConfigError(f"cannot write {str(path)!r}: it is a directory")
    if not parent.is_dir():
        raise ConfigError(f"cannot write {str(path)!r}: folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ConfigError(f"cannot write {str(path)!r}: permission denied")
    return p
