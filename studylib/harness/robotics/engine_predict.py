"""The cost model's prediction of each robotics-engine row, saved before the row is measured
(``engine_predictions.json``, kind "prediction"; a saved prediction is never rewritten), as the
chain's (harness.robotics.chain_study).

The paper's cost terms, priced for an engine from its record and a model from MuJoCo's own timer:

  physics   N x K x ``mj_step_s`` / threads: MuJoCo's ``mjTIMER_STEP`` (seconds inside one
            ``mj_step`` in C for one environment of this model, 1,000 steps of MuJoCo C from
            Python, measured when the prediction is made, before any engine row), divided over
            the record's threads (one per core where it is ``threaded``);
  python    the calls from Python: one native call per call where the record runs K steps in one
            call (``steps_per_call``, and a policy inside it: ``policy_in_call``), else K of them
            (calibration's ``native_call_s``); an engine that is not ``vectorized`` pays
            calibration's ``gym_env_step_s`` (one gymnasium step in a Python loop) per environment
            step instead;
  policy    with the MLP between calls: per step, its ``POLICY_OPS`` array operations at
            calibration's ``torch_op_s`` (the measured cost of one eager framework op) and its
            flops at the FMA ceiling.

Nothing it is given was measured on an engine. An engine that ``compiles`` (MJX) runs XLA's
program, not MuJoCo C's ``mj_step``, and the model has no count of that program's work: no
prediction (the row says why).
"""

from __future__ import annotations

from ..model import costmodel
from .engine_models import load
from .engine_policy import EnginePolicy
from .engine_study import KEYING as ROW_KEYING
from .engine_study import EngineItem
from .engines import engine_record, reference_run
from ..sweep import Keying, run

PREDICTIONS = "engine_predictions"
POLICY_OPS = 11  # three matmuls, three bias adds, three tanh, the range's scale and shift (engine_policy)
TIMER_STEPS = 1000


KEYING = Keying(EngineItem.columns, ROW_KEYING.row_key, EngineItem.describe, "prediction")  # as the rows'


def mj_step_seconds(model: str, seed: int = 0) -> float:
    """MuJoCo's own timer of one ``mj_step`` of ``model`` (seconds; its MJCF's solver, random
    controls, K = 1), from MuJoCo C's reference run (engines.reference_run)."""
    return reference_run(load(model), model, "xml", seed, "random", 1, TIMER_STEPS)[1]


def predict_item(item: EngineItem, machine: costmodel.Machine, step_s: float, threads: int) -> dict:
    """The model's row for one item, given MuJoCo's timer of the model's step (``step_s``)."""
    rec = engine_record(item.engine)
    n, k, h = item.num_envs, item.steps, machine.host
    base = {**item.columns(), "mj_step_s": step_s, "machine_model": machine.name}
    if rec.compiles:
        return {**base, "predicted_samples_per_s": None,
                "reason": "runs XLA's program, not MuJoCo C's mj_step: the model has no count of its work"}
    host_policy = item.policy == "mlp" and not rec.policy_in_call
    calls = 1 if rec.steps_per_call and not host_policy else k
    workers = threads if rec.threaded else 1
    python = calls * h.native_call_s if rec.vectorized else n * k * h.gym_env_step_s
    physics = n * k * step_s / min(workers, n)
    policy = 0.0
    if item.policy == "mlp" and host_policy:
        m = load(item.model)
        flops = EnginePolicy.for_model(m, m.nq + m.nv, 0).flops_per_sample()
        policy = k * (POLICY_OPS * h.torch_op_s + n * flops / machine.cpu.flops_per_s)
    terms = {"python": python, "physics": physics, "policy": policy}
    seconds = sum(terms.values())
    return {**base, "predicted_samples_per_s": n * k / seconds, "terms": terms,
            "dominant": max(terms, key=terms.get), "threads": workers, "reason": None}


def predictions(items, machine: costmodel.Machine | None, threads: int, *, data_dir, machine_folder=None, log=None):
    """The saved prediction of every item, predicting (and saving) the missing ones first; a saved
    prediction is never rewritten. ``machine``: the model's machine (None: read only)."""
    timers: dict = {}

    def predict(item: EngineItem) -> dict:
        if item.model not in timers:
            timers[item.model] = mj_step_seconds(item.model)
        return predict_item(item, machine, timers[item.model], threads)

    return run(PREDICTIONS, items, predict if machine is not None else None, KEYING, data_dir=data_dir,
               progress=False, log=log, machine=machine_folder)
