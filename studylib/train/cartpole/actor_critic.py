"""The networks PPO trains, in PyTorch, and the actor as plain arrays (the ``.npz`` format).

Actor: the study's MLP, 4 -> 64 -> 64 -> 2 with tanh (``studylib.policy.LAYER_SIZES``), whose
logits are a categorical policy; the greedy action is their argmax. Critic: a separate
4 -> 64 -> 64 -> 1 tanh MLP (cleanrl's and PureJaxRL's choice for CartPole: no shared trunk, so
the critic's loss never moves the actor's weights). Orthogonal initialization with cleanrl's
gains (sqrt 2 hidden, 0.01 for the actor's output so the first policy is near uniform, 1 for the
critic's), drawn from a seeded generator: the same seed gives the same networks.

``ActorArrays`` is the actor in the layout of ``studylib.policy`` and of the native kernels:
``logits = tanh(tanh(x @ W1 + b1) @ W2 + b2) @ W3 + b3`` with ``W1`` of shape (4, 64). It is what
``--save`` writes and what ``studylib.train.evaluate`` runs.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ...errors import ConfigError
from ...policy import LAYER_SIZES
from ..settings import check_save_path

ARRAY_NAMES = ("W1", "b1", "W2", "b2", "W3", "b3")
ARRAY_SHAPES = {"W1": (4, 64), "b1": (64,), "W2": (64, 64), "b2": (64,), "W3": (64, 2), "b3": (2,)}
assert ARRAY_SHAPES["W1"][0] == LAYER_SIZES[0] and ARRAY_SHAPES["W3"][1] == LAYER_SIZES[-1]


def _mlp(sizes, out_gain: float, generator: torch.Generator) -> nn.Sequential:
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        linear = nn.Linear(fan_in, fan_out)
        last = i == len(sizes) - 2
        nn.init.orthogonal_(linear.weight, gain=out_gain if last else math.sqrt(2), generator=generator)
        nn.init.zeros_(linear.bias)
        layers.append(linear)
        if not last:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


class ActorCritic(nn.Module):
    """Actor (categorical logits) and critic (state value), two separate tanh MLPs."""

    def __init__(self, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.actor = _mlp(LAYER_SIZES, 0.01, g)
        self.critic = _mlp((*LAYER_SIZES[:-1], 1), 1.0, g)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(obs)

    @torch.no_grad()
    def actor_arrays(self) -> dict[str, np.ndarray]:
        """The actor as float32 arrays W1 b1 W2 b2 W3 b3 (``W`` as (fan_in, fan_out))."""
        linears = [m for m in self.actor if isinstance(m, nn.Linear)]
        out = {}
        for i, layer in enumerate(linears, start=1):
            out[f"W{i}"] = layer.weight.detach().to("cpu", torch.float32).T.contiguous().numpy()
            out[f"b{i}"] = layer.bias.detach().to("cpu", torch.float32).numpy().copy()
        return out


def greedy_actions(arrays: dict, obs: np.ndarray) -> np.ndarray:
    """argmax of the actor's logits for observations (n, 4), in numpy float32 (as the kernels)."""
    x = np.asarray(obs, dtype=np.float32)
    h = np.tanh(x @ arrays["W1"] + arrays["b1"])
    h = np.tanh(h @ arrays["W2"] + arrays["b2"])
    return np.argmax(h @ arrays["W3"] + arrays["b3"], axis=-1)


def check_arrays(arrays: dict) -> dict[str, np.ndarray]:
    """The six arrays with the documented shapes, as float32; ConfigError otherwise."""
    missing = [k for k in ARRAY_NAMES if k not in arrays]
    if missing:
        raise ConfigError(f"actor arrays are missing {', '.join(missing)} (need {', '.join(ARRAY_NAMES)})")
    out = {}
    for k in ARRAY_NAMES:
        a = np.asarray(arrays[k], dtype=np.float32)
        if a.shape != ARRAY_SHAPES[k]:
            raise ConfigError(f"actor array {k} must have shape {ARRAY_SHAPES[k]}, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ConfigError(f"actor array {k} has non-finite values")
        out[k] = a
    return out


def save_npz(path, arrays: dict, check=check_arrays) -> Path:
    """Write the actor to ``path`` atomically (a temporary file in the same folder, then rename);
    ``check``: what validates the arrays first (the chain's policy has its own)."""
    p = check_save_path(path)
    arrays = check(arrays)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.stem}.", suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p


def load_npz(path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return check_arrays({k: f[k] for k in f.files})
