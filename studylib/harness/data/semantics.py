"""What a saved row means: the version of the code semantics that measured it.

A saved row is reused (a rebuild reads it instead of measuring) only when it was measured by code
of the same semantics as today's: every row carries a stamp ``"<kind>/<version>"`` and the version
of its kind is the one below. A row of another version, or one without a stamp, is *stale*: a
build measures its point again (the row is replaced), a read of another machine's snapshot leaves
it out ("stale: ..."), and ``python -m studylib data check`` lists it.

Bump a kind's version, with a line in its history, whenever what its rows' numbers mean changes:
a knob's meaning (the paper's S became 4·S floats a row, not S CartPoles), what is timed, the
dynamics or the policy inside the timed region, a unit, a ceiling's method (the FMA loop's
accumulators). A refactor that leaves the numbers' meaning alone does not bump anything: that is
the point of a version over a hash of the sources, which every comment would invalidate.

Kinds (who measures them):
    throughput      samples/s of a MeasurePoint (impl, N, K, S, C, policy, device): harness.measure;
                    the sweeps fig2_cartpole, fig4, fig4_k, fig8, fig9, beyond and ``studylib sweep``
    profile         the Fig 5/6 time breakdown and call counts: harness.profiler
    brax            Brax and our CartPole through jax_functional, samples/s and XLA's counts: book.pages.brax
    ceiling         the roofline's ceilings (FMA peak, stream bandwidth, physics, GEMM): harness.model.roofline
    calibration     the cost model's per-call and per-operation costs: harness.model.calibrate
    atari           Atari frames/s per implementation: harness.atari
    atari-breakdown the Atari step's phases: harness.atari
    training        PPO runs to a solve: studylib.train
    prediction      the cost model's samples/s for a point, made before it is measured: harness.robotics.chain_study,
                    harness.robotics.engine_predict
    engine          a robotics engine's mj_steps/s on a MuJoCo model (MuJoCo C, MJX, envpool): harness.robotics.engine_study
    formulation     an XLA formulation of the chain's physics, env steps/s and XLA's counts: harness.robotics.chain_formulations

History:
    1 (every kind, 2026-11-25): the first stamped rows. Rows saved before carry no stamp and are
      stale: nothing recorded which S they meant (before and after the paper's S), nor which FMA
      loop measured a ceiling.
    prediction 1 (2026-11-25): the first predictions (the chain's, before its measurements).
    engine 1 (2026-11-25): the first robotics-engine rows. Rows gained a ``policy`` column ("mlp":
      the study's MLP inside the timed calls) and MuJoCo's timer (``mj_step_s``) without a new
      version: a row without ``policy`` was measured open loop, as policy "none" rows still are.
    engine 2 (2026-11-26): timed in steady state. Version 1 timed every environment from its initial
      pose, so a row at N = 1024 timed about 30 early, contact-poor steps per environment and the
      Python loop at N = 1 about 10,000 (humanoid: 36 us a step in its first 250 steps, 96 us
      after); its contacts came from a separate run. Now every engine starts past 1.5 s of
      simulated time and its contacts are counted on the timed states (harness.robotics.engines).
    formulation 1 (2026-11-26): the first rows of XLA's formulations of the chain.
"""

from __future__ import annotations

VERSIONS = {
    "throughput": 1,
    "profile": 1,
    "brax": 1,
    "ceiling": 1,
    "calibration": 1,
    "atari": 1,
    "atari-breakdown": 1,
    "training": 1,
    "prediction": 1,
    "engine": 2,
    "formulation": 1,
}
FIELD = "semantics"  # the row's column holding its stamp


def stamp(kind: str) -> str:
    """The stamp today's code gives a row of ``kind``; KeyError names the kinds for an unknown one."""
    if kind not in VERSIONS:
        raise KeyError(f"unknown row kind {kind!r}; kinds: {', '.join(VERSIONS)}")
    return f"{kind}/{VERSIONS[kind]}"


def staleness(row: dict, kind: str | None = None) -> str:
    """Why ``row`` is stale for today's code ("" when it is current). ``kind``: the kind its file
    holds (None: the kind its own stamp names, as ``data check`` reads any file)."""
    found = row.get(FIELD)
    if not found:
        return "measured before rows recorded their semantics"
    row_kind, _, version = str(found).partition("/")
    kind = kind or row_kind
    if kind not in VERSIONS:
        return f"of a kind today's code does not measure ({row_kind!r})"
    if row_kind != kind:
        return f"a {row_kind!r} row in a file of {kind!r} rows"
    if version != str(VERSIONS[kind]):
        return f"measured by {kind} semantics version {version}, today's is {VERSIONS[kind]}"
    return ""
