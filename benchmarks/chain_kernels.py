"""Every CUDA kernel of the chain (cuda/chain_kernel.cu: n = 1 to 8 unrolled and the run-time-n
build; physics only, episodes with hashed or given controls, episodes with the fused MLP) as CuPy
compiles it with NVRTC, at sm_80 and sm_90: ptxas's registers, spills and stack per kernel. No GPU
is needed (NVRTC compiles to cubin here). The tests compile n = 1 and 8 at sm_80 only (the full
compile takes minutes on 2 cores); this prints them all.

    python benchmarks/chain_kernels.py            # sm_80 and sm_90
    python benchmarks/chain_kernels.py --arch 90
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ (the compile helpers) from a checkout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="80,90", help="comma list of compute capabilities")
    args = ap.parse_args(argv)
    from tests.test_chain_native import nvrtc_report

    spilled = 0
    for arch in args.arch.split(","):
        report = nvrtc_report(arch.strip(), subset=False)
        print(f"sm_{arch}: {len(report)} kernels")
        for entry, usage in sorted(report.items()):
            spills = usage["spill_stores"] + usage["spill_loads"]
            spilled += bool(spills)
            print(f"  {entry:28s} {usage['registers']:4d} registers  spills {usage['spill_stores']}/"
                  f"{usage['spill_loads']} bytes (stores/loads)" + ("  SPILLS" if spills else ""))
    print("no kernel spills" if not spilled else f"{spilled} kernel(s) spill")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
