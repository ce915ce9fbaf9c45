"""``fused``: policy inference and simulation in ONE kernel (the paper's section 7, future work).

One call runs K steps of every environment, each step the MLP 4 -> 64 -> 64 -> 2 on the
observation, the greedy action, the CartPole step (C sub-steps; the carried floats of S once per call), termination,
truncation and the same-step reset, with the state kept in registers / L1 throughout. There is
no framework call per step and no activation, action or observation written to memory between
steps: where ``cpp`` and ``cuda`` pay one simulation call plus one framework inference per step
with the MLP, ``fused`` pays one call per rollout.

The same source runs on both devices: ``cuda/mlp.cuh`` (the forward pass, a template over the
lane type) and ``cuda/cartpole.cuh`` (the physics), compiled into ``cuda/fused_cpu.cpp`` (SIMD
lanes = environments, OpenMP threads over blocks of them; built by studylib/native/build.py) and into
``cuda/fused_kernel.cu`` (one thread per environment, launched through CuPy). Resets draw from
the counter hash, so a fused env and a ``cpp`` env with the same seed start from the same state,
and ``policy="none"`` takes the same hashed actions as ``cpp``/``cuda``. The calls go through
``self.backend`` (studylib.native.backends, kernel pair "fused", CPU library or CUDA module by device);
stepping, restarts and the arrays handed out (numpy copies, or zero-copy torch views with
``arrays="native"``) are studylib/envs/backend_env.py's.

``collect(T)`` is the same kernel with the MLP as a *stochastic* policy: each step's action is
sampled inside the kernel from the softmax of the logits, and the whole trajectory (observations,
actions, log-probabilities, flags, pre-reset observations) is written by one call. It is how
PPO collects with ``fused`` (studylib.train.cartpole.collectors.FusedCollector).
"""

from __future__ import annotations

import torch

from .. import native
from ..native.backends import make_backend
from ..policy import MLPWeights
from ..settings import positive_int
from . import footprint
from .backend_env import BackendCartPole, NativeChainEnv

_POLICY_CODES = {"mlp": native.POLICY_MLP, "none": native.POLICY_HASH}


class FusedCartPole(BackendCartPole):
    name = "fused"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.fused_cartpole(num_envs, state_factor, params)

    def __init__(self, settings):
        super().__init__(settings)
        self._init_backend(make_backend(self.device, "fused", self.num_envs, self.state_factor,
                                        self.compute_factor, self.params, self.policy_weights))
        self._reset()

    def _rollout(self, num_steps, policy):
        return self.backend.rollout(None, num_steps, _POLICY_CODES[policy], self.seed)  # K steps, ONE call

    def set_policy_weights(self, weights: MLPWeights) -> None:
        """Replace the MLP the kernel runs (no rebuild: the weights are an argument)."""
        self.backend.set_weights(weights)
        self.policy_weights = weights

    def collect(self, num_steps: int):
        """T steps of every environment in ONE kernel call with the MLP as a stochastic policy
        (each action sampled from the softmax of its logits, inside the kernel): the trajectory as
        a ``studylib.native.backends.CollectedSteps`` (obs, actions, log-probabilities, flags and
        pre-reset observations of every step). The draws are keyed by (seed, env, episode, step in
        episode), so a seed gives one trajectory however its steps are split into calls.
        Weights: ``set_policy_weights``, no rebuild. Afterwards the env continues from the last
        step (``step``/``rollout`` go on from there; ``final_obs()`` needs a ``step`` first)."""
        return self.backend.collect(num_steps, self.seed)

    def mlp_logits(self, obs):
        """The kernel's own forward pass on observations (n, 4) -> logits (n, 2) (for tests)."""
        return self.backend.mlp_logits(obs)


class FusedChain(NativeChainEnv):
    """``fused`` for the n-link chain: simulation, v5's episode step and the Gaussian MLP policy in
    ONE kernel, K steps per call (cuda/chain.cuh with cuda/mlp.cuh; ``NativeChainEnv``): the C
    build on the CPU, cuda/chain_kernel.cu's MLP kernels through CuPy on a GPU (the device as its
    record resolves it: the GPU where one works, unless the CPU is asked for).

    ``collect(T)`` is the same kernel writing every step down (observations, the unclipped samples,
    their log-probabilities, rewards, flags, pre-reset observations): how PPO collects with
    ``fused`` (studylib.train.chain.collectors.ChainKernelCollector)."""

    name = "fused"

    def set_policy(self, weights, log_std: float) -> None:
        """The Gaussian policy the kernel runs: its MLP (``weights.layers()`` of sizes (3n+3, 64,
        64, 1)) and log σ. The weights are an argument of the call: nothing is rebuilt."""
        self.backend.set_weights(weights, log_std)
        self.policy_weights, self.log_std = weights, float(log_std)
        self._layers = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in weights.layers()]

    def collect(self, num_steps: int, normalization=None):
        """T steps of every environment in ONE kernel call under the Gaussian policy, every step
        recorded: a ``studylib.sims.chain.backend.ChainTrajectory`` of numpy arrays. The policy sees
        ``normalization`` = (shift, scale, clip) applied to each observation (fixed for the call),
        or the raw observation. The noise is keyed by (seed, env, episode, step in episode), so a
        seed gives one trajectory however its steps are split into calls. Afterwards the env goes
        on from the last step (``final_obs()`` needs a ``step`` first)."""
        self._stepped = False
        traj, _ = self.backend.collect(positive_int("num_steps", num_steps), self.seed, normalization)
        return traj

    def observe(self):
        """The observations (N, 3n+3) of the current states: where the next ``collect`` starts."""
        return self._out(self.backend.obs())
