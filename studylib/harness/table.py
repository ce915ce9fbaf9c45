"""Plain-text tables of measurement rows, as the command line prints them."""

from __future__ import annotations


def _render(header: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    out += ["  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines]
    return "\n".join(out)


def format_table(rows) -> str:
    """Throughput rows (``harness.measure``)."""
    header = ["impl", "N", "K", "S", "C", "policy", "device", "samples/s", "min..max", "calls", "compile_s", "episodes"]
    return _render(header, [[
        r["impl"], str(r["num_envs"]), str(r["steps"]), str(r["state_factor"]), str(r["compute_factor"]),
        r["policy"], r["device"], f"{r['samples_per_s']:.3g}",
        f"{r['samples_per_s_min']:.3g}..{r['samples_per_s_max']:.3g}", str(r["calls_per_repeat"]),
        f"{r['compile_s']:.3f}", str(r["episodes_finished"]),
    ] for r in rows])


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
