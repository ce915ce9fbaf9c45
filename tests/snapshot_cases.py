"""The committed machine snapshots under data/, read as data: the tests that use them never measure
and never depend on which machine runs them (they pose as the snapshot's machine, or as another)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = sorted(p.parent.name for p in (ROOT / "data").glob("*/machine.json"))


def machine_json(key: str) -> dict:
    return json.loads((ROOT / "data" / key / "machine.json").read_text())


# the newest committed CPU snapshot: measured by a cold default-preset build of one clean commit
CPU_SNAPSHOTS = [k for k in SNAPSHOTS if not machine_json(k).get("gpu")]
SNAPSHOT = max(CPU_SNAPSHOTS, key=lambda k: machine_json(k).get("date") or "") if CPU_SNAPSHOTS else None
# snapshots measured on a lent GPU machine: the chapters' sweeps that fitted its lease, not a whole build
GPU_SNAPSHOTS = [k for k in SNAPSHOTS if machine_json(k).get("gpu")]
# those that hold CartPole's sweeps of F.1–F.4 (one, the H200's, holds the chain alone); every CPU
# snapshot holds them (tests/test_book_runs.py), so the findings' tests read FINDINGS_SNAPSHOTS
FINDINGS_FILES = ("fig4", "fig4_k", "fig8", "fig9")
CARTPOLE_GPU_SNAPSHOTS = [k for k in GPU_SNAPSHOTS
                          if all((ROOT / "data" / k / f"{f}.json").exists() for f in FINDINGS_FILES)]
FINDINGS_SNAPSHOTS = sorted([*CPU_SNAPSHOTS, *CARTPOLE_GPU_SNAPSHOTS])


def identity_of(key: str) -> dict:
    """The hardware identity a snapshot's machine recorded (what its plans read of it)."""
    from studylib.harness.data.identity import IDENTITY_FIELDS

    info = machine_json(key)
    return {f: info.get(f) for f in IDENTITY_FIELDS}


def cpuinfo_of(key: str) -> str:
    """A /proc/cpuinfo text of an x86 snapshot's host, made from its recorded identity (vendor,
    name, family/model/stepping, ISA, cores, and the last-level cache on the ``cache size`` line,
    as Intel's kernel prints it): what ``$STUDYLIB_CPUINFO`` names to pose as that host."""
    from tests.cpuinfo_cases import AVX2, AVX512, x86

    info = machine_json(key)
    vendor = {"intel": "GenuineIntel", "amd": "AuthenticAMD"}[info["cpu_vendor"]]
    flags = {"avx512": AVX512, "avx2": AVX2}[info["isa"]]
    return x86(vendor, info["cpu_model"], info["cpu_family"], info["cpu_model_number"], info["cpu_stepping"], flags,
               cores=info["cores"], cache_kb=info["llc_bytes"] // 2**10)
