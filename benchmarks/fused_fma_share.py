"""The fused kernel with the MLP against the FMA ceiling and against XLA, per instruction set,
alternated in one run: how close to the multiply-add peak does simulation+inference fusion get,
and what keeps it from the peak?

    python benchmarks/fused_fma_share.py                       # N = 2^16, K = 1000, 3 rounds
    python benchmarks/fused_fma_share.py --num-envs 4096 --steps 300 --rounds 5

Each round runs ``python -m studylib bench --json --policy mlp`` once per variant, in an order
that alternates from round to round, so machine noise falls on all alike:

* ``jax``: the JAX/XLA implementation (K steps per call), the baseline of the ratios;
* ``fused``: the fused kernel as the library builds it (``-march=native``);
* ``fused AVX2``: the same source built for x86-64-v3 (AVX2 and FMA, 16 vector registers) through
  ``$STUDYLIB_NATIVE_ARCH``, with its own FMA ceiling (``cuda/fma_peak.cpp`` built alike), on an
  x86 CPU with AVX-512 only (on an AVX2 CPU it is the native build);
* ``fused, tanh as clamp``: a diagnostic build (``-DFUSED_TANH_CLAMP_ONLY``, cuda/fused_cpu.cpp)
  with the MLP's tanh replaced by one clamp: what the kernel would reach if the 128 tanh per
  sample cost one operation each. Its logits are wrong; it measures the tanh's cost only.

and, for each fused build, ``MLP alone``: the same library's forward pass on N observations
(``fused_mlp_logits``: the rollout's MLP tiles, no simulation, no resets), so that the distance from
the operation bound splits into the MLP's own loop and the simulation around it. It is one call per
N observations (threads started, observations transposed in and out each call): on the 2-core
AVX-512 Xeon it runs at its plateau from N = 2^14, 14% below it at N = 4096.

Printed per variant: the median samples/s over rounds, the MLP's GFLOP/s (9090 flops per sample,
counted from its shape), the share of its build's FMA ceiling (median, min-max over rounds) and
its rate over jax's in the same round (median, min-max); for an MLP alone, the share of its rate the
build's rollout keeps in the same round instead. Each build's ceiling is the best of the
readings its bench processes took (every process measures it again). Also the bound the operation count puts
on the share: the MLP's multiply-adds against those plus its tanh's vector operations.
Figures only: nothing is saved, nothing here is a test.

What it gave where the kernel was tuned (a 2-core AVX-512 Xeon, N = 2^16, K = 1000, 3 alternating
rounds, two runs on different days): ``fused`` at 56-58% of the AVX-512 ceiling, the AVX2 build at
67-68% of its own, the tanh-as-clamp diagnostic at 77-82%. Against the operation bound (the MLP's
multiply-adds with the FMA ports busy on nothing else, ``studylib.costs.fma_port_bound``: 74.0% on
AVX-512, whose division is three uops on those ports; 75.5% on AVX2, whose clamp is two
operations; 98.6% for the diagnostic) that is 75-78%, 89-90% and 78-84%: most of the distance from
the bound is the loop's (loads, tile ends, physics), the rest on AVX-512 its divisions, which the
divider serves one zmm per ~10 cycles (a zmm vdivps alone costs the FMA ports 1.5 cycles while the
divider keeps up: measured with 24 FMA chains beside it). The MLP alone reached 60.5% of the
AVX-512 ceiling, 82% of its bound (perf's samples in mlp_tile: the k loop 56%, layer 1 21%, the
tiles' tanh 23%), and the rollout kept 93.5% of its rate; the AVX2 build 67.5%, 89% and 98.5%.

Tried there and not kept (each no faster, or slower, on both ISAs unless it says): each tile's tanh
software-pipelined into the next tile's k loop; a layer's 64 tanh as one pass after its sums
(slower on AVX-512, even on AVX2); a reciprocal estimate with Newton steps in place of vdivps, and
AVX2's clamp as an abs, a min and a sign; each tile's divisions deferred through L1 into the next
tile's k loop, three per eighth of it, with layer 3 as a pass of its own (3-9% slower on AVX-512);
one division for two tanh (x_a P_a (Q_b r) and x_b P_b (Q_a r) with r = 1 / (Q_a Q_b)): the MLP
alone 2% faster, the rollout no faster. mlp.cuh's mlp_forward itself, fully unrolled by GCC, is
~90 KB of code with the tile spilled across it: a third of the FMA peak, hence the micro-kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parents[1]
AVX2_ARCH = "x86-64-v3"

# The start of each variant's process: the fused library built with extra compiler flags (argv[1]:
# the diagnostic's; none for the library as it is).
_FLAGGED_BUILD = """
import dataclasses, sys
from studylib.native import build
spec = build.LIBRARIES["fused_cpu"]
build.LIBRARIES["fused_cpu"] = dataclasses.replace(spec, extra_flags=spec.extra_flags + tuple(sys.argv[1].split()))
"""
# A rollout: `python -m studylib bench` on that build (argv[2:]: its arguments).
_ROLLOUT = _FLAGGED_BUILD + """
from studylib.__main__ import main
sys.exit(main(sys.argv[2:]))
"""
# Its MLP alone: fused_mlp_logits on N observations, the median of `repeats` timed regions of at
# least 0.3 s each, and an FMA ceiling read in the same process, as bench's.
_MLP_ALONE = _FLAGGED_BUILD + """
import json, statistics, time
import numpy as np
from studylib import costs
from studylib.harness.model import roofline
from studylib.native import library, pack_weights
from studylib.policy import mlp_weights
n, repeats = int(sys.argv[2]), int(sys.argv[3])
lib, weights = library("fused_cpu"), pack_weights(mlp_weights(0))
obs = np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32)
logits = np.empty((n, 2), np.float32)
call = lambda: lib.fused_mlp_logits(obs.ctypes.data, logits.ctypes.data, weights.ctypes.data, n)
call()
rates = []
for _ in range(repeats):
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < 0.3:
        call()
        calls += 1
    rates.append(calls * n / (time.perf_counter() - start))
rate = statistics.median(rates)
print(json.dumps({"samples_per_s": rate, "mlp_gflop_per_s": rate * costs.MLP_FLOPS / 1e9,
                  "fma_gflop_per_s": roofline.fma_flops_per_s() / 1e9}))
"""


class Variant(NamedTuple):
    impl: str
    env: dict  # extra environment (the -march of the build)
    flags: str  # extra compiler flags of the fused library
    mlp_alone_of: str | None = None  # the variant whose build's MLP this one times alone (None: a rollout)

    @property
    def build(self) -> str:
        return self.env.get("STUDYLIB_NATIVE_ARCH", "native")


def variants() -> dict[str, Variant]:
    """name -> Variant: jax, the fused builds, then each fused build's MLP alone."""
    from studylib.harness.data.provenance import machine_identity

    out = {"jax": Variant("jax", {}, ""), "fused": Variant("fused", {}, "")}
    if machine_identity()["isa"] == "avx512":  # the ISA level the machine key names
        out["fused AVX2"] = Variant("fused", {"STUDYLIB_NATIVE_ARCH": AVX2_ARCH}, "")
    out["fused, tanh as clamp"] = Variant("fused", {}, "-DFUSED_TANH_CLAMP_ONLY")
    for name, v in list(out.items())[1:]:
        out[f"{name} MLP alone"] = v._replace(mlp_alone_of=name)
    return out


def _bench(v: Variant, n: int, k: int, repeats: int) -> dict:
    if v.mlp_alone_of is not None:
        cmd = [sys.executable, "-c", _MLP_ALONE, v.flags, str(n), str(repeats)]
    else:
        cmd = [sys.executable, "-c", _ROLLOUT, v.flags, "bench", "--impl", v.impl, "--num-envs", str(n),
               "--steps", str(k), "--policy", "mlp", "--repeats", str(repeats), "--json"]
    proc = subprocess.run(cmd, cwd=HERE, env={**os.environ, **v.env}, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:2])} ... failed:\n{proc.stderr[-2000:]}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return rows[-1]


def _spread(values) -> str:
    return f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", type=int, default=2**16)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="timed regions per bench call (median)")
    a = ap.parse_args(argv)
    todo = variants()
    got = {name: [] for name in todo}
    for r in range(a.rounds):
        order = list(todo.items()) if r % 2 == 0 else list(todo.items())[::-1]
        for name, v in order:
            got[name].append(_bench(v, a.num_envs, a.steps, a.repeats))
            print(f"round {r + 1}/{a.rounds}: {name} {got[name][-1]['samples_per_s']:.3g} samples/s", file=sys.stderr)
    jax = [row["samples_per_s"] for row in got["jax"]]
    # Each build's ceiling: the best of every bench process's (one per variant and round). A ceiling
    # is the best the machine does; one read low while the other core was busy would lift that
    # round's share.
    build_of = {name: v.build for name, v in todo.items()}
    readings = {}
    for name, rows in got.items():
        readings.setdefault(build_of[name], []).extend(row["fma_gflop_per_s"] for row in rows if "fma_gflop_per_s" in row)
    ceiling = {b: max(v) for b, v in readings.items() if v}
    print(f"N = {a.num_envs}, K = {a.steps}, MLP policy, {a.rounds} alternating rounds; median (min-max over rounds)")
    for name, rows in got.items():
        rate = [row["samples_per_s"] for row in rows]
        line = f"{name:22s} {_spread(rate)} samples/s"
        if "mlp_gflop_per_s" in rows[0]:
            top, seen = ceiling[build_of[name]], readings[build_of[name]]
            line += (f", {_spread([row['mlp_gflop_per_s'] for row in rows])} GFLOP/s = "
                     f"{_spread([100 * row['mlp_gflop_per_s'] / top for row in rows])} % of its build's FMA ceiling "
                     f"({top:.3g} GFLOP/s, -march={build_of[name]}: the best of {len(seen)} readings, the lowest "
                     f"{min(seen):.3g})")
        if todo[name].mlp_alone_of is not None:  # no simulation: its rate is not comparable with jax's
            rollout = [row["samples_per_s"] for row in got[todo[name].mlp_alone_of]]
            line += f"; the rollout keeps {_spread([100 * r / m for r, m in zip(rollout, rate)])} % of it"
        elif name != "jax":
            line += f"; over jax {_spread([x / j for x, j in zip(rate, jax)])}x"
        print(line)
    from studylib import costs

    ops = {isa: t.operations for isa, t in costs.MLP_TANH_ON_ISA.items()}
    print(f"operation bound (studylib.costs.fma_port_bound): {costs.fma_port_bound(ops['avx2']):.1%} of the ceiling "
          f"with {ops['avx2']} FMA-port operations per tanh (AVX2: a two-operation clamp), "
          f"{costs.fma_port_bound(ops['avx512']):.1%} with {ops['avx512']} (AVX-512: a three-uop division), "
          f"{costs.fma_port_bound(1):.1%} with one (the diagnostic)")


if __name__ == "__main__":
    main()
