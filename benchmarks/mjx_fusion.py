"""MJX on the n-link chain's MJCF, compiled by XLA with and without its HLO pass "fusion" (the
``mjx`` and ``mjx-unfused`` engines of studylib.harness.robotics.engines): for each n, the compile
seconds, XLA's own cost analysis (flops per environment step, fusions in the program) and the
seconds of one call (N environments, one mj_step each, the median of ``--repeats`` after a warm-up
call), of the very program the engines compile (engine_kinds._mjx_compiled). It shows where XLA:CPU's fused program stops paying: its run time grows far faster than the
work it counts. A call over ``--give-up`` seconds is reported and not repeated.

    python benchmarks/mjx_fusion.py                 # n = 2, 4, 6, 8, N = 16
    python benchmarks/mjx_fusion.py --links 8 16 --num-envs 256
"""

from __future__ import annotations

import argparse
import re
import statistics
import time


def probe(links: int, num_envs: int, xla_options: tuple, repeats: int, give_up: float) -> dict:
    """The ``mjx`` engine's own program (engine_kinds._mjx_compiled: jit(vmap(scan(mjx.step)))) for
    the chain of ``links``, one mj_step per call, compiled with ``xla_options``."""
    import jax
    import numpy as np

    from studylib.harness.robotics import engine_models as em
    from studylib.harness.robotics.engine_kinds import _mjx_compiled

    name = f"chain{links}"
    m = em.load(name, "newton")
    init, fn, compile_s, _, _ = _mjx_compiled(name, m, num_envs, 1, None, xla_options)
    data = init(np.zeros((num_envs, m.nq), np.float32), np.zeros((num_envs, m.nv), np.float32))
    ctrl = np.random.default_rng(0).uniform(-1, 1, (num_envs, 1, m.nu)).astype(np.float32)
    cost = fn.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    fusions = len(re.findall(r"^\s*\S+ = .* fusion\(", fn.as_text(), re.MULTILINE))
    seconds = []
    for _ in range(1 + repeats):  # the first call warms up
        start = time.perf_counter()
        jax.block_until_ready(fn(data, ctrl))
        seconds.append(time.perf_counter() - start)
        if seconds[-1] > give_up:
            break
    return {"compile_s": compile_s, "flops": cost.get("flops", 0.0) / num_envs, "fusions": fusions,
            "call_s": statistics.median(seconds[1:] or seconds)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--links", type=int, nargs="+", default=[2, 4, 6, 8])
    ap.add_argument("--num-envs", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--give-up", type=float, default=5.0, help="seconds: a slower call is not repeated")
    args = ap.parse_args(argv)
    from studylib.harness.data.provenance import machine_key
    from studylib.harness.robotics.engine_kinds import UNFUSED

    print(f"machine {machine_key()}; N = {args.num_envs}, one mj_step per call")
    print(f"{'n':>3} {'XLA program':>12} {'compile s':>10} {'flops/step':>11} {'fusions':>8} {'call s':>10}")
    for links in args.links:
        for name, options in (("fused", ()), ("unfused", UNFUSED)):
            r = probe(links, args.num_envs, options, args.repeats, args.give_up)
            print(f"{links:>3} {name:>12} {r['compile_s']:>10.1f} {r['flops']:>11,.0f} {r['fusions']:>8} "
                  f"{r['call_s']:>10.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
