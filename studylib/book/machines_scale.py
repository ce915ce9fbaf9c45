"""The sweep a GPU machine adds past the default preset's N (``GPU_SCALE``): the "Across machines"
page's table of it, one row per point of every machine folder that holds it.

    python -m studylib sweep gpu_scale --impl cuda,jax,torch,fused --num-envs 2^16,2^20,2^22,2^24 \\
        --steps 1,1000 --policy mlp       # on the GPU machine, after `python -m studylib measure`

The default preset stops at N = 2^18 (sized for 2 CPU cores); a GPU keeps gaining past it, which
is where the paper's Fig 8 and 9 curves flatten. Nothing here measures.
"""

from __future__ import annotations

import pandas as pd

from ..harness.data import store

GPU_SCALE = "gpu_scale"
COLUMNS = ["machine", "impl", "device", "num_envs", "steps", "policy", "samples_per_s", "rel_spread"]


def gpu_scale(folders: dict) -> pd.DataFrame:
    """Every machine's ``gpu_scale`` rows (``COLUMNS``), sorted by machine, impl, N and K; empty
    when no folder holds the sweep."""
    rows = [{**{c: r.get(c) for c in COLUMNS}, "machine": key}
            for key, folder in folders.items() if (folder / f"{GPU_SCALE}.json").exists()
            for r in store.read(folder / f"{GPU_SCALE}.json")["rows"]]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["machine", "impl", "num_envs", "steps"], kind="stable").reset_index(drop=True)
