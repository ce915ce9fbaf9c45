"""The robotics engines' measurements as a resumable sweep (engines.json, kind "engine"): which
(engine, model, N, K) a chapter asks for, and one row each from ``engines.measure_engine``.

The paper's Fig 2 compares CartPole with Brax's robotics environments by XLA throughput alone; §2
names the simulators RL uses ("MuJoCo, PyBullet, gym"). Each engine plays one of the paper's rows
(its record's ``paper_row``): ``mujoco-python`` gym's (mj_step in a Python loop, N = 1 by its
record), ``mujoco-rollout`` and ``envpool`` C++'s (threads, one per core), ``mjx`` XLA's
(jit(vmap(scan K))). A sample is one mj_step of one environment, as MuJoCo counts steps; a model's
environment step is its gymnasium frame skip of them (``frame_skip`` in every row).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from .engines import engine_record, measure_engine
from ..sweep import Keying, keyed_by, run

FILE = "engines"
COLUMNS = ("engine", "model", "num_envs", "steps", "policy")


@dataclass(frozen=True)
class EngineItem:
    """One engine measurement: K = ``steps`` mj_steps per call of N = ``num_envs`` environments,
    controls open loop (policy "none") or from the study's MLP ("mlp": harness.robotics.engine_policy)."""

    engine: str
    model: str
    num_envs: int
    steps: int
    policy: str = "none"
    repeats: int = 3
    min_seconds: float = 0.2

    def columns(self) -> dict:
        return {c: getattr(self, c) for c in COLUMNS}

    def describe(self) -> str:
        return f"{self.engine} {self.model} N={self.num_envs} K={self.steps} policy={self.policy}"


OPEN_LOOP = "none"  # the policy of a row saved before rows named theirs: they all ran open loop


def _row_key(row: dict) -> tuple:
    """The columns' values; a row without a policy ran open loop (OPEN_LOOP)."""
    return keyed_by(*COLUMNS)({"policy": OPEN_LOOP, **row})


def with_policy(frame):
    """``frame`` (rows or predictions as a DataFrame) with every row's policy: OPEN_LOOP where it has none."""
    return frame.assign(policy=frame["policy"].fillna(OPEN_LOOP) if "policy" in frame else OPEN_LOOP)


KEYING = Keying(EngineItem.columns, _row_key, EngineItem.describe, "engine")


def engine_items(engines, models, num_envs, steps, cap_for, *, compiled_models=None, compiled_num_envs=None,
                 compiled_policies=None, policies=("none",), repeats=3, min_seconds=0.2):
    """(items, dropped, unsupported): every engine × model × policy × N × K the records allow (dropped:
    (engine, N, K, 1, 1) above the cap, once for every model): an engine that is not
    vectorized at N = 1 and K = 1 only (the gym row steps one environment, one step a call); one
    that does not run K steps in one call (``steps_per_call``) at K = 1 only (its K would be K
    calls), and so, with the policy "mlp", is one whose policy runs between its calls (its record's
    ``policy_in_call``: from Python, one step a call), while one that compiles runs the MLP at the
    largest K only (one compile, the MLP fused into its K steps); an engine that compiles (XLA) on ``compiled_models`` only (None: every model), since
    each (model, N, K) is a compile of its own, at ``compiled_num_envs`` (None: ``num_envs``) and
    under ``compiled_policies`` (None: ``policies``);
    N·K within ``cap_for(engine)``. ``unsupported``: (engine, model, reason) of the pairs the engine
    cannot run here (its record's ``unavailable``: a missing package, a model it has no task for),
    left out of the plan so that a rebuild does not try them again."""
    items, dropped, unsupported = [], [], []
    for engine in engines:
        rec = engine_record(engine)
        for model in models:
            if rec.compiles and compiled_models is not None and model not in compiled_models:
                continue
            reason = rec.unavailable(model) or rec.not_planned(model)
            if reason is not None:
                unsupported.append((engine, model, reason))
                continue
            ns = compiled_num_envs if rec.compiles and compiled_num_envs else num_envs
            for policy in (compiled_policies if rec.compiles and compiled_policies is not None else policies):
                in_call = rec.steps_per_call and (policy == "none" or rec.policy_in_call)
                ks = steps if in_call else [1]
                if rec.compiles and policy != "none":
                    ks = [max(steps)]  # each K a compile of its own: the MLP at the largest K only
                grid = [(1, 1)] if not rec.vectorized else [(n, k) for k in ks for n in ns]
                for n, k in grid:
                    if n * k > cap_for(engine):
                        if (engine, n, k, 1, 1) not in dropped:  # as every chapter lists them: (name, N, K, S, C)
                            dropped.append((engine, n, k, 1, 1))
                        continue
                    items.append(EngineItem(engine, model, n, k, policy, repeats, min_seconds))
    return items, dropped, unsupported


def measure_item(item: EngineItem) -> dict:
    """``measure_engine``'s row; an engine that cannot run the model here (found only now) is a
    skipped item (its reason saved with it), not a row."""
    row = measure_engine(item.engine, item.model, item.num_envs, item.steps, repeats=item.repeats,
                         min_seconds=item.min_seconds, policy=item.policy)
    if row["reason"] is not None:
        raise ConfigError(row["reason"])
    return row


def engine_rows(items, *, data_dir, machine=None, log=None):
    """The saved row of every item, measuring the missing ones (sweep.run: resumable, provenance)."""
    return run(FILE, items, measure_item, KEYING, data_dir=data_dir, progress=False, log=log, machine=machine)
