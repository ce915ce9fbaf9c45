"""The arrays an environment takes and returns: numpy on the host (``arrays="numpy"``, the
default) or the implementation's own, on its device (``arrays="native"``).

Every environment holds one ``ArrayKind`` as ``env.array_kind``:

``NumpyKind``
    numpy arrays; actions may be any integer or bool array-like.
``TorchKind``
    torch tensors on one device: torch, torch-compile, cpp, fused and cuda (CuPy's arrays cross
    to torch by DLPack, without a copy).
``JaxKind``
    jax arrays on one device: jax.

A kind checks what crosses into an environment (actions, restart masks) without copying it:
type, device, shape and dtype, which need no look at the data. The values of actions (0 or 1)
are checked where the data is on the host (numpy, and torch or jax on the CPU); on a GPU that
check would wait for the device every step, so it is not made there, and an action other than 1
pushes left, as the kernels and ``episodes.advance`` read it.

A kind also gives the few operations the gymnasium adapter's bookkeeping needs on the arrays it
returns: ``xp`` (the array module, for ``where``), ``zeros_bool``, ``from_numpy``, ``to_numpy``
and ``any`` (a host bool; on a GPU it waits for the device), ``maybe_any`` (True without looking
where looking would wait).
"""

from __future__ import annotations

import numpy as np

from .errors import ConfigError


def _shape_error(what: str, n: int, shape) -> ConfigError:
    return ConfigError(f"{what} must have shape ({n},), got {tuple(shape)}")


def _range_error() -> ConfigError:
    return ConfigError("actions must be 0 (push left) or 1 (push right)")


def _control_error(what: str) -> ConfigError:
    return ConfigError(f"actions of a continuous simulator must be finite floats (its Box(-1, 1) action space; "
                       f"values beyond act as -1 or 1), got {what}")


class NumpyKind:
    """numpy arrays on the host (``arrays="numpy"``)."""

    name = "numpy"
    xp = np
    on_host = True

    def check_actions(self, actions, n: int) -> np.ndarray:
        a = np.asarray(actions)
        if a.shape != (n,):
            raise _shape_error("actions", n, a.shape)
        if a.dtype == bool:
            a = a.astype(np.int32)
        if not np.issubdtype(a.dtype, np.integer):
            raise ConfigError(f"actions must be integers 0 or 1, got dtype {a.dtype}")
        if a.size and (a.min() < 0 or a.max() > 1):
            raise _range_error()
        return a.astype(np.int32, copy=False)

    def check_controls(self, actions, n: int) -> np.ndarray:
        """A continuous simulator's actions: (n,) or (n, 1) floats (or integers), finite. Values outside
        [-1, 1] are taken: the actuator clamps them to its ctrlrange, as MuJoCo does for gymnasium's
        v5 (``sims.chain.dynamics.actuator_force``), so code written for v5 that steps unclipped
        samples runs unchanged."""
        a = np.asarray(actions)
        if a.shape == (n, 1):
            a = a[:, 0]
        if a.shape != (n,):
            raise _shape_error("actions", n, a.shape)
        if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
            raise _control_error(f"dtype {a.dtype}")
        a = a.astype(np.float32, copy=False)
        if a.size and not np.all(np.isfinite(a)):
            raise _control_error("a non-finite value")
        return a

    def check_mask(self, mask, n: int) -> np.ndarray:
        if not (isinstance(mask, np.ndarray) and mask.dtype == bool):
            raise ConfigError(f"a reset mask must be a bool numpy array of shape ({n},), got {_describe(mask)}")
        if mask.shape != (n,):
            raise _shape_error("a reset mask", n, mask.shape)
        return mask

    def zeros_bool(self, n: int) -> np.ndarray:
        return np.zeros(n, bool)

    def from_numpy(self, array):
        return array

    def to_numpy(self, array) -> np.ndarray:
        return array

    def any(self, mask) -> bool:
        return bool(mask.any())

    def maybe_any(self, mask) -> bool:
        return bool(mask.any())


class TorchKind:
    """torch tensors on ``device`` (``arrays="native"`` for every implementation but jax and gym)."""

    name = "torch"

    def __init__(self, device):
        import torch

        self.xp = torch
        self.device = torch.empty(0, device=device).device  # with its index: 'cuda' -> cuda:0
        self.on_host = self.device.type == "cpu"

    def _check_tensor(self, what: str, x, n: int, wanted: str) -> None:
        if not isinstance(x, self.xp.Tensor):
            raise ConfigError(f"with arrays='native', {what} must be a torch tensor ({wanted}) on {self.device}, "
                              f"got {_describe(x)}")
        if x.device != self.device:
            raise ConfigError(f"{what} must be on this env's device {self.device}, got a tensor on {x.device}")
        if x.shape != (n,):
            raise _shape_error(what, n, x.shape)

    def check_actions(self, actions, n: int):
        self._check_tensor("actions", actions, n, "integer")
        dtype = actions.dtype
        if dtype.is_floating_point or dtype.is_complex:
            raise ConfigError(f"actions must be integers 0 or 1, got dtype {dtype}")
        if self.on_host and dtype != self.xp.bool and n:
            low, high = self.xp.aminmax(actions)
            if low < 0 or high > 1:
                raise _range_error()
        return actions

    def check_controls(self, actions, n: int):
        """A continuous simulator's actions: a floating tensor (n,) on the device; finite, checked
        where the data is on the host (as the discrete actions' range); beyond [-1, 1] the actuator
        clamps (NumpyKind.check_controls)."""
        self._check_tensor("actions", actions, n, "float")
        if not actions.dtype.is_floating_point:
            raise _control_error(f"dtype {actions.dtype}")
        if self.on_host and n and not bool(self.xp.isfinite(actions).all()):
            raise _control_error("a non-finite value")
        return actions

    def check_mask(self, mask, n: int):
        self._check_tensor("a reset mask", mask, n, "bool")
        if mask.dtype != self.xp.bool:
            raise ConfigError(f"a reset mask must be a bool tensor, got dtype {mask.dtype}")
        return mask

    def zeros_bool(self, n: int):
        return self.xp.zeros(n, dtype=self.xp.bool, device=self.device)

    def from_numpy(self, array):
        return self.xp.as_tensor(array, device=self.device)

    def to_numpy(self, tensor) -> np.ndarray:
        return tensor.cpu().numpy()

    def any(self, mask) -> bool:
        return bool(mask.any())

    def maybe_any(self, mask) -> bool:
        return bool(mask.any()) if self.on_host else True


class JaxKind:
    """jax arrays on ``device`` (a jax Device; ``arrays="native"`` for jax)."""

    name = "jax"

    def __init__(self, device):
        import jax
        import jax.numpy as jnp

        self._jax = jax
        self.xp = jnp
        self.device = device
        self.on_host = device.platform == "cpu"
        self._out_of_range = jax.jit(lambda a: jnp.any((a < 0) | (a > 1)))  # one dispatch
        self._bad_controls = jax.jit(lambda a: jnp.any(~jnp.isfinite(a)))

    def _check_array(self, what: str, x, n: int, wanted: str) -> None:
        if not isinstance(x, self._jax.Array):
            raise ConfigError(f"with arrays='native', {what} must be a jax array ({wanted}) on {self.device}, "
                              f"got {_describe(x)}")
        if x.devices() != {self.device}:
            raise ConfigError(f"{what} must be on this env's device {self.device}, got an array on "
                              f"{', '.join(map(str, x.devices()))}")
        if x.shape != (n,):
            raise _shape_error(what, n, x.shape)

    def check_actions(self, actions, n: int):
        self._check_array("actions", actions, n, "integer")
        jnp = self.xp
        if actions.dtype != jnp.bool_ and not jnp.issubdtype(actions.dtype, jnp.integer):
            raise ConfigError(f"actions must be integers 0 or 1, got dtype {actions.dtype}")
        if self.on_host and actions.dtype != jnp.bool_ and n and bool(self._out_of_range(actions)):
            raise _range_error()
        return actions

    def check_controls(self, actions, n: int):
        """A continuous simulator's actions: a floating jax array (n,) on the device; finite, checked
        on the host's device only; beyond [-1, 1] the actuator clamps (NumpyKind.check_controls)."""
        self._check_array("actions", actions, n, "float")
        if not self.xp.issubdtype(actions.dtype, self.xp.floating):
            raise _control_error(f"dtype {actions.dtype}")
        if self.on_host and n and bool(self._bad_controls(actions)):
            raise _control_error("a non-finite value")
        return actions

    def check_mask(self, mask, n: int):
        self._check_array("a reset mask", mask, n, "bool")
        if mask.dtype != self.xp.bool_:
            raise ConfigError(f"a reset mask must be a bool jax array, got dtype {mask.dtype}")
        return mask

    def zeros_bool(self, n: int):
        return self._jax.device_put(self.xp.zeros(n, bool), self.device)

    def from_numpy(self, array):
        return self._jax.device_put(array, self.device)

    def to_numpy(self, array) -> np.ndarray:
        return np.asarray(array)

    def any(self, mask) -> bool:
        return bool(self.xp.any(mask))

    def maybe_any(self, mask) -> bool:
        return bool(self.xp.any(mask)) if self.on_host else True


def _describe(x) -> str:
    kind = type(x)
    return f"{kind.__module__.split('.')[0]}.{kind.__name__}" if kind.__module__ != "builtins" else kind.__name__
