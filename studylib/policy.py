"""The policy of the data-collection loop: an MLP 4 -> 64 -> 64 -> 2 with tanh, acting greedily (CartPole),
and its continuous sibling for the chain (observation -> 64 -> 64 -> 1, a Gaussian sample: ``gaussian_actions``).

Weights come from a seed (numpy, PyTorch's default ``nn.Linear`` init bounds) and are the same
float32 numbers in every implementation, so all implementations pick the same action from the
same observation (up to float32 rounding when the two logits are within ~1e-6 of each other).
Ties go to action 0, as ``argmax`` in numpy, torch and jax.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


def mlp_weights(seed: int = 0, sizes: tuple[int, int, int, int] = LAYER_SIZES) -> MLPWeights:
    """The policy's weights from ``seed``; ``sizes`` other than CartPole's (4, 64, 64, 2) give the
    same MLP for another observation and action width (the robotics engines' policy)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        arrays.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        arrays.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    return MLPWeights(*arrays)


def _float32_matmul(xp):
    """``a @ b`` rounded as float32 products are everywhere else. jax on a GPU multiplies float32
    in TF32 by default (a 10-bit mantissa): on an H100 the chain's Gaussian actions then differed
    from the float64 reference by 1.8e-4 where torch's differed by 5e-8. jax is asked for its
    highest precision; the other modules already multiply in float32."""
    if xp.__name__.startswith("jax"):
        return lambda a, b: xp.matmul(a, b, precision="highest")
    return lambda a, b: a @ b


def mlp_logits(weights: MLPWeights, obs, xp=np):
    """Forward pass with any array module (numpy, torch, jax.numpy); weights already in ``xp``."""
    (w1, b1), (w2, b2), (w3, b3) = weights
    mm = _float32_matmul(xp)
    h = xp.tanh(mm(obs, w1) + b1)
    h = xp.tanh(mm(h, w2) + b2)
    return mm(h, w3) + b3


def reference_actions(weights: MLPWeights, obs) -> tuple[np.ndarray, np.ndarray]:
    """float64 reference: (greedy actions, |logit margin|) for observations (N, 4)."""
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in weights.layers()]
    logits = mlp_logits(layers, np.asarray(obs, dtype=np.float64))
    return np.argmax(logits, axis=1), np.abs(logits[:, 1] - logits[:, 0])


class TorchGreedyMLP:
    """The policy as eager PyTorch ops writing into preallocated buffers: addmm (x @ w + b), in-place
    tanh, argmax. The arithmetic of ``mlp_logits``; used by gym, cpp and torch.

    Why the buffers: with a fresh tensor per op, glibc hands each N x 64 activation (1 MiB at
    N = 2^12) back to the OS and page-faults it in again on the next step, which made inference
    4-5x slower at N >= 2^12 on the CPU (measured: 1.24 ms vs 0.31 ms per step at N = 2^12). XLA
    plans its buffers once per compiled call; this puts eager PyTorch on the same footing, so the
    comparisons measure dispatch and compute, not the allocator. The returned tensor is reused by
    the next call: consume it first.
    """

    def __init__(self, weights: MLPWeights, device="cpu"):
        import torch

        self.layers = [(torch.from_numpy(w).to(device), torch.from_numpy(b).to(device)) for w, b in weights.layers()]
        self.device = device
        self._num_rows = -1

    def _buffers(self, n: int):
        import torch

        if n != self._num_rows:
            dev = self.device
            self._h1, self._h2 = torch.empty(n, LAYER_SIZES[1], device=dev), torch.empty(n, LAYER_SIZES[2], device=dev)
            self._logits = torch.empty(n, LAYER_SIZES[3], device=dev)
            self._actions = torch.empty(n, dtype=torch.int64, device=dev)
            self._num_rows = n
        return self._h1, self._h2, self._logits, self._actions

    def __call__(self, obs):
        """Greedy actions (int64 tensor of shape (N,)) for observations (N, 4) on the device."""
        import torch

        h1, h2, logits, actions = self._buffers(obs.shape[0])
        (w1, b1), (w2, b2), (w3, b3) = self.layers
        torch.addmm(b1, obs, w1, out=h1).tanh_()
        torch.addmm(b2, h1, w2, out=h2).tanh_()
        torch.addmm(b3, h2, w3, out=logits)
        return torch.argmax(logits, dim=1, out=actions)


# ---- the continuous-control policy (the chain): a Gaussian around the MLP's output ----------------
# cleanrl's ppo_continuous_action.py: "actor_mean = nn.Sequential(layer_init(nn.Linear(obs, 64)),
# nn.Tanh(), layer_init(nn.Linear(64, 64)), nn.Tanh(), layer_init(nn.Linear(64, action_dim), std=0.01))"
# and "self.actor_logstd = nn.Parameter(torch.zeros(1, np.prod(envs.single_action_space.shape)))":
# a state-independent log-std, 0 at initialization (sigma = 1). The data-collection benchmark's
# policy is that network at initialization (weights from a seed, as CartPole's MLP), its action a
# sample clipped to the Box(-1, 1) action space (as cleanrl's ClipAction wrapper does before a step).
GAUSSIAN_LOG_STD = 0.0


def gaussian_actions(weights, obs, noise, log_std: float = GAUSSIAN_LOG_STD, xp=np):
    """clip(mean + exp(log_std) * noise, -1, 1) with mean the MLP's one output on ``obs`` (N, D)
    and ``noise`` (N,) standard normals (the chain's hashed ``episode.policy_noise``): the
    continuous policy's actions (N,), with any array module; weights already in ``xp``."""
    mean = mlp_logits(weights, obs, xp)[:, 0]
    return xp.clip(mean + float(np.exp(log_std)) * noise, -1.0, 1.0)
