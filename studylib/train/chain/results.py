"""The robot chapter's runs on disk: ``data/<machine_key>/training_robot.json``, through the
harness's store (atomic writes, one writer at a time, a committed snapshot never rewritten).

One row per run: ``TrainResult.as_dict()`` of a chain run plus ``links`` (n), ``collect_share``
(collection's share of the wall-clock to solve) and ``call_s`` (the whole call: compilation,
training and gymnasium's untimed judge), and at n = 2 the transfer check (``evaluate.transfer``:
``transfer_env``, ``transfer_return``). A row's key is (collector, n, seed, the PPO settings but
the budget, the budget): a run whose key is saved is read, not trained again, so an interrupted
plan resumes with the runs it had not finished.

    row = run_or_load(ChainRun("jax", seed=0, settings=ChainPPOSettings(links=2)), data_dir)
"""

from __future__ import annotations

import json
import math
import time

from ...harness import sweep
from ...harness.data.store import DataFile
from ..settings import BUDGET_FIELDS
from .settings import ChainRun

FILE_NAME = "training_robot"


def row_key(collector: str, links: int, seed: int, settings: dict, budget_s: float) -> str:
    kept = {k: settings[k] for k in sorted(settings) if k not in BUDGET_FIELDS}
    return json.dumps([collector, int(links), int(seed), kept, float(budget_s)], sort_keys=True)


def key_of(row: dict) -> str:
    return row_key(row["collector"], row["settings"]["links"], row["seed"], row["settings"], row["budget_s"])


def run_key(run: ChainRun) -> str:
    settings = {**run.settings.as_dict(), "num_envs": run.n}
    return row_key(run.collector, run.settings.links, run.seed, settings, run.budget_seconds)


def data_file(data_dir) -> DataFile:
    return DataFile(data_dir, FILE_NAME, key_of, kind="training")


def path_for(data_dir):
    return data_file(data_dir).path


def load(data_dir) -> list[dict]:
    """The rows saved for this machine (none if the file does not exist)."""
    return list(data_file(data_dir).rows.values())


def save_row(data_dir, row: dict):
    f = data_file(data_dir)
    with f.locked({"what": "chain training run", "collector": row["collector"], "links": row["links"]}):
        f.add_row(key_of(row), row)
    return f.path


def as_row(result, call_s: float) -> dict:
    """A TrainResult of the chain as the file's row."""
    row = result.as_dict()
    parts = row["collect_s"] + row["learn_s"] + row["eval_s"]
    row["links"] = int(row["settings"]["links"])
    row["collect_share"] = row["collect_s"] / parts if parts > 0 else math.nan
    row["call_s"] = float(call_s)
    return row


def train_row(run: ChainRun) -> dict:
    from .. import train_chain
    from .evaluate import transfer

    t = time.perf_counter()
    result = train_chain(run)
    row = as_row(result, time.perf_counter() - t)
    if result.actor is not None and row["links"] == 2:
        row.update(transfer(result.actor, result.peer.get("env"), seed=run.seed))
    return row


def run_or_load(run: ChainRun, data_dir, rows: dict | None = None) -> dict | None:
    """The saved row of ``run`` if there is one, else train it now and save its row at once (None:
    left untrained by a session that measures nothing, ``sweep.read_only``, and reported to it).
    ``rows``: the saved rows by key, if the caller read them already."""
    rows = {key_of(r): r for r in load(data_dir)} if rows is None else rows
    key = run_key(run)
    if key in rows:
        return rows[key]
    if sweep.read_only():
        sweep.report_unmeasured(FILE_NAME, [{"collector": run.collector, "links": run.settings.links, "seed": run.seed,
                                             "budget_s": run.budget_seconds, "reason": "not trained here"}])
        return None
    row = train_row(run)
    save_row(data_dir, row)
    log = sweep.session_log()
    if log is not None:
        log(f"{FILE_NAME}: {run.collector} n={row['links']} seed={run.seed}: "
            + (f"solved in {row['wall_s']:.2f} s" if row["solved"] else f"not solved ({row['stopped']}) after {row['wall_s']:.2f} s")
            + f", {row['samples']:,d} samples, collection {row['collect_share']:.0%} (call {row['call_s']:.1f} s)")
    return row
