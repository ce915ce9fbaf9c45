"""The cost model's predictions over a grid, on the committed snapshot's calibrated machine and on
the paper's machine carried from it. tests/costmodel_golden.json holds the calibration it used and
the predictions of the model as it was before it priced implementations from their records:
commit 6fa5b8a's ``predict``, which branched on their names, run (``git show
6fa5b8a:studylib/harness/model/costmodel.py`` loaded beside today's, its ``predict`` swapped in) on the
committed snapshot's calibration. ``test_costmodel`` rebuilds the machines from that calibration
and checks today's model gives the same numbers.

    python -m tests.costmodel_cases > tests/costmodel_golden.json     # today's model's numbers, when its meaning changes
"""

from __future__ import annotations

import itertools
import json
import sys

IMPLS = ("gym", "cpp", "torch", "jax", "cuda", "fused")
GRID = {"num_envs": (1, 2**6, 2**13, 2**20), "steps": (1, 10, 1000), "state_factor": (1, 64),
        "compute_factor": (1, 16), "policy": ("mlp", "none")}


def calibrations() -> dict:
    """{snapshot: {"calibration": rows, "ceilings": rows}} of every committed snapshot."""
    from studylib.harness.model import calibrate
    from tests.snapshot_cases import ROOT, SNAPSHOTS

    return {key: {"calibration": calibrate.calibration_rows(ROOT / "data", key),
                  "ceilings": calibrate.ceiling_rows(ROOT / "data", key)} for key in SNAPSHOTS}


def machines(cals: dict) -> dict:
    """{name: Machine}: each calibration's machine, and the paper's machine carried from it."""
    from studylib.harness.model import costmodel

    out = {}
    for key, c in cals.items():
        ours = costmodel.machine_from_calibration(c["calibration"], c["ceilings"], name=key)
        hz = next(r["value"] for r in c["calibration"] if r.get("quantity") == "host_clock_hz")
        out[key] = ours
        out[f"{key} as the paper's machine"] = costmodel.paper_machine(ours, float(hz), 2)
    return out


def predictions(cals: dict) -> list[dict]:
    from studylib.errors import ConfigError
    from studylib.harness.model import costmodel

    rows = []
    for name, m in machines(cals).items():
        for impl, *point in itertools.product(IMPLS, *GRID.values()):
            kw = dict(zip(GRID, point))
            try:
                p = costmodel.predict(impl, m, **kw)
            except ConfigError as e:
                rows.append({"machine": name, "impl": impl, **kw, "error": str(e)})
                continue
            rows.append({"machine": name, "impl": impl, **kw, "seconds_per_call": p.seconds_per_call,
                         "terms": p.terms})
    return rows


if __name__ == "__main__":
    cals = calibrations()
    line = lambda r: json.dumps(r, separators=(",", ":"), default=str)  # noqa: E731
    sys.stdout.write('{"calibrations": ' + line(cals) + ',\n"predictions": [\n'
                     + ",\n".join(line(r) for r in predictions(cals)) + "\n]}\n")
