"""XLA's formulations of the chain, measured: the program XLA:CPU is given decides its speed.

The paper's §7 asks how "manual kernel fusion compares to the kernels produced by XLA" on robotics
simulators. XLA compiles the program it is given: the same physics stated as the reference's
columns (``dynamics.env_step`` on jax.numpy: the mass matrix coordinate by coordinate), with
sine and cosine as polynomials, or by the articulated-body algorithm (loops over the links, or
unrolled) runs at rates an order of magnitude apart (``sims.chain.dynamics_xla``). A comparison
against XLA is fair only against its fastest formulation, so each is measured here, K = ``steps``
environment steps under ``lax.scan`` at N environments (float32, finished environments reset),
with what XLA says of its compiled program: ``cost_analysis``'s flops and transcendentals per
environment step (a loop body counted once: only a program whose one loop is the scan over K
counts the whole step, ``whole_program``), and its ``while`` loops. Beside them, the study's count
of the physics (``dynamics.chain_flops``: the mass-matrix method's flops, sin/cos/sqrt apart), so
that the table shows what the compiler's program does beyond it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from ..sweep import Keying, keyed_by, run
from ..timing import time_regions

FILE = "chain_formulations"
COLUMNS = ("formulation", "links", "num_envs", "steps")


@dataclass(frozen=True)
class FormulationItem:
    """One formulation (``dynamics_xla.FORMULATIONS``) at n links, N environments, K steps a call."""

    formulation: str
    links: int
    num_envs: int
    steps: int = 100
    repeats: int = 3
    min_seconds: float = 0.1

    def columns(self) -> dict:
        return {c: getattr(self, c) for c in COLUMNS}

    def describe(self) -> str:
        return f"{self.formulation} n={self.links} N={self.num_envs} K={self.steps}"


KEYING = Keying(FormulationItem.columns, keyed_by(*COLUMNS), FormulationItem.describe, "formulation")


COLUMNS_MAX_LINKS = 8  # the columns' program grows like n³: XLA:CPU compiled it in 96 s at n = 8, not in 150 s at 16


def formulation_items(formulations, links, num_envs: int, steps: int, repeats=3,
                      min_seconds=0.1) -> list[FormulationItem]:
    """Every formulation at every n, the columns ones up to ``COLUMNS_MAX_LINKS``."""
    from ...sims.chain import dynamics_xla

    for name in formulations:
        if name not in dynamics_xla.FORMULATIONS:
            raise ConfigError(f"unknown formulation {name!r}; valid: {', '.join(dynamics_xla.FORMULATIONS)}")
    return [FormulationItem(f, n, num_envs, steps, repeats, min_seconds) for n in links for f in formulations
            if not (f.startswith("columns") and n > COLUMNS_MAX_LINKS)]


def measure_formulation(item: FormulationItem) -> dict:
    """One row: environment steps/s (median over ``repeats`` timed regions of harness.timing),
    compile seconds, XLA's counts per environment step of one environment and the loops of the
    compiled program, the study's counted flops and transcendentals beside them."""
    import jax
    import jax.numpy as jnp

    from ...sims.chain import ChainParams, dynamics, dynamics_xla

    p = ChainParams(links=item.links)
    n1, envs = item.links + 1, item.num_envs
    rng = np.random.default_rng(0)
    reset = np.concatenate((rng.uniform(-0.1, 0.1, (envs, n1)), 0.1 * rng.standard_normal((envs, n1))), 1)
    reset = jnp.asarray(reset, jnp.float32)
    ctrl = jnp.asarray(rng.uniform(-1, 1, envs), jnp.float32)
    fn = jax.jit(dynamics_xla.rollout_program(dynamics_xla.FORMULATIONS[item.formulation], p, item.steps))
    t0 = time.perf_counter()
    compiled = fn.lower(reset, ctrl, reset).compile()
    compile_s = time.perf_counter() - t0
    cost = compiled.cost_analysis()
    cost = (cost[0] if isinstance(cost, (list, tuple)) else cost) or {}
    loops = compiled.as_text().count(" while(")
    state = [reset]

    def call():
        state[0] = compiled(state[0], ctrl, reset)[0]

    t = time_regions(call, repeats=item.repeats, min_seconds=item.min_seconds,
                     sync=lambda: state[0].block_until_ready())
    s = t.summary(envs * item.steps)
    whole = loops == 1  # the scan over K alone: its body is one whole environment step of N (XLA omits zero counts)
    per_step = lambda key: cost.get(key, 0.0) / envs if whole else None
    return {**item.columns(), "env_steps_per_s": s["median"], "env_steps_per_s_min": s["min"],
            "env_steps_per_s_max": s["max"], "compile_s": compile_s, "xla_loops": loops,
            "whole_program": whole, "xla_flops": per_step("flops"),
            "xla_transcendentals": per_step("transcendentals"), "xla_bytes": per_step("bytes accessed"),
            "counted_flops": dynamics.chain_flops(item.links, p.frame_skip),
            "counted_transcendentals": dynamics.chain_transcendentals(item.links, p.frame_skip),
            "frame_skip": p.frame_skip, "jax": jax.__version__, "backend": jax.default_backend(),
            "chosen": dynamics_xla.best_formulation(p) == item.formulation}


def formulation_rows(items, *, data_dir, machine=None):
    """The saved row of every item, measuring the missing ones (sweep.run: resumable, provenance)."""
    return run(FILE, items, measure_formulation, KEYING, data_dir=data_dir, progress=False, log=lambda msg: None,
               machine=machine)
