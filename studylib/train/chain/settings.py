"""PPO's settings for the n-link chain (continuous actions): one frozen, documented object.

The defaults are cleanrl's ppo_continuous_action.py (its ``Args``, the MuJoCo defaults), with
one batch of 2048 samples per update made of N = 8 environments x T = 256 steps instead of one
environment x 2048 steps (every collector is vectorized); 10 epochs of 32 minibatches (64
samples each), Adam at 3e-4, GAE(0.99, 0.95), clipped objective and clipped value loss, no
entropy bonus, observation normalization and reward scaling (``running_norm``), actions clipped
to [-1, 1]. Differences from cleanrl, each for a reason:

* no learning-rate annealing: cleanrl anneals linearly to 0 over a fixed total number of steps;
  a run here stops when it is solved, so its length is not known ahead (as the CartPole PPO);
* truncated episodes (v5's 1000 steps) are bootstrapped from the pre-reset observation, which
  every implementation gives; cleanrl treats a truncation as a termination.

``ChainRun`` is one training run (collector, seed, settings, budget). Both are checked once,
where they are made (ConfigError, one line).

    s = ChainPPOSettings(links=1)
    run = ChainRun("jax", seed=0, settings=s)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from ...errors import ConfigError
from ...settings import check_seed, positive_int
from ...sims.chain import ChainParams
from ..settings import _positive_float

# What trains the chain: "jax" is the fully jitted JAX PPO (collection with the chain's pure
# functions, studylib.adapters.jax_chain, and the update in one XLA program); the others feed the
# PyTorch PPO (studylib.train.chain.ppo_torch): "fused" collects a whole trajectory per kernel call,
# its actions sampled inside the kernel; "fused-step" is the same kernel stepped once per step and
# the rest are studylib implementations stepped so (studylib.make(..., sim="chain")), their actions
# sampled in PyTorch. Each collector's record is studylib.train.collector_spec's.
CHAIN_COLLECTORS = ("jax", "fused", "fused-step", "cpp", "torch", "torch-compile", "gym")


@dataclass(frozen=True)
class ChainPeer:
    """An outside learner on its own task (``peers``): where its trainer is, which n it trains."""

    module: str  # in studylib.train.chain, holding ``train(run, *, log, progress)``
    links: tuple[int, ...] | None = None  # the n it has a task for (None: every n)
    options: tuple = ()  # (name, value) pairs its ``train`` takes as keywords


# Outside learners, timed by the same clock: Stable-Baselines3's PPO on gymnasium's own tasks
# (judged by the chapter's rule), Brax's PPO on Brax's own pendulums (judged by Brax's evaluation).
CHAIN_PEERS = {"sb3": ChainPeer("peers.sb3", options=(("settings", "rl-zoo"),)),
               "sb3-defaults": ChainPeer("peers.sb3", options=(("settings", "defaults"),)),
               "brax": ChainPeer("peers.brax", (1, 2))}
CHAIN_TRAINERS = CHAIN_COLLECTORS + tuple(CHAIN_PEERS)


def trains(collector: str, links: int) -> bool:
    """Whether ``collector`` (a trainer of CHAIN_TRAINERS) has a task at n = ``links``."""
    peer = CHAIN_PEERS.get(collector)
    return peer is None or peer.links is None or links in peer.links

# gymnasium's InvertedDoublePendulum-v5 registration: reward_threshold=9100. The chain keeps v5's
# reward at every n (an alive bonus of 10, less 0.64 upright: at most about 9,360 in 1000 steps),
# so the same threshold means "balanced for (nearly) the whole episode" at every n, as
# InvertedPendulum-v5's 950 of at most 1000 does for its own reward of 1 per step.
CHAIN_SOLVE_RETURN = 9100.0


@dataclass(frozen=True)
class ChainPPOSettings:
    """Clipped PPO with GAE for a Gaussian policy, as cleanrl's ppo_continuous_action.py."""

    # ---- the task -----------------------------------------------------------------------------
    links: int = 2  # n, the chain's links (1: one pendulum, 2: InvertedDoublePendulum-v5)
    # ---- data per update ----------------------------------------------------------------------
    num_envs: int = 8  # N environments
    num_steps: int = 256  # T steps of each per update: N * T = 2048, cleanrl's batch
    # ---- the return estimate ------------------------------------------------------------------
    gamma: float = 0.99
    gae_lambda: float = 0.95
    # ---- the update ---------------------------------------------------------------------------
    learning_rate: float = 3e-4  # Adam, constant (see above)
    adam_eps: float = 1e-5
    update_epochs: int = 10
    num_minibatches: int = 32  # minibatch size = N * T / num_minibatches (derived)
    clip_coef: float = 0.2
    clip_vloss: bool = True  # cleanrl's clipped value loss
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    init_log_std: float = 0.0  # the learned log-std's start (cleanrl: zeros, sigma = 1)
    # ---- normalization (gymnasium's wrappers in cleanrl, kept by the trainer here) -------------
    norm_obs: bool = True
    obs_clip: float = 10.0
    norm_reward: bool = True
    reward_clip: float = 10.0
    # ---- when is it solved --------------------------------------------------------------------
    eval_every_samples: int = 2**14  # a deterministic screen after the update crossing each multiple
    eval_episodes: int = 16  # episodes of the in-training screen (the judge then plays 2 x 100)
    solve_return: float = CHAIN_SOLVE_RETURN
    # ---- how it runs --------------------------------------------------------------------------
    torch_threads: int = 1
    # ---- budget -------------------------------------------------------------------------------
    max_samples: int = 3_000_000
    max_seconds: float = 300.0

    def __post_init__(self):
        fix = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        ChainParams(links=self.links)  # ConfigError for links outside 1..32
        for name in ("num_envs", "num_steps", "update_epochs", "num_minibatches", "eval_every_samples",
                     "eval_episodes", "max_samples", "torch_threads"):
            fix(name, positive_int(name, getattr(self, name)))
        for name, upper in (("gamma", 1.0), ("gae_lambda", 1.0)):
            fix(name, _positive_float(name, getattr(self, name), allow_zero=True, upper=upper))
        for name in ("learning_rate", "adam_eps", "clip_coef", "max_grad_norm", "obs_clip", "reward_clip",
                     "solve_return", "max_seconds"):
            fix(name, _positive_float(name, getattr(self, name)))
        for name in ("ent_coef", "vf_coef"):
            fix(name, _positive_float(name, getattr(self, name), allow_zero=True))
        if isinstance(self.init_log_std, bool) or not isinstance(self.init_log_std, (int, float)) \
                or not math.isfinite(self.init_log_std):
            raise ConfigError(f"init_log_std must be a finite number, got {self.init_log_std!r}")
        fix("init_log_std", float(self.init_log_std))
        for name in ("clip_vloss", "norm_adv", "norm_obs", "norm_reward"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.num_envs * self.num_steps < self.num_minibatches:
            raise ConfigError(f"a batch of N * T = {self.num_envs * self.num_steps} samples cannot make "
                              f"{self.num_minibatches} minibatches")

    @property
    def chain(self) -> ChainParams:
        return ChainParams(links=self.links)

    @property
    def batch_size(self) -> int:  # derived: samples per update
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:  # derived
        return self.batch_size // self.num_minibatches

    def replace(self, **changes) -> "ChainPPOSettings":
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ChainRun:
    """One training run on the chain: a collector, a seed, the settings, the time budget."""

    collector: str  # one of CHAIN_TRAINERS
    seed: int = 0
    settings: ChainPPOSettings = field(default_factory=ChainPPOSettings)
    max_seconds: float | None = None  # None: the settings'

    def __post_init__(self):
        if self.collector not in CHAIN_TRAINERS:
            raise ConfigError(f"the chain trains with the collectors {', '.join(CHAIN_TRAINERS)}; "
                              f"got {self.collector!r}")
        if not isinstance(self.settings, ChainPPOSettings):
            raise ConfigError(f"settings must be a ChainPPOSettings, got {type(self.settings).__name__}")
        object.__setattr__(self, "seed", check_seed(self.seed))
        if self.max_seconds is not None:
            object.__setattr__(self, "max_seconds", _positive_float("max_seconds", self.max_seconds))

    @property
    def n(self) -> int:
        return self.settings.num_envs

    @property
    def budget_seconds(self) -> float:
        return self.max_seconds if self.max_seconds is not None else self.settings.max_seconds
