"""Which devices exist here, asked of each framework without ever raising for a missing GPU.

The environment layer's one place for device detection: the implementations resolve their
``device`` setting here, and provenance, the harness and the book ask ``cuda_status`` whether a
CUDA device works. Frameworks are imported on first use, so asking about CuPy needs no jax.
"""

from __future__ import annotations

from functools import lru_cache

from .errors import ConfigError, DeviceUnavailableError


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
    """Whether ``impl`` can run on 'cuda' here: asked of the framework that runs it."""
    if impl in ("torch", "torch-compile", "gym"):
        import torch

        return torch.cuda.is_available(), "no CUDA device: PyTorch sees no GPU on this machine"
    if impl == "jax":
        import jax

        try:
            return bool(jax.devices("gpu")), ""
        except RuntimeError:
            return False, "no CUDA device: JAX sees no GPU on this machine"
    return cuda_status()


def check_device_for(impl: str, device) -> None:
    """The implementation/device pairs that cannot work, refused before anything is allocated."""
    if impl == "cpp" and device == "cuda":
        raise ConfigError("cpp simulates and infers on the CPU; use device 'cpu' (or the cuda implementation)")
    if impl == "cuda" and device == "cpu":
        raise ConfigError("the cuda implementation runs on the GPU only; use device 'cuda' (or the cpp implementation)")
    if device == "cuda" or impl == "cuda":
        ok, reason = cuda_available_for(impl)
        if not ok:
            raise DeviceUnavailableError(f"{reason} (impl={impl}, device=cuda)")
