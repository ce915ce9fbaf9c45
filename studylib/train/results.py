"""Training results on disk: ``data/<machine_key>/training.json``, through the harness's store.

The one module that knows where training results live and what identifies one. A row is a
``TrainResult.as_dict()``; its key is (collector, num_envs, seed, the PPO settings but the budget,
the time budget): a rerun with the same key reads the saved row instead of training again, and an
interrupted sweep resumes. The file is the study's one format (studylib.harness.data.store: runs with
provenance, rows, atomic writes, one writer at a time).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..harness.data.provenance import machine_info
from ..harness.data.store import DataFile

FILE_NAME = "training"


def provenance() -> dict:
    """Machine, software versions, commit (+ dirty flag) and date of a run."""
    return machine_info()


POPULATION_TRAINER = "jax-ppo-population"  # a seed trained in a vmapped population (ppo_jax.train_population)
TORCH_POPULATION_TRAINER = "torch-ppo-population"  # a seed of the batched PyTorch PPO (population_torch)
POPULATION_TRAINERS = (POPULATION_TRAINER, TORCH_POPULATION_TRAINER)


def row_key(collector: str, num_envs: int, seed: int, settings: dict, budget_s: float, population: bool = False) -> str:
    """A row's identity as a string (JSON of the parts, budget fields of the settings left out);
    a seed trained in a population is marked (not the population's size: a resumed population has
    fewer seeds, and a seed's learning does not depend on its neighbours)."""
    from .settings import BUDGET_FIELDS

    kept = {k: settings[k] for k in sorted(settings) if k not in BUDGET_FIELDS}
    parts = [collector, int(num_envs), int(seed), kept, float(budget_s)]
    if population:
        parts.append("population")
    return json.dumps(parts, sort_keys=True)


def key_of(row: dict) -> str:
    return row_key(row["collector"], row["num_envs"], row["seed"], row["settings"], row["budget_s"],
                   row.get("trainer") in POPULATION_TRAINERS)


def data_file(data_dir) -> DataFile:
    return DataFile(data_dir, FILE_NAME, key_of, kind="training")


def path_for(data_dir) -> Path:
    return data_file(data_dir).path


def load(data_dir) -> list[dict]:
    """The rows saved for this machine (none if the file does not exist)."""
    return list(data_file(data_dir).rows.values())


def save_row(data_dir, row: dict) -> Path:
    """Add one row (replacing a saved row of the same key) and rewrite the file atomically."""
    f = data_file(data_dir)
    with f.locked({"what": "training run", "collector": row["collector"], "num_envs": row["num_envs"]}):
        f.add_row(key_of(row), row)
    return f.path


def find(rows: list[dict], key: str) -> dict | None:
    return next((r for r in rows if key_of(r) == key), None)
