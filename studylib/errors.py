"""Errors with one clear line each; the CLI prints the message alone, without a traceback."""

from __future__ import annotations

import os


class StudyError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(StudyError, ValueError):
    """A parameter is invalid (wrong type, out of range, unknown name)."""


class InsufficientMemoryError(ConfigError):
    """A configuration would not fit in this machine's memory (checked before allocating)."""


class DeviceUnavailableError(StudyError, RuntimeError):
    """The requested device (e.g. a CUDA GPU) does not exist on this machine."""


class InstrumentUnavailableError(StudyError, RuntimeError):
    """An instrument could not record what it measures here (a GPU profiler whose tracer did not
    start): the point is skipped with this reason rather than saved with a zero."""


class PackageUnavailableError(StudyError, RuntimeError):
    """An optional package a measurement needs (a peer's library) is not installed here: the
    point is skipped with this reason, and measured by a later run where the package is."""


def available_memory_bytes() -> int:
    """MemAvailable from /proc/meminfo (Linux); physical memory elsewhere."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_fits_in_memory(what: str, needed_bytes: int, available: int | None = None) -> None:
    available = available_memory_bytes() if available is None else available
    if needed_bytes > available:
        raise InsufficientMemoryError(
            f"{what} needs about {needed_bytes / 2**30:.1f} GiB but only "
            f"{available / 2**30:.1f} GiB of memory is available; use fewer environments or a smaller state factor"
        )
