"""The chain study (the paper's §7 next step): its points, the cost model's predictions for them,
saved before they are measured, and the comparison of the two.

The paper, §7: "our immediate next step will be to explore additional simulators of varying
memory/compute complexity to investigate how many existing simulators can benefit from kernel
fusion." The chain (studylib.sims.chain) is such a simulator, its complexity the number of links n.

Order, so a prediction is never fitted to its measurement: ``predictions`` predicts every planned
point not yet predicted (``chain_predictions.json``, kind "prediction") and never rewrites a saved
prediction; the chapter's plan calls it before ``sweep`` measures (``chain.json``). The snapshot's
prediction file is committed before its measurements (git history shows the order).

What the model is given, per point: the machine's calibration (CartPole's microbenchmarks and
ceilings: ``harness.model.calibrate``), the chain's work per environment step from its record's counts
(``sims.chain``: flops, sin/cos/sqrt, bytes, for n links) and the calls and kernels each
implementation makes per step on the chain, *counted* (not timed) from the implementation itself
(``calibrate.count_calls``). Nothing it is given was measured on our implementations of the chain;
from model version 2 (``costmodel.VERSION``) the gym row, which steps MuJoCo, is also given MuJoCo's
own timer of one ``mj_step`` of the chain's MJCF (the reference engine's physics: ``reference_step_s``,
in the gym rows only).
Each row records the model version that made it.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from ...settings import MeasurePoint
from ... import sims
from ..model import calibrate, costmodel
from ..sweep import Keying, keyed_by, run

SIM = "chain"
PREDICTIONS = "chain_predictions"  # the data file of the predictions (before) ...
MEASUREMENTS = "chain"  # ... and of the measurements
PREDICTION_COLUMNS = ("impl", "links", "num_envs", "steps", "policy", "episode_rules")


def _columns(point: MeasurePoint) -> dict:
    flat = point.flat()
    return {c: flat[c] for c in PREDICTION_COLUMNS}


KEYING = Keying(_columns, keyed_by(*PREDICTION_COLUMNS), MeasurePoint.describe, "prediction")


def work(params) -> dict:
    """The chain's work per environment step with ``params`` (its n and frame_skip), from its
    record's counts (sims.chain), the policy apart."""
    record = sims.sim(SIM)
    return {"flops_per_step": record.physics_flops(params, 1),
            "transcendentals_per_step": record.transcendentals(params, 1),
            "bytes_per_step": record.unfused_bytes(params, 1)}


@functools.cache
def reference_step_seconds(mjcf: str, frame_skip: int) -> float:
    """MuJoCo's physics of one environment step of the model ``mjcf``: frame_skip × MuJoCo's own
    timer of one ``mj_step`` (the engines' reference run: random controls, engine_predict's steps)."""
    import mujoco

    from .engine_predict import TIMER_STEPS
    from .engines import reference_run

    model = mujoco.MjModel.from_xml_string(mjcf)
    return frame_skip * reference_run(model, f"mjcf {hash(mjcf)}", "xml", 0, "random", 1, TIMER_STEPS)[1]


def predict_point(point: MeasurePoint, machine: costmodel.Machine, counts_cache: dict) -> dict:
    """The model's row for one point (see the module doc for what it is given)."""
    e = point.env
    mjcf = sims.sim(SIM).mujoco_mjcf
    steps_mujoco = mjcf is not None and costmodel.prices_reference_step(e.impl)  # MuJoCo's timer: the gym row only
    reference_s = reference_step_seconds(*mjcf(e.params)) if steps_mujoco else None
    key = (e.impl, point.policy, e.params.links)
    if key not in counts_cache:  # counted once per (implementation, policy, n): calls and kernels per step
        counts_cache[key] = calibrate.count_calls(e.impl, point.policy, SIM, e.params)
    table = {**machine.counts.table, (e.impl, point.policy): counts_cache[key]}
    p = costmodel.predict(e.impl, replace(machine, counts=costmodel.Counts(table)), num_envs=e.num_envs,
                          steps=point.steps, policy=point.policy, sim=SIM, params=e.params,
                          reference_step_s=reference_s)
    return {**_columns(point), "sim": SIM, "predicted_samples_per_s": p.samples_per_s, "regime": p.regime,
            "terms": {t: float(v) for t, v in p.terms.items()}, **work(e.params), "counts": counts_cache[key],
            "reference_step_s": reference_s, "machine_model": machine.name, "model_version": costmodel.VERSION}


def predictions(points, machine: costmodel.Machine | None, *, data_dir, machine_folder=None, log=None):
    """The saved prediction of every point, predicting (and saving) the missing ones first; a saved
    prediction is never rewritten. ``machine``: the model's machine (None: read only)."""
    cache: dict = {}
    predict = (lambda point: predict_point(point, machine, cache)) if machine is not None else None
    return run(PREDICTIONS, points, predict, KEYING, data_dir=data_dir, progress=False, log=log,
               machine=machine_folder)
