"""Which devices exist here, asked of each framework without ever raising for a missing GPU.

The environment layer's one place for device detection: the implementations resolve their
``device`` setting here, and provenance, the harness and the book ask ``cuda_status`` whether a
CUDA device works. Frameworks are imported on first use, so asking about CuPy needs no jax.
"""

from __future__ import annotations

from functools import lru_cache

from .errors import ConfigError, DeviceUnavailableError
from .implspec import spec, specs
from .settings import PEERS


@lru_cache(maxsize=1)
def cuda_status() -> tuple[bool, str]:
    """(available, one line: the GPU's name or why there is none), through CuPy. Never raises:
    CuPy may be missing, or installed on a machine without a driver (cudaErrorInsufficientDriver)."""
    try:
        import cupy
    except Exception as e:  # ImportError, or a broken CUDA install
        return False, f"no CUDA device: CuPy is not importable ({type(e).__name__})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # cudaErrorInsufficientDriver / NoDevice on GPU-less machines
        return False, f"no CUDA device: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    if count < 1:
        return False, "no CUDA device: CUDA reports 0 devices"
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return True, name.decode() if isinstance(name, bytes) else str(name)


def require_cuda(what: str) -> None:
    """Raise DeviceUnavailableError, one line, when CuPy sees no GPU."""
    ok, reason = cuda_status()
    if not ok:
        raise DeviceUnavailableError(f"{reason}; {what}")


def resolve_torch_device(device) -> str:
    """None -> 'cuda' when PyTorch sees a GPU, else 'cpu'; 'cuda' without one is a clear error."""
    import torch

    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailableError("no CUDA device: PyTorch sees no GPU on this machine (use device='cpu')")
    return device


def resolve_jax_device(device):
    """None -> JAX's default device; 'cpu' / 'cuda' -> the first such jax device."""
    import jax

    if device is None:
        return jax.devices()[0]
    try:
        return jax.devices({"cuda": "gpu", "cpu": "cpu"}[device])[0]
    except RuntimeError as e:
        raise DeviceUnavailableError("no CUDA device: JAX sees no GPU on this machine (use device='cpu')") from e


def cuda_available_for(impl: str) -> tuple[bool, str]:
    """Whether ``impl`` can run on 'cuda' here: asked of the framework its record names (``gpu_probe``)."""
    probe = spec(impl).gpu_probe
    if probe == "torch":
        import torch

        return torch.cuda.is_available(), "no CUDA device: PyTorch sees no GPU on this machine"
    if probe == "jax":
        import jax

        try:
            return bool(jax.devices("gpu")), ""
        except RuntimeError:
            return False, "no CUDA device: JAX sees no GPU on this machine"
    if probe == "cupy":
        return cuda_status()
    return False, f"{impl} runs on the CPU only"


def default_device(impl: str) -> str:
    """The device ``impl`` runs on when none is asked for: the first of its record's ``devices``
    that works here ('cuda' where its framework sees a GPU)."""
    devices = spec(impl).devices
    for device in devices:
        if device == "cpu" or cuda_available_for(impl)[0]:
            return device
    return devices[0]  # a GPU-only implementation without a GPU: refused when made


def runs_here(impl: str) -> bool:
    """Whether ``impl`` has a device on this machine (a GPU-only one needs a working GPU)."""
    return "cpu" in spec(impl).devices or cuda_available_for(impl)[0]


def _same_family(impl: str, device: str) -> list[str]:
    """The implementations of ``impl``'s family that run on ``device`` (what to use instead)."""
    return [s.name for s in specs() if device in s.devices and s.family == spec(impl).family]


def check_requested_device(impl: str, device) -> None:
    """ConfigError for a device outside ``impl``'s record's ``devices`` (None: its default)."""
    devices = spec(impl).devices
    if device is not None and device not in devices:
        other = _same_family(impl, device)
        instead = f" (or the {other[0]} implementation)" if other else ""
        raise ConfigError(f"{impl} runs on {' and '.join(devices)} only, got device={device!r}; "
                          f"use device {devices[0]!r}{instead}")


def check_gpu_for(impl: str, device) -> None:
    """DeviceUnavailableError, one line, where ``impl`` would run on 'cuda' (asked for, or its only
    device) and its framework sees no GPU here; it says what runs on the CPU instead."""
    if device == "cuda" or (device is None and spec(impl).gpu_only):
        ok, reason = cuda_available_for(impl)
        if not ok:
            if "cpu" in spec(impl).devices:
                instead = "use device='cpu' (the same code on the CPU)"
            else:
                on_cpu = _same_family(impl, "cpu")
                instead = f"{impl} needs a GPU" + (f" (its logic runs on the CPU as {on_cpu[0]!r})" if on_cpu else "")
            raise DeviceUnavailableError(f"{reason} (impl={impl}, device=cuda); {instead}")


def check_device_for(impl: str, device) -> None:
    """The implementation/device pairs that cannot work, refused before anything is allocated
    (the devices an implementation runs on are its record's)."""
    if impl in PEERS:
        return  # EnvSettings keeps a peer on the CPU
    check_requested_device(impl, device)
    check_gpu_for(impl, device)
