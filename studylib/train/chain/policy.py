"""The chain's trained policy as plain arrays: what is judged, saved (``.npz``) and deployed.

The deterministic policy is the Gaussian's mean (cleanrl evaluates the same way with
``deterministic``/mean actions), on the observation as the trainer normalized it, clipped to the
action space::

    x = clip((obs - obs_mean) / sqrt(obs_var + 1e-8), -obs_clip, obs_clip)
    action = clip(tanh(tanh(x @ W1 + b1) @ W2 + b2) @ W3 + b3, -1, 1)

The arrays: W1 (3n+3, 64) b1 W2 (64, 64) b2 W3 (64, 1) b3 (1,), the learned ``log_std`` (1,)
(not used by the mean, kept so the file is the whole policy), the frozen normalization
``obs_mean``/``obs_var`` (3n+3,) (zeros/ones without normalization) and ``obs_clip`` ().
"""

from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from .running_norm import EPSILON

HIDDEN = 64
POLICY_ARRAYS = ("W1", "b1", "W2", "b2", "W3", "b3", "log_std", "obs_mean", "obs_var", "obs_clip")


def policy_shapes(obs_size: int) -> dict[str, tuple]:
    return {"W1": (obs_size, HIDDEN), "b1": (HIDDEN,), "W2": (HIDDEN, HIDDEN), "b2": (HIDDEN,), "W3": (HIDDEN, 1),
            "b3": (1,), "log_std": (1,), "obs_mean": (obs_size,), "obs_var": (obs_size,), "obs_clip": ()}


def make_policy_arrays(layers, log_std, obs_mean, obs_var, obs_clip: float) -> dict[str, np.ndarray]:
    """The arrays from the actor's three (W, b) layers (x @ W layout), its log-std and the
    normalization's mean and variance (any array type numpy can read)."""
    out = {}
    for i, (w, b) in enumerate(layers, start=1):
        out[f"W{i}"], out[f"b{i}"] = np.array(w, np.float32), np.array(b, np.float32)
    out["log_std"] = np.array(log_std, np.float32).reshape(1)
    out["obs_mean"], out["obs_var"] = np.array(obs_mean, np.float32), np.array(obs_var, np.float32)
    out["obs_clip"] = np.array(obs_clip, np.float32)
    return check_policy_arrays(out)


def check_policy_arrays(arrays: dict) -> dict[str, np.ndarray]:
    """The arrays with consistent shapes (the observation size read from W1), as float32;
    ConfigError otherwise."""
    missing = [k for k in POLICY_ARRAYS if k not in arrays]
    if missing:
        raise ConfigError(f"the chain's policy is missing {', '.join(missing)} (needs {', '.join(POLICY_ARRAYS)})")
    obs_size = np.shape(arrays["W1"])[0] if np.ndim(arrays["W1"]) == 2 else -1
    out = {}
    for k, shape in policy_shapes(obs_size).items():
        a = np.asarray(arrays[k], dtype=np.float32)
        if a.shape != shape or not np.all(np.isfinite(a)):
            raise ConfigError(f"the chain's policy array {k} must be finite with shape {shape}, got {a.shape}")
        out[k] = a
    return out


def links_of(arrays: dict) -> int:
    """n from the observation size 3n + 3."""
    return arrays["W1"].shape[0] // 3 - 1


def deterministic_actions(arrays: dict, obs) -> np.ndarray:
    """(E,) the mean actions for observations (E, 3n+3), float32 as the trainers compute them."""
    x = np.asarray(obs, dtype=np.float32)
    x = np.clip((x - arrays["obs_mean"]) / np.sqrt(arrays["obs_var"] + np.float32(EPSILON)),
                -arrays["obs_clip"], arrays["obs_clip"])
    h = np.tanh(x @ arrays["W1"] + arrays["b1"])
    h = np.tanh(h @ arrays["W2"] + arrays["b2"])
    return np.clip((h @ arrays["W3"] + arrays["b3"])[:, 0], -1.0, 1.0)


def zero_policy(links: int) -> dict[str, np.ndarray]:
    """The policy whose action is always 0 (the motor off): a baseline that must not be solved."""
    d = 3 * links + 3
    return make_policy_arrays([(np.zeros((d, HIDDEN)), np.zeros(HIDDEN)), (np.zeros((HIDDEN, HIDDEN)), np.zeros(HIDDEN)),
                               (np.zeros((HIDDEN, 1)), np.zeros(1))], np.zeros(1), np.zeros(d), np.ones(d), 10.0)


def save_policy(path, arrays: dict):
    from ..cartpole.actor_critic import save_npz

    return save_npz(path, arrays, check=check_policy_arrays)


def load_policy(path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return check_policy_arrays({k: f[k] for k in f.files})
