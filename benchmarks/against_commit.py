"""The same measurements from two commits of studylib, alternated in one run: does a change slow
the hot paths down?

    python benchmarks/against_commit.py HEAD~1                 # this tree against HEAD~1
    python benchmarks/against_commit.py 10370b5 --rounds 5

The other commit is checked out with ``git worktree`` into a temporary folder (removed at the end);
each round runs ``python -m studylib bench --json`` once from each tree, in alternating order, with
``PYTHONPATH`` pointing at that tree, so machine noise falls on both alike. Points (default):
cpp simulation only (policy none) at K = 1000, N = 2^20, and fused with the MLP at K = 1000,
N = 2^16. Printed: per point, each tree's median samples/s over the rounds, their ratio, and
the ratio's min-max over rounds (this tree / the other; above 1 = this tree faster). Figures only:
nothing is saved, nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
POINTS = (
    ("cpp", 2**20, 1000, "none"),
    ("fused", 2**16, 1000, "mlp"),
)


def _bench(tree: Path, impl: str, n: int, k: int, policy: str, repeats: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-m", "studylib", "bench", "--impl", impl, "--num-envs", str(n),
                          "--steps", str(k), "--policy", policy, "--repeats", str(repeats), "--json"],
                         cwd=tree, env=env, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return float(rows[-1]["samples_per_s"])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("commit", help="the commit to compare this tree against")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="timed regions per bench call (median)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="studylib-against-") as tmp:
        other = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), a.commit], cwd=HERE, check=True,
                       capture_output=True)
        try:
            trees = {"this tree": HERE, a.commit: other}
            for impl, n, k, policy in POINTS:
                got = {name: [] for name in trees}
                for r in range(a.rounds):
                    order = list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]
                    for name, tree in order:
                        got[name].append(_bench(tree, impl, n, k, policy, a.repeats))
                ratios = [x / y for x, y in zip(got["this tree"], got[a.commit])]
                print(f"{impl:<6} N = 2^{n.bit_length() - 1:<3} K = {k} policy {policy:<5} "
                      f"this tree {statistics.median(got['this tree']):.3e} samples/s, "
                      f"{a.commit} {statistics.median(got[a.commit]):.3e}: ratio {statistics.median(ratios):.3f} "
                      f"(rounds {min(ratios):.3f}-{max(ratios):.3f}, {a.rounds} rounds)", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=HERE, capture_output=True)


if __name__ == "__main__":
    main()
