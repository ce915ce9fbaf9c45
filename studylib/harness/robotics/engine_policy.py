"""The study's MLP policy on a robotics engine's batch, and the one loop that runs it between calls.

The paper, §2 (Figure 1(b)): "data collection is a simulation/inference loop, whereby the state of
the simulator is fed into the model learned so far to determine which action to take." Our
CartPole's policy (studylib.policy: 4 -> 64 -> 64 -> 2, tanh, weights from a seed) becomes, on a
MuJoCo model, obs -> 64 -> 64 -> nu with the same initialization, its outputs squashed by tanh
into each actuator's control range (a continuous action, as a MuJoCo task's). ``obs`` is what the
engine observes: MuJoCo's (qpos, qvel) for the engines that hold the state, envpool's own
gymnasium-v5 observation for envpool (its width is in the row).

Where the policy runs is the engine record's ``policy_in_call``: MJX traces it into its scan (K
steps and K inferences per call); every other engine runs it on the host between calls
(``closed_loop``: K calls of one step each), so with a policy those engines run at K = 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...policy import LAYER_SIZES, mlp_logits, mlp_weights

HIDDEN = LAYER_SIZES[1:-1]  # CartPole's hidden layers, kept


@dataclass(frozen=True)
class EnginePolicy:
    """The MLP for ``obs_width`` observations and the model's actuators (float32, greedy)."""

    weights: tuple  # ((w, b), ...) float32, x @ w + b
    low: np.ndarray  # (nu,) each actuator's control range
    high: np.ndarray

    @classmethod
    def for_model(cls, m, obs_width: int, seed: int = 0) -> "EnginePolicy":
        w = mlp_weights(seed, (obs_width, *HIDDEN, m.nu))
        rng = np.asarray(m.actuator_ctrlrange, np.float32).reshape(m.nu, 2)
        limited = np.asarray(m.actuator_ctrllimited, bool).reshape(m.nu)
        low = np.where(limited, rng[:, 0], -1.0).astype(np.float32)  # an unlimited actuator: [-1, 1]
        high = np.where(limited, rng[:, 1], 1.0).astype(np.float32)
        return cls(w.layers(), low, high)

    def flops_per_sample(self) -> int:
        """The layers' multiply-adds, 2 flops each; the bias adds are left out (studylib.costs.mlp_flops,
        CartPole's count, includes them)."""
        return sum(2 * w.shape[0] * w.shape[1] for w, _ in self.weights)

    def __call__(self, obs, xp=np):
        """Controls (N, nu) for observations (N, obs_width), in ``xp`` (numpy or jax.numpy)."""
        layers = self.weights if xp is np else [(xp.asarray(w), xp.asarray(b)) for w, b in self.weights]
        u = xp.tanh(mlp_logits(layers, obs.astype(np.float32) if xp is np else obs, xp))
        mid, half = (self.high + self.low) / 2, (self.high - self.low) / 2
        return mid + half * u


def closed_loop(engine, policy: EnginePolicy, steps: int) -> None:
    """``steps`` times: the policy on the engine's observation, then one step of every environment
    (the engine's ``observe`` and ``step_once``): the paper's simulation/inference loop, from Python."""
    for _ in range(steps):
        engine.step_once(policy(engine.observe()))
