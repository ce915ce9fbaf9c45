"""The robotics engines as records (studylib.harness.robotics.engines), their models (engine_models) and
their agreement with mujoco.mj_step (engine_agreement). MJX is compiled once, on
inverted_pendulum at N = 1, K = 1 (about 8 s on 2 cores), and shared by its row and its agreement;
no contact model is compiled for MJX here (hopper takes about 45 s)."""

from __future__ import annotations

import numpy as np
import pytest

from studylib.errors import ConfigError
from studylib.harness.robotics import engine_models as em
from studylib.harness.robotics.engine_agreement import agreement
from studylib.harness.robotics.engines import ENGINES, build, measure_engine

# gymnasium 1.x's v5 sources: (xml, frame_skip) and the compiled sizes (nq, nv, nu), typed in here to
# check what the module reads from the installed files
EXPECTED = {"inverted_pendulum": ("inverted_pendulum.xml", 2, (2, 2, 1), False),
            "inverted_double_pendulum": ("inverted_double_pendulum.xml", 5, (3, 3, 1), False),
            "hopper": ("hopper.xml", 4, (6, 6, 3), True),
            "walker2d": ("walker2d_v5.xml", 4, (9, 9, 6), True),
            "humanoid": ("humanoid.xml", 5, (24, 23, 17), True)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_model_record_resolves_gymnasiums_own_xml(name):
    xml, frame_skip, sizes, contacts = EXPECTED[name]
    _, path = em.model_record(name).mjcf()
    assert path.is_file() and path.parent == em.gymnasium_mujoco_dir() / "assets"
    d = em.describe(name)
    assert (d["xml"], d["frame_skip"], (d["nq"], d["nv"], d["nu"]), d["contacts"]) == EXPECTED[name]


def test_the_chain_models_and_the_solvers():
    assert (em.describe("chain8")["nq"], em.describe("chain2")["frame_skip"]) == (9, 5)
    assert em.describe("humanoid")["xml_solver"] == "PGS"  # what MJX rejects
    assert em.load("humanoid", "newton").opt.solver == 2 and em.load("humanoid").opt.solver == 0
    with pytest.raises(ConfigError, match="unknown robotics model"):
        em.model_record("cheetah")


def test_states_and_controls_are_the_same_for_every_n_and_in_range():
    m = em.load("humanoid")
    q1, v1 = em.initial_state(m, 1, 3)
    q8, v8 = em.initial_state(m, 8, 3)
    assert np.array_equal(q1[0], q8[0]) and np.array_equal(v1[0], v8[0])
    u = em.controls(m, 8, 5, 3)
    assert np.array_equal(u[:1], em.controls(m, 1, 5, 3))
    lo, hi = m.actuator_ctrlrange.T
    assert np.all(u >= lo) and np.all(u <= hi) and not np.any(em.controls(m, 2, 2, 0, "zero"))


def _one_call(engine):
    n, k = (1, 1) if not ENGINES[engine].vectorized or ENGINES[engine].compiles else (2, 2)
    return measure_engine(engine, "inverted_pendulum", n, k, repeats=1, min_seconds=0.01, contact_steps=10)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_engine_gives_a_row_or_a_reason(engine):
    row = _one_call(engine)
    assert (row["engine"], row["model"], row["nq"], row["nv"], row["nu"]) == (engine, "inverted_pendulum", 2, 2, 1)
    assert row["versions"]["mujoco"] and row["paper_row"] in ("gym", "C++", "XLA")
    if row["reason"] is not None:  # an optional engine that cannot run here: a reason, no traceback
        assert row["samples_per_s"] is None and ENGINES[engine].unavailable("inverted_pendulum") == row["reason"]
        return
    assert row["samples_per_s"] > 0 and row["samples_per_s_min"] <= row["samples_per_s"] <= row["samples_per_s_max"]
    assert row["setup_s"] >= 0 and row["contacts_per_step"] == 0.0
    assert (row["compile_s"] is not None) == ENGINES[engine].compiles


def test_the_python_loop_is_one_environment_only():
    with pytest.raises(ConfigError, match="N = 1 only"):
        build("mujoco-python", "hopper", 4, 1)
    with pytest.raises(ConfigError, match="unknown robotics engine"):
        build("bullet", "hopper", 1, 1)


def test_rollout_is_mj_step_exactly_even_with_contacts():
    """Same C code, same warm start (zero), same controls: bit for bit, hopper's contacts too."""
    rows = agreement("hopper", steps=(1, 100), engines=("mujoco-python", "mujoco-rollout"))
    assert [r["steps"] for r in rows] == [1, 100, 1, 100] and rows[-1]["contacts_per_step"] > 0
    assert all(r["max_abs_dqpos"] == 0.0 and r["max_abs_dqvel"] == 0.0 for r in rows)


def test_mjx_after_one_step_is_float32_rounding():
    """MJX steps in float32: after one RK4 step of inverted_pendulum (|qvel| about 1) its error is
    a few float32 ulps (eps = 1.2e-7), measured 5.7e-8 in qvel; 1e-6 leaves a factor of ~20."""
    (row,) = agreement("inverted_pendulum", steps=(1,), engines=("mjx",))
    assert row["reason"] is None and row["ref_max_abs_qvel"] > 0.1
    assert row["max_abs_dqpos"] < 1e-6 and row["max_abs_dqvel"] < 1e-6


def test_engines_without_a_settable_state_say_why():
    rows = agreement("inverted_pendulum", steps=(1,), engines=("envpool",))
    assert rows[0]["steps"] is None and rows[0]["reason"]


def test_the_policy_is_the_studys_mlp_squashed_into_the_control_range():
    from studylib.harness.robotics.engine_policy import EnginePolicy
    from studylib.policy import mlp_weights

    m = em.load("hopper")
    pol = EnginePolicy.for_model(m, m.nq + m.nv, seed=0)
    assert [w.shape for w, _ in pol.weights] == [(12, 64), (64, 64), (64, 3)]
    assert np.array_equal(pol.weights[1][0], mlp_weights(0, (12, 64, 64, 3)).w2)  # CartPole's init, other widths
    assert pol.flops_per_sample() == 2 * (12 * 64 + 64 * 64 + 64 * 3)
    u = pol(np.random.default_rng(0).normal(0, 10, (256, 12)))
    lo, hi = m.actuator_ctrlrange.T
    assert u.shape == (256, 3) and np.all(u >= lo) and np.all(u <= hi) and u.std() > 0.1


def test_with_the_mlp_the_python_loop_and_rollout_take_the_same_closed_loop_steps():
    """Same C steps, same observation (qpos, qvel in float64), same float32 MLP: after 20 steps, bit
    for bit on the pendulum; on hopper (contacts) to 1e-12, since rollout starts each one-step call
    from a zero solver warm start (measured 3e-16), and not the open-loop trajectory; MJX's policy
    in its scan agrees to float32. From the initial pose (the pendulum's hinge limit inactive: in
    steady state it is active, and the solver's warm start differs by 1e-19)."""
    for model, tol in (("inverted_pendulum", 0.0), ("hopper", 1e-12)):
        ends = {}
        for engine in ("mujoco-python", "mujoco-rollout"):
            start = em.initial_state(em.load(model), 1, 2)
            inst, m, _ = build(engine, model, 1, 1, seed=2, policy="mlp", state=start)
            for _ in range(20):
                inst.call()
            ends[engine] = inst.state()
            inst.close()
        assert all(np.abs(a - b).max() <= tol for a, b in zip(ends["mujoco-python"], ends["mujoco-rollout"]))
    inst, _, _ = build("mujoco-python", "hopper", 1, 1, seed=2)
    for _ in range(20):
        inst.call()
    assert not np.allclose(inst.state()[1], ends["mujoco-rollout"][1])
    python, _, _ = build("mujoco-python", "inverted_pendulum", 1, 1, seed=2, policy="mlp", solver="newton")
    mjx, _, _ = build("mjx", "inverted_pendulum", 1, 1, seed=2, policy="mlp")
    python.call(), mjx.call()
    assert np.abs(python.state()[1] - mjx.state()[1]).max() < 1e-5
    with pytest.raises(ConfigError, match="unknown engine policy"):
        build("mujoco-python", "hopper", 1, 1, policy="lstm")


def test_gymnasium_async_runs_the_v5_task_without_early_ends_where_it_can():
    from studylib.harness.robotics.engine_kinds import _no_early_end

    assert _no_early_end("Hopper-v5") == {"terminate_when_unhealthy": False}
    assert _no_early_end("InvertedPendulum-v5") == {}  # falls, ends, resets: its own semantics
    row = measure_engine("gymnasium-async", "hopper", 2, 1, repeats=1, min_seconds=0.01, contact_steps=10, policy="mlp")
    if row["reason"] is None:  # imageio installed (requirements.txt): gymnasium's MuJoCo tasks import
        assert row["samples_per_s"] > 0 and row["policy_obs_width"] == 11  # Hopper-v5's own observation


def test_steady_states_are_past_the_transient_and_the_same_for_every_n():
    """The engines start where a long run is, not at the reset pose: humanoid's states (1.5 s of
    simulated time in) touch the floor (no contact at its initial pose), differ between
    environments (drawn from several trajectories at several times), and environment i's state
    does not depend on N."""
    m = em.load("humanoid")
    q, v = em.steady_state(m, 20, 3)
    q8, v8 = em.steady_state(m, 8, 3)
    assert np.array_equal(q[:8], q8) and np.array_equal(v[:8], v8)
    assert em.warm_steps(m) == 500 and len(np.unique(q.round(6), axis=0)) == 20
    assert em.contacts(m, em.initial_state(m, 20, 3)[0])[0] == 0 and em.contacts(m, q)[0] > 2
    with pytest.raises(ConfigError, match="unknown control pattern"):
        em.steady_state(m, 2, 0, "sine")


def test_contacts_are_counted_on_the_timed_states():
    """A row's contacts are the states its timed regions step through: the Python loop on hopper
    sees its foot on the floor, as MuJoCo C's run in steady state does; envpool, whose state is
    hidden, takes that run's and says so."""
    row = measure_engine("mujoco-python", "hopper", 1, 1, repeats=2, min_seconds=0.01, contact_steps=200)
    assert row["contacts_from"] == "the timed states" and row["contacts_per_step"] > 0.5
    assert row["warm_steps"] == 750 and row["warm_s"] >= 0


def test_the_between_hook_runs_outside_the_clock():
    from studylib.harness.timing import time_regions

    calls = []
    t = time_regions(lambda: calls.append("call"), repeats=3, min_seconds=0.0,
                     between=lambda first: calls.append("first" if first else "look"))
    looked = [i for i, c in enumerate(calls) if c in ("first", "look")]
    assert len(looked) == 4 and t.calls == 1 and calls[-1] == "look"  # before the first timed region, after each
    assert calls[looked[0]:] == ["first", "call", "look", "call", "look", "call", "look"]


def test_between_starts_again_where_the_repeats_are_timed_again():
    """A stalled calibration (the 2nd call sleeps 50 ms, the others take microseconds) leaves timed
    regions far under min_seconds, which are timed again: ``between`` is told the timed regions
    start anew, and a caller that keeps only what it saw since then (the engines' contacts) sees
    exactly the kept regions' boundaries."""
    import time as _time

    from studylib.harness.timing import time_regions

    calls, seen, firsts = [], [], []

    def call():
        calls.append(1)
        if len(calls) == 2:
            _time.sleep(0.05)

    def between(first):
        if first:
            firsts.append(len(calls))
            seen.clear()
        seen.append(len(calls))

    t = time_regions(call, repeats=3, min_seconds=0.02, between=between)
    assert len(firsts) == 2 and t.calls > 100  # timed again, with the calls grown
    assert seen == [firsts[-1] + i * t.calls for i in range(4)]  # the kept regions' boundaries only


def test_the_unfused_engine_is_mjx_compiled_without_xlas_fusion_pass(monkeypatch):
    """The record says it once (``unfused_of``): the same ``make`` builds MJX's program with XLA's
    options of no fusion for the record that names the program it unfuses, and none for MJX."""
    from studylib.harness.robotics import engine_kinds

    built = {}
    monkeypatch.setattr(engine_kinds, "_Mjx", lambda *args: args[-1])  # the XLA options it was given
    for name in ("mjx", "mjx-unfused"):
        rec = ENGINES[name]
        built[name] = rec.make(rec, em.model_record("chain2"), None, np.zeros((1, 3)), np.zeros((1, 3)),
                               np.zeros((1, 1, 1)), 0, None)
    assert built == {"mjx": (), "mjx-unfused": engine_kinds.UNFUSED}
    assert ENGINES["mjx-unfused"].make is ENGINES["mjx"].make
