"""The policy of the data-collection loop: an MLP 4 -> 64 -> 64 -> 2 with tanh, acting greedily.

Weights come from a seed (numpy, PyTorch's default ``nn.Linear`` init bounds) and are the same
float32 numbers in every implementation, so all implementations pick the same action from the
same observation (up to float32 rounding when the two logits are within ~1e-6 of each other).
Ties go to action 0, as ``argmax`` in numpy, torch and jax.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

POLICIES = ("mlp", "none")  # "none": hashed actions inside the simulation (paper Fig 8/9)
LAYER_SIZES = (4, 64, 64, 2)


@dataclass(frozen=True)
class MLPWeights:
    """float32 weights; layer i maps x -> x @ w_i + b_i (w_i has shape (fan_in, fan_out))."""

    w1: np.ndarray  # (4, 64)
    b1: np.ndarray  # (64,)
    w2: np.ndarray  # (64, 64)
    b2: np.ndarray  # (64,)
    w3: np.ndarray  # (64, 2)
    b3: np.ndarray  # (2,)

    def layers(self):
        return ((self.w1, self.b1), (self.w2, self.b2), (self.w3, self.b3))


def mlp_weights(seed: int = 0) -> MLPWeights:
    rng = np.random.default_rng(seed)
    arrays = []
    for fan_in, fan_out in zip(LAYER_SIZES[:-1], LAYER_SIZES[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        arrays.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        arrays.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    return MLPWeights(*arrays)


def mlp_logits(weights: MLPWeights, obs, xp=np):
    """Forward pass with any array module (numpy, torch, jax.numpy); weights already in ``xp``."""
    (w1, b1), (w2, b2), (w3, b3) = weights
    h = xp.tanh(obs @ w1 + b1)
    h = xp.tanh(h @ w2 + b2)
    return h @ w3 + b3


def reference_actions(weights: MLPWeights, obs) -> tuple[np.ndarray, np.ndarray]:
    """float64 reference: (greedy actions, |logit margin|) for observations (N, 4)."""
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in weights.layers()]
    logits = mlp_logits(layers, np.asarray(obs, dtype=np.float64))
    return np.argmax(logits, axis=1), np.abs(logits[:, 1] - logits[:, 0])


def check_policy(policy: str) -> str:
    from .errors import ConfigError

    if policy not in POLICIES:
        raise ConfigError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    return policy
