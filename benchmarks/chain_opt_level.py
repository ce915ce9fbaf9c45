"""The chain's C++ library at the optimization level it is built with (-O2) against -O3, in one
process: the two builds loaded side by side and alternated call by call (machine noise falls on
both), for the hashed controls (``cpp``) and the fused MLP (``fused``) at each n.

    python benchmarks/chain_opt_level.py                       # n = 1, 2, 4, 8, 12; N = 4096; 15 rounds
    python benchmarks/chain_opt_level.py --links 8 --rounds 31

Printed per (n, implementation): each build's median environment steps/s and the median of the
per-round ratio -O2 / -O3 with its interquartile range; and each build's compile time (one core
per part, as the library builds). n = 12 runs the run-time-n build (every n past the unrolled
ones). Figures only: nothing is saved, nothing here is a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--links", default="1,2,4,8,12", help="comma list of n")
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=50, help="K environment steps per call")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()

    from studylib import make
    from studylib.native import build
    from studylib.sims.chain import ChainParams, backend

    built = build.LIBRARIES["chain_cpu"]
    flags_o3 = tuple(f for f in built.extra_flags if f != "-O2")  # CXXFLAGS' -O3 then stands
    build.LIBRARIES.setdefault("chain_cpu_O3", dataclasses.replace(built, name="chain_cpu_O3", extra_flags=flags_o3))
    libs = {}
    for tag, name in (("-O2", "chain_cpu"), ("-O3", "chain_cpu_O3")):
        info = build.build_info(name)
        libs[tag] = build.library(name)
        state = "cached" if info["cached"] else f"built in {info['build_seconds']:.1f} s"
        print(f"{tag}: {info['path']} ({state}; flags {' '.join(info['flags'])})")
    current = {"lib": libs["-O2"]}
    backend.library = lambda name="chain_cpu": current["lib"]  # what the chain's backend calls

    for n in (int(x) for x in args.links.split(",")):
        for impl, policy in (("cpp", "none"), ("fused", "mlp")):
            env = make(impl, args.num_envs, sim="chain", params=ChainParams(links=n), seed=1)
            rates = {tag: [] for tag in libs}
            for lib in libs.values():  # warm-up of each build
                current["lib"] = lib
                env.rollout(args.steps, policy)
            for r in range(args.rounds):
                for tag in (("-O2", "-O3") if r % 2 else ("-O3", "-O2")):
                    current["lib"] = libs[tag]
                    start = time.perf_counter()
                    env.rollout(args.steps, policy)
                    rates[tag].append(args.num_envs * args.steps / (time.perf_counter() - start))
            ratios = sorted(b / a for a, b in zip(rates["-O3"], rates["-O2"]))
            q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
            print(f"n = {n:2d} {impl:5s} {policy:4s}  -O3 {statistics.median(rates['-O3']):.3g}  "
                  f"-O2 {statistics.median(rates['-O2']):.3g} environment steps/s;  -O2 / -O3 "
                  f"{statistics.median(ratios):.3f} (IQR {q1:.3f}-{q3:.3f})")


if __name__ == "__main__":
    main()
