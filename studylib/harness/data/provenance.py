"""Where a measurement came from: the machine, the software and the code version.

``machine_info()`` is written into every data file the harness produces (``harness.data.store``);
``machine_key()`` names the per-machine folder under ``data/`` so that results taken on several
machines can be merged by copying folders side by side. The key depends on the hardware only
(``harness.data.identity``: vendor, family/model, ISA level, cores, last-level cache, GPU), not on the
hostname, so two identical cloud instances share a key and two different CPUs behind one generic
name do not. ``$STUDYLIB_CPUINFO`` names a file read instead of ``/proc/cpuinfo`` and sysfs: the
process poses as the host the file describes (its CPU, cores and cache; ``identity.posed_facts``),
so a copy of a snapshot's host's cpuinfo makes this machine's key that snapshot's.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from ...errors import ConfigError
from .identity import cpu_identity, key, posed_facts, size_bytes

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("numpy", "torch", "jax", "jaxlib", "gymnasium", "cupy")


def posed_cpuinfo() -> str | None:
    """The file ``$STUDYLIB_CPUINFO`` names: the host this process poses as (None: itself)."""
    return os.environ.get("STUDYLIB_CPUINFO") or None


def cpuinfo_path() -> str:
    return posed_cpuinfo() or "/proc/cpuinfo"


@lru_cache(maxsize=8)
def _from_cpuinfo(path: str, posed: bool) -> dict:
    """What the cpuinfo file ``path`` says of its host: the CPU's identity and, for a file posing
    as another host, its cores and cache too (``identity.posed_facts``), so that no fact of this
    machine mixes into a posed key. A posing file that cannot be read is an error (one line): a key
    quietly made of this machine's facts would send a build to measure into a new folder."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        if posed:
            raise ConfigError(f"$STUDYLIB_CPUINFO names {path!r}, which cannot be read "
                              f"({getattr(e, 'strerror', None) or e}); unset it to use this machine's own") from None
        text = ""  # no /proc/cpuinfo (not Linux): the name from platform, the rest unknown
    cpu = cpu_identity(text, fallback_name=platform.processor() or platform.machine() or "unknown-cpu")
    return {**cpu, **posed_facts(text)} if posed else cpu


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else ``platform.processor()``."""
    return _from_cpuinfo(cpuinfo_path(), bool(posed_cpuinfo()))["cpu_model"]


def machine_identity() -> dict:
    """This machine's hardware identity (``identity.IDENTITY_FIELDS``): what its folder key is
    made of, and what the book's plans read of the machine (its cores, its cache). Posing as
    another host (``$STUDYLIB_CPUINFO``), every CPU fact is that file's; the GPU stays this
    machine's (a cpuinfo file names none)."""
    return {"cores": cpu_cores(), "llc_bytes": last_level_cache_bytes(),
            **_from_cpuinfo(cpuinfo_path(), bool(posed_cpuinfo())), "gpu": gpu_name()}


def cpu_cores() -> int:
    """Cores this process may run on (affinity), which is what the parallel impls get."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@lru_cache(maxsize=1)
def last_level_cache_bytes(cpu_dir: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """Size of the CPU's last-level (highest-level unified or data) cache, from sysfs; None where
    sysfs does not say (then the chapters assume a size and say so). The complexity chapter sizes
    its memory-bound configurations from it."""
    best = None
    for index in sorted(Path(cpu_dir).glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = size_bytes((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and size and (best is None or level > best[0]):
            best = (level, size)
    return best[1] if best else None


# What an NVIDIA driver exposes on Linux where CUDA can run: its device files (containers too) or
# WSL2's GPU paravirtualization device. Without any, neither torch nor the CUDA runtime finds a
# device, and importing torch to ask (about 1 s) is skipped.
_DRIVER_PATHS = ("/dev/nvidia0", "/dev/nvidiactl", "/proc/driver/nvidia", "/dev/dxg")


@lru_cache(maxsize=1)
def gpu_name() -> str | None:
    """Name of CUDA device 0, or None when there is none (never raises)."""
    if platform.system() == "Linux" and not any(os.path.exists(path) for path in _DRIVER_PATHS):
        return None
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except Exception:  # a broken CUDA install must not stop a CPU measurement
        pass
    try:
        from ...devices import cuda_status

        ok, name = cuda_status()
        return name if ok else None
    except Exception:
        return None


def _package_version(name: str) -> str | None:
    if name == "cupy":  # distributed as cupy-cudaXXx
        for dist in metadata.distributions():
            dist_name = (dist.metadata["Name"] or "").lower()
            if dist_name == "cupy" or dist_name.startswith("cupy-cuda"):
                return f"{dist.version} ({dist_name})"
        return None
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def package_versions() -> dict:
    return {name: _package_version(name) for name in PACKAGES}


def git_state(repo: Path = REPO_ROOT) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the repository the package is imported from; (None, None) without git.

    ``dirty`` is True when tracked files differ from the commit (untracked files are ignored).
    """
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10)
        if commit.returncode != 0:
            return None, None
        status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        return commit.stdout.strip(), dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def host_info() -> dict:
    """The machine and software that run this process: ``machine_info()`` without the measuring
    process's torch threads, for a page that only names its host (``book.notes``): asking torch
    imports it, 1.3 s of a chapter's kernel that does not otherwise use it, and 0.5 s of its exit."""
    commit, dirty = git_state()
    info = {
        **machine_identity(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "packages": dict(package_versions()),
        "commit": commit,
        "dirty": dirty,
        "date": now_utc(),
    }
    info["machine_key"] = machine_key(info)
    return info


def machine_info() -> dict:
    """Provenance of a measurement: hardware, OS, Python, package versions, code version, date.

    Keys: the identity (``identity.IDENTITY_FIELDS``: cpu_vendor, cpu_model (the marketing name),
    cpu_family, cpu_model_number, cpu_stepping, cpu_microarchitecture, isa, cores, llc_bytes
    (last-level cache, None if unknown), gpu (name or None)), os, python, packages {numpy, torch,
    jax, jaxlib, gymnasium, cupy}, commit, dirty, date (UTC, ISO 8601), machine_key (``host_info``'s),
    torch_threads.
    """
    info = host_info()
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
    except Exception:
        info["torch_threads"] = None
    return info


def machine_key(info: dict | None = None) -> str:
    """Stable, filesystem-safe, hostname-independent folder key of ``info`` (a machine.json; None:
    this machine): ``identity.key``, e.g. ``amd-epyc-zen3-f25m1_avx2_2c_llc32m_nogpu``."""
    return key(machine_identity() if info is None else info)
