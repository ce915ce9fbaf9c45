"""Plain-text tables of measurement rows, as the command line prints them."""

from __future__ import annotations


def _render(header: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    out += ["  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines]
    return "\n".join(out)


def fmt_bytes(n) -> str:
    """A size in KiB, MiB or GiB (binary units, as caches are sized)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def _simulator_columns(rows) -> list[str]:
    """["sim", its variant keys (the chain's "links")...] where a row steps a simulator other than
    CartPole, so that rows of one command at several n are told apart; [] for CartPole's rows."""
    from .. import sims

    others = [r["sim"] for r in rows if r.get("sim", sims.DEFAULT) != sims.DEFAULT]
    keys = [k for name in dict.fromkeys(others) for k in sorted(sims.sim(name).variant_keys)]
    return ["sim", *dict.fromkeys(keys)] if others else []


def format_table(rows) -> str:
    """Throughput rows (``harness.measure``), with the simulator and its variant (n) where not CartPole."""
    extra = _simulator_columns(rows)
    header = ["impl", *extra, "N", "K", "S", "C", "policy", "device", "samples/s", "min..max", "calls", "compile_s",
              "episodes"]
    return _render(header, [[
        r["impl"], *(str(r.get(k, "cartpole" if k == "sim" else "-")) for k in extra),
        str(r["num_envs"]), str(r["steps"]), str(r["state_factor"]), str(r["compute_factor"]),
        r["policy"], r["device"], f"{r['samples_per_s']:.3g}",
        f"{r['samples_per_s_min']:.3g}..{r['samples_per_s_max']:.3g}", str(r["calls_per_repeat"]),
        f"{r['compile_s']:.3f}", str(r["episodes_finished"]),
    ] for r in rows])


def format_roofline_table(rows) -> str:
    """Throughput rows placed against the ceilings (``roofline.bound_share``, ``roofline.mlp_share``)."""
    header = ["impl", "N", "K", "S", "C", "policy", "samples/s", "state", "binding ceiling", "its steps/s", "share",
              "MLP GFLOP/s", "of FMA ceiling"]
    return _render(header, [[
        r["impl"], str(r["num_envs"]), str(r["steps"]), str(r["state_factor"]), str(r["compute_factor"]), r["policy"],
        f"{r['samples_per_s']:.3g}", fmt_bytes(r["state_bytes"]), r["bound"],
        f"{r['bound_steps_per_s']:.3g}", f"{r['bound_share']:.1%}",
        f"{r['mlp_gflop_per_s']:.1f}" if "mlp_gflop_per_s" in r else "-",
        f"{r['fma_share']:.1%}" if "fma_share" in r else "-",
    ] for r in rows])


def format_roofline_report(rows) -> str:
    """The rows that ``roofline.CeilingShares`` placed, as a table under the ceilings they were
    placed against, with what each column means ("" when none was placed)."""
    from .. import costs

    placed = [r for r in rows if "bound" in r]
    if not placed:
        return ""
    r = placed[0]
    return (f"\nAgainst this CPU's ceilings (studylib.harness.model.roofline): FMA {r['fma_gflop_per_s']:.1f} GFLOP/s "
            f"(cuda/fma_peak.cpp, {r['fma_ceiling_from']}), memory {r['memory_gb_per_s']:.1f} GB/s (a stream copy, "
            f"{r['memory_ceiling_from']})\n" + format_roofline_table(placed) + "\n"
            "compute: the FMA ceiling over the step's counted flops (sin, cos and tanh are not counted, so no step "
            "reaches it). memory: the bandwidth over the bytes of state a step moves, once per call for a kernel that "
            "keeps its block of environments in cache for its K steps; above 100%, the caches serve the state. "
            f"MLP: its {costs.MLP_FLOPS} flops a sample (2 x fan_in x fan_out + fan_out; the tanh apart) against "
            "the FMA ceiling.\n")


def format_profile_table(rows) -> str:
    """Profile rows (``harness.profiler``): time shares and call / kernel counts."""
    header = ["impl", "N", "K", "policy", "device", "total_ms", "unprof_ms", "python%", "backend%", "device%",
              "backend_calls", "kernel_launches", "calls/step", "launches/step"]
    lines = []
    for r in rows:
        t = r["total_s"] or 1e-12
        lines.append([r["impl"], str(r["num_envs"]), str(r["steps"]), r["policy"], r["device"],
                      f"{r['total_s'] * 1e3:.2f}", f"{r['total_s_unprofiled'] * 1e3:.2f}",
                      f"{100 * r['python_s'] / t:.0f}", f"{100 * r['backend_s'] / t:.0f}", f"{100 * r['device_s'] / t:.0f}",
                      str(r["backend_calls"]), str(r["kernel_launches"]),
                      f"{r['backend_calls_per_step']:.2f}", f"{r['kernel_launches_per_step']:.1f}"])
    return _render(header, lines)
