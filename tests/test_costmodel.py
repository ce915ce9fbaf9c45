"""The cost model (studylib.harness.model.costmodel) on synthetic machines: each regime reachable, the limits in
K and N, the paper's S, the GPU's host/device overlap; its calibration items, the chapter's
validation helpers and the ``advise`` command line."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from studylib import costs, sims
from studylib.harness.model import costmodel
from studylib.__main__ import main
from studylib.book.pages import model
from studylib.errors import ConfigError

COUNTS = costmodel.Counts({
    ("torch", "mlp"): {"calls_per_step": 70, "calls_per_call": 2, "kernels_per_step": 60, "kernels_per_call": 1},
    ("torch", "none"): {"calls_per_step": 80, "calls_per_call": 2, "kernels_per_step": 70, "kernels_per_call": 1},
    ("jax", "mlp"): {"calls_per_step": 0, "calls_per_call": 2, "kernels_per_step": 100, "kernels_per_call": 7},
    ("jax", "none"): {"calls_per_step": 0, "calls_per_call": 2, "kernels_per_step": 100, "kernels_per_call": 7},
    ("gym", "mlp"): {"calls_per_step": 10, "calls_per_call": 0, "kernels_per_step": 6, "kernels_per_call": 0},
    ("gym", "none"): {"calls_per_step": 0, "calls_per_call": 0, "kernels_per_step": 0, "kernels_per_call": 0},
    ("cpp", "mlp"): {"calls_per_step": 12, "calls_per_call": 0, "kernels_per_step": 8, "kernels_per_call": 0},
    ("cpp", "none"): {"calls_per_step": 0, "calls_per_call": 1, "kernels_per_step": 0, "kernels_per_call": 1},
})
HOST = costmodel.HostCosts(torch_op_s=5e-6, jax_call_s=2e-5, native_call_s=5e-6, xla_kernel_s=5e-8, gym_env_step_s=5e-6)
CPU = costmodel.Processor(1e11, 2.5e10, transcendental_s=1e-10)
SYNTH = costmodel.Machine("synthetic CPU", CPU, HOST, COUNTS)
GPU = costmodel.with_gpu(SYNTH, costmodel.Processor(1e13, 5e11, launch_s=5e-6, is_gpu=True), "synthetic GPU", "test")


def p(impl, m=SYNTH, **kw):
    kw = {"num_envs": 1024, "steps": 1, "policy": "none", **kw}
    return costmodel.predict(impl, m, **kw)


def test_each_regime_is_reachable():
    assert p("torch", num_envs=1).regime == "Python-bound"  # 80 ops of 5 µs, one environment
    assert p("gym", num_envs=64).regime == "Python-bound"
    assert p("jax", GPU, num_envs=16, steps=1000).regime == "launch-bound"  # 100 launches per step, tiny N
    assert p("jax", GPU, num_envs=2**26, steps=1000, state_factor=2**8).regime == "memory-bound"
    assert p("cuda", GPU, num_envs=2**26, steps=1000, compute_factor=2**10).regime == "compute-bound"
    assert p("cpp", num_envs=2**24, steps=1000).regime == "compute-bound"


def test_terms_add_up_to_the_call():
    for impl in ("gym", "cpp", "torch", "jax"):
        for policy in ("mlp", "none"):
            r = p(impl, num_envs=4096, steps=10, policy=policy)
            assert math.isclose(sum(r.terms.values()), r.seconds_per_call, rel_tol=1e-12)
            assert set(r.terms) == set(costmodel.TERMS) and min(r.terms.values()) >= 0


def test_k_to_infinity_removes_the_fixed_cost():
    """As K grows, samples/s of a compiled (jax) or fused (cpp) call tends to N / (per-step time)."""
    n = 4096
    per_step_jax = COUNTS.get("jax", "none", "kernels_per_step") * HOST.xla_kernel_s + max(
        n * (costs.physics_flops(1, 1) / CPU.flops_per_s + costs.step_transcendentals(1, 1) * CPU.transcendental_s),
        n * (costs.unfused_bytes(1) + 100 * costmodel.INTERMEDIATE_BYTES_PER_KERNEL) / CPU.bytes_per_s)
    assert math.isclose(p("jax", num_envs=n, steps=10**9).samples_per_s, n / per_step_jax, rel_tol=1e-6)
    per_step_cpp = n * (costs.physics_flops(1, 1) / CPU.flops_per_s + 2 * CPU.transcendental_s)
    assert math.isclose(p("cpp", num_envs=n, steps=10**9).samples_per_s, n / per_step_cpp, rel_tol=1e-6)
    assert p("jax", steps=1).samples_per_s < p("jax", steps=1000).samples_per_s  # the fixed cost amortized
    # eager torch pays per step, not per call: K changes almost nothing
    assert p("torch", steps=1000).samples_per_s / p("torch", steps=1).samples_per_s < 1.05


def test_n_to_infinity_reaches_the_roofline():
    """As N grows, the time per environment-step tends to the larger of compute and memory."""
    s = 2**6
    limit = costmodel.limit_per_env_step("torch", SYNTH, steps=1, state_factor=s, policy="none")
    memory = (costs.unfused_bytes(s) + 80 * 0 + 70 * costmodel.INTERMEDIATE_BYTES_PER_KERNEL) / CPU.bytes_per_s
    assert math.isclose(limit, memory, rel_tol=1e-6)
    small = p("torch", num_envs=16, state_factor=s)
    assert small.seconds_per_call / 16 > 10 * limit  # per-op costs dominate at small N


def test_paper_state_factor_is_memory_only():
    """§4.2: S× the state, S× the loads and stores; the arithmetic is one CartPole's (× C)."""
    a, b = p("cpp", num_envs=2**20, steps=1000), p("cpp", num_envs=2**20, steps=1000, state_factor=2**4)
    assert a.terms["compute"] == b.terms["compute"] > 0  # the state once per call stays below K steps of compute
    c, d = p("torch", num_envs=2**20, state_factor=2**4), p("torch", num_envs=2**20, state_factor=2**8)
    assert d.terms["memory"] - c.terms["memory"] == pytest.approx(2**20 * 32 * (2**8 - 2**4) / CPU.bytes_per_s)
    # a fused call's speedup over K = 1 grows with S up to about K (Fig 9's 2^10 plateau at K = 10^3)
    speedup = lambda s: (p("cuda", GPU, num_envs=2**30, steps=1000, state_factor=s).samples_per_s  # noqa: E731
                         / p("cuda", GPU, num_envs=2**30, steps=1, state_factor=s).samples_per_s)
    assert speedup(1) < speedup(2**6) < speedup(2**11) <= 1000 * 1.0001
    assert speedup(2**11) > 900
    # a compute-bound step gains nothing from fusion (Fig 9: C = 2^10, S = 1)
    c_bound = (p("cuda", GPU, num_envs=2**30, steps=1000, compute_factor=2**10).samples_per_s
               / p("cuda", GPU, num_envs=2**30, steps=1, compute_factor=2**10).samples_per_s)
    assert c_bound == pytest.approx(1.0, rel=1e-4)  # only the fixed cost per call is saved


def test_gpu_overlaps_host_and_device():
    r = p("torch", GPU, num_envs=2**24, steps=10)
    host = 80 * HOST.torch_op_s + 70 * 5e-6
    fixed = 2 * HOST.torch_op_s + 1 * 5e-6  # calls and kernel launches per call
    assert r.seconds_per_call == pytest.approx(fixed + 10 * max(host, r.terms["memory"] / 10 + r.terms["compute"] / 10))
    assert r.terms["python"] == pytest.approx(2 * HOST.torch_op_s)  # the host is hidden behind the device here
    assert r.terms["launch"] == pytest.approx(5e-6)
    j = p("jax", GPU, num_envs=1, steps=1)  # per call: 2 XLA calls and 7 launches; per step 100 launches
    assert j.terms["python"] == pytest.approx(2 * HOST.jax_call_s) and j.terms["launch"] == pytest.approx(107 * 5e-6)


def test_bad_input_is_refused():
    with pytest.raises(ConfigError):
        p("cuda")  # no GPU on this machine
    with pytest.raises(ConfigError):
        p("envpool")
    with pytest.raises(ConfigError):
        p("jax", num_envs=0)


def test_advise_names_what_pays():
    memory_heavy = costmodel.advise(GPU, flops_per_step=26, bytes_per_step=8192, num_envs=2**22, steps=1000)
    by = {a.optimization: a for a in memory_heavy}
    assert by["fusion"].pays and by["fusion"].speedup > 100 and by["fusion"].slower.regime == "memory-bound"
    small = {a.optimization: a for a in costmodel.advise(SYNTH, flops_per_step=26, bytes_per_step=48, num_envs=16,
                                                         steps=1000)}
    assert small["ML compiler"].pays and small["ML compiler"].slower.regime == "Python-bound"
    compute_heavy = {a.optimization: a for a in costmodel.advise(GPU, flops_per_step=1e6, bytes_per_step=48,
                                                                 num_envs=2**22, steps=1000)}
    assert not compute_heavy["fusion"].pays  # both compute-bound


def test_machine_from_calibration_and_carry_over():
    cal = [{"quantity": q, "value": getattr(HOST, q)} for q in costmodel.HostCosts.__dataclass_fields__]
    cal += [{"quantity": "transcendental_s", "value": 1e-10}]
    cal += [{"quantity": "calls", "impl": i, "policy": pol, **c} for (i, pol), c in COUNTS.table.items()]
    ceil = [{"ceiling": "fma", "value": 1e11}, {"ceiling": "memory", "value": 2.5e10}]
    m = costmodel.machine_from_calibration(cal, ceil)
    assert m.host == HOST and m.cpu == CPU and m.counts.table == COUNTS.table
    with pytest.raises(ConfigError, match="jax_call_s"):
        costmodel.machine_from_calibration([r for r in cal if r["quantity"] != "jax_call_s"], ceil)
    theirs = costmodel.paper_machine(m, our_hz=2.3e9, our_cores=2)
    assert theirs.host.torch_op_s == pytest.approx(HOST.torch_op_s * 2.3 / 3.1)
    assert theirs.gpu.flops_per_s == 13.4e12 and theirs.gpu.bytes_per_s == 616e9
    assert theirs.cpu.flops_per_s == pytest.approx(16 * 3.1e9 * 16)


def test_paper_predictions_cover_the_headline_numbers():
    rows = model.paper_table(costmodel.paper_machine(SYNTH, our_hz=3.1e9, our_cores=16))
    assert {"1.02e+03", "4", "13.4", "53.8", "87", "11.3", "113"} <= {f"{v:.3g}" for v in rows["paper value"]}
    assert rows["model"].gt(0).all() and (rows["model / paper"] == rows["model"] / rows["paper value"]).all()
    s_high = rows[rows["quantity"].str.contains("S = 2\\^11")]["model"].iloc[0]
    assert 500 < s_high <= 1000.001  # memory-only S: the fused speedup reaches about K


def test_validation_errors_and_missing_terms(monkeypatch):
    measured = {"fig8": pd.DataFrame([{"impl": "cpp", "num_envs": 1024, "steps": 100, "state_factor": 1,
                                       "compute_factor": 1, "policy": "none", "samples_per_s": 1e8, "device": "cpu"},
                                      {"impl": "cuda", "num_envs": 1024, "steps": 100, "state_factor": 1,
                                       "compute_factor": 1, "policy": "none", "samples_per_s": 1e9, "device": "cuda"}])}
    monkeypatch.setattr(model, "_load", lambda P, sweep: measured.get(sweep, pd.DataFrame()))
    v = model.model_validation(None, SYNTH)
    assert list(v["finding"]) == ["F.3"]  # the GPU row has no figures on this machine: left out
    pred = p("cpp", num_envs=1024, steps=100).samples_per_s
    assert v["log2_error"].iloc[0] == pytest.approx(math.log2(pred / 1e8))
    err = model.error_table(v).set_index("finding")
    assert err.loc["F.3", "median |log2 error|"] == pytest.approx(abs(math.log2(pred / 1e8)))
    reasons = model.miss_reasons(v, threshold=0.0)
    assert len(reasons) == 1 and reasons["what the model lacks"].iloc[0] == model.MISSING_TERM[("compute", True)]


def test_advise_command_line(monkeypatch, capsys):
    from studylib.harness.model import calibrate

    cal = [{"quantity": q, "value": getattr(HOST, q)} for q in costmodel.HostCosts.__dataclass_fields__]
    cal += [{"quantity": "transcendental_s", "value": 1e-10}]
    cal += [{"quantity": "calls", "impl": i, "policy": pol, **c} for (i, pol), c in COUNTS.table.items()]
    monkeypatch.setattr(calibrate, "calibration_rows", lambda data_dir, machine=None: cal)
    monkeypatch.setattr(calibrate, "ceiling_rows", lambda data_dir, machine=None: [
        {"ceiling": "fma", "value": 1e11}, {"ceiling": "memory", "value": 2.5e10}])
    argv = ["advise", "--flops-per-step", "26", "--bytes-per-step", "48", "--num-envs", "2^20", "--steps", "1000"]
    assert main(argv + ["--gpu-tflops", "67", "--gpu-bandwidth-gbs", "3350"]) == 0
    out = capsys.readouterr().out
    assert "projection (model), not a measurement" in out and "fusion" in out and "bound" in out
    for bad, message in ((["--num-envs", "0"], "--num-envs"), (["--gpu-tflops", "67"], "go together"),
                         (["--bytes-per-step", "-1"], "--bytes-per-step"), (["--policy", "greedy"], "policy")):
        args = argv + bad
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error:") and message in err[0]


def test_version_2_prices_a_mujoco_simulators_gym_row_with_its_physics():
    """Model version 2: gym's loop over MujocoEnv objects costs gymnasium's MujocoEnv Python plus
    MuJoCo's physics per environment; CartPole's gym row stays version 1's (its step × C); a
    calibration saved before version 2 cannot price the MuJoCo row (refused, not guessed)."""
    assert costmodel.VERSION >= 2
    m = dataclasses.replace(SYNTH, host=dataclasses.replace(HOST, gym_mujoco_python_s=20e-6))
    assert p("gym", m, num_envs=64, compute_factor=3).terms["python"] == pytest.approx(64 * 3 * HOST.gym_env_step_s)
    mujoco_row = p("gym", m, num_envs=64, reference_step_s=40e-6)
    assert mujoco_row.terms["python"] == pytest.approx(64 * (20e-6 + 40e-6))
    assert mujoco_row.samples_per_s == pytest.approx(1 / 60e-6)
    with pytest.raises(ConfigError, match="gym_mujoco_python_s"):
        p("gym", SYNTH, reference_step_s=40e-6)
    assert p("cpp", m, reference_step_s=1.0).seconds_per_call == p("cpp", m).seconds_per_call  # gym's term only
    assert HOST.scaled(2.0).gym_mujoco_python_s is None  # carried to another CPU: still not calibrated


def test_version_3_prices_the_host_run_policy_between_native_steps_by_its_timer():
    """Model version 3: a native call per step with the policy between (cpp with the MLP) pays the
    simulator's host-policy timer (fixed seconds on the host, the policy's flops at its measured
    rate); without a timer for the simulator, on a GPU machine, or with no policy, version 2's
    price. The timer's rows give the line through their smallest and largest N."""
    assert costmodel.VERSION == 3
    cartpole = sims.sim("cartpole")
    flops = costs.policy_flops("mlp", cartpole.policy_sizes(cartpole.default_params))
    rows = [{"quantity": costmodel.HOST_POLICY, "sim": "cartpole", "num_envs": n, "value": 50e-6 + n * flops / 1e10,
             "policy_flops": flops} for n in (16, 4096)]
    timed = costmodel.host_policies(rows)["cartpole"]
    assert timed.fixed_s == pytest.approx(50e-6) and timed.flops_per_s == pytest.approx(1e10)
    m = dataclasses.replace(SYNTH, host_policy={"cartpole": timed})
    v3, v2 = p("cpp", m, policy="mlp"), p("cpp", SYNTH, policy="mlp")
    assert v3.terms["python"] == pytest.approx(HOST.native_call_s + 50e-6)
    instant = p("cpp", dataclasses.replace(SYNTH, host_policy={"cartpole": costmodel.HostPolicy(50e-6, math.inf)}),
                policy="mlp")  # the simulation's compute alone
    assert v3.terms["compute"] - instant.terms["compute"] == pytest.approx(1024 * flops / 1e10)
    assert v3.terms["python"] < v2.terms["python"] and v3.seconds_per_call > v2.seconds_per_call  # this timer's numbers
    assert p("cpp", m, policy="none").seconds_per_call == p("cpp", SYNTH, policy="none").seconds_per_call
    assert p("cpp", m, policy="mlp", sim="chain").seconds_per_call == p("cpp", SYNTH, policy="mlp", sim="chain").seconds_per_call
    gpu = dataclasses.replace(GPU, host_policy={"cartpole": timed})
    assert p("cpp", gpu, policy="mlp").seconds_per_call == p("cpp", GPU, policy="mlp").seconds_per_call
    carried = costmodel.carried_to(m, name="slower", cpu=CPU, cpu_hz=1e9, cpu_cores=2, our_hz=2e9, our_cores=2, gpu=None,
                                   sources={})
    slower = carried.host_policy["cartpole"]  # host costs scale by clock
    assert (slower.fixed_s, slower.flops_per_s) == (pytest.approx(100e-6), pytest.approx(0.5e10))
    flat = [dict(r, value=60e-6) for r in rows]  # a timer that did not grow with N: no price from it
    assert costmodel.host_policies(flat) == {}


def test_the_host_policy_timer_measures_the_records_own_policy_call():
    """The calibration's timer of the host-run policy: the record is cpp (native, the MLP outside its
    kernel, on the CPU) for CartPole and the chain, and one call costs microseconds, more at the
    larger N."""
    from studylib.harness.model import calibrate

    assert calibrate.host_policy_record("chain").name == calibrate.host_policy_record("cartpole").name == "cpp"
    items = calibrate.host_policy_items()
    assert {(i["sim"], i["num_envs"]) for i in items} >= {(s, n) for s in ("cartpole", "chain") for n in calibrate.HOST_POLICY_N}
    small, large = (calibrate.host_policy_s("chain", n) for n in (16, 1024))
    assert small["record"] == "cpp" and small["policy_flops"] > 0
    row = calibrate.measure_item(items[0])
    assert calibrate.KEYING.row_key(row) == calibrate.KEYING.row_key(items[0])  # saved rows are found again
    assert 1e-7 < small["value"] < large["value"] < 1e-1


def test_gymnasiums_mujoco_python_is_measured_apart_from_its_physics():
    """What gymnasium's InvertedDoublePendulum-v5 step costs beyond ``mj_step(nstep=frame_skip)``:
    positive (the physics timed alone is cheaper than the step) and microseconds, not the step. At
    the calibration's own sizes (16 objects x 8 steps): at 4 x 2 (timed regions of about a
    millisecond) a fresh clone under load once measured the physics alone slower than the step,
    and the difference clipped to 0."""
    from studylib.harness.model import calibrate

    assert "gym_mujoco_python_s" in calibrate.TIMED
    assert 1e-7 < calibrate.gym_mujoco_python_s() < 1e-3


def test_paired_timings_alternate_regions_grown_to_the_minimum(monkeypatch):
    """The differences the calibration takes (gym_mujoco_python_s, xla_kernel_s) come from regions
    timed in turn, one of each per round: a busy spell falls on both, not on one. A region is as
    many calls as reach MIN_SECONDS (a call of microseconds timed alone is mostly the timer), and
    the time returned is per call, per unit of work."""
    import re
    import time

    from studylib.harness.model import calibrate

    monkeypatch.setattr(calibrate, "REPEATS", 5)
    order = []

    def short():
        order.append("s")

    def long():
        order.append("l")
        time.sleep(2 * calibrate.MIN_SECONDS)

    t_long, t_short = calibrate._fastest_in_turn((long, short), per_call=2.0)
    assert order[:4] == ["l", "l", "s", "s"]  # two untimed calls of each (the first may compile)
    timed = "".join(order[4:])
    assert timed.count("l") == 5 and timed.count("s") >= 5 * 50  # short: grown to MIN_SECONDS
    regions = [run[0] for run in re.findall(r"l+|s+", timed)]
    assert regions == ["l", "s"] * 5  # in turn, one region of each per round
    assert 0.99 * calibrate.MIN_SECONDS <= t_long < 20 * calibrate.MIN_SECONDS  # per call (2 x MIN), per unit (2)
    assert t_short < t_long / 10


def test_the_sessions_calibration_has_its_differences_positive(calibrated):
    """The two differences of the session's calibration (measured once for the suite, beside the
    other worker): positive, and below the whole they are taken from (an XLA kernel below a JAX
    call; gymnasium's Python per step in microseconds)."""
    from studylib.harness.model import calibrate

    rows = {r["quantity"]: r.get("value") for r in calibrate.calibration_rows(calibrated.parent)}  # read, not measured
    assert 1e-10 < rows["xla_kernel_s"] < rows["jax_call_s"]
    assert 1e-7 < rows["gym_mujoco_python_s"] < 1e-3


def test_calibration_items_measure_and_key():
    from studylib.harness.model import calibrate

    keys = {calibrate.KEYING.row_key(i) for i in calibrate.items()}
    assert len(keys) == len(calibrate.items())  # every item its own key
    row = calibrate.measure_item({"quantity": "transcendental_s"})
    assert 0 < row["value"] < 1e-6
    assert calibrate.count_calls("cpp", "none") == {"calls_per_step": 0, "calls_per_call": 1,
                                                     "kernels_per_step": 0, "kernels_per_call": 1}


def test_model_chapter_parameters():
    from studylib.book import params

    P = params("model", preset="tiny", gpu_flops_per_s="82.6e12", gpu_bytes_per_s=1008e9)
    assert (P.gpu_flops_per_s, P.gpu_bytes_per_s) == (82.6e12, 1008e9)
    assert params("model", preset="tiny").gpu_flops_per_s is None  # no GPU entered: no projection for it
    with pytest.raises(ConfigError, match="gpu_bytes_per_s"):
        params("model", gpu_bytes_per_s=0)


def test_cartpole_predictions_unchanged_on_the_committed_calibration():
    """The model prices each implementation from its record; on the committed snapshot's calibration
    (and the paper's machine carried from it) every prediction of the grid equals, within 1e-9
    relative, the one of the model that branched on implementation names (tests/costmodel_golden.json).
    One point differs, on purpose: ``cuda`` with the MLP, which the old model priced as if its kernel
    ran the policy inside (the name fell through to the fused branch); its record says it does not
    (``fused_policies=("none",)``), so it is now priced as a call per step with the policy between,
    which needs counts of its calls nobody measured (no GPU): refused, never used by the book."""
    import json
    from pathlib import Path

    from tests import costmodel_cases

    golden = json.loads((Path(__file__).parent / "costmodel_golden.json").read_text())
    now = costmodel_cases.predictions(golden["calibrations"])
    assert len(now) == len(golden["predictions"]) > 1000
    for old, new in zip(golden["predictions"], now):
        point = {k: old[k] for k in ("machine", "impl", *costmodel_cases.GRID)}
        assert {k: new[k] for k in point} == point
        if (old["impl"], old["policy"]) == ("cuda", "mlp") and "error" not in old:
            assert new["error"] == "no counted operations for cuda with policy 'mlp'"
            continue
        assert ("error" in new) == ("error" in old), (point, new.get("error"), old.get("error"))
        if "error" in old:
            continue
        for t, v in old["terms"].items():
            assert new["terms"][t] == pytest.approx(v, rel=1e-9, abs=1e-300), (point, t)
        assert new["seconds_per_call"] == pytest.approx(old["seconds_per_call"], rel=1e-9), point


def test_a_synthetic_record_is_priced_without_a_code_path_of_its_own():
    """An implementation registered as a record only (a factory that does not exist, never built)
    gets a prediction from its dispatch and fused policies: a compiled one is priced as jax with the
    same counts, a native one that runs the MLP inside its kernel as fused."""
    from studylib.implspec import ImplSpec, register, unregister

    toys = [ImplSpec("toy-compiled", "nowhere:Toy", "xla", ("cuda", "cpu"), "jax", label="toy", color="#000001",
                     order=90, in_paper=False, dispatch="compiled"),
            ImplSpec("toy-kernel", "nowhere:Toy", "kernel", ("cpu",), None, label="toy k", color="#000002",
                     order=91, in_paper=False, fused_policies=("none", "mlp"), dispatch="native")]
    for t in toys:
        register(t)
    try:
        counts = costmodel.Counts({**COUNTS.table, ("toy-compiled", "mlp"): COUNTS.table[("jax", "mlp")]})
        m = costmodel.Machine("synthetic CPU", CPU, HOST, counts)
        for machine in (m, costmodel.with_gpu(m, GPU.gpu, "synthetic GPU", "test")):
            kw = dict(num_envs=4096, steps=100, policy="mlp", state_factor=4)
            assert p("toy-compiled", machine, **kw).terms == p("jax", machine, **kw).terms
        assert p("toy-kernel", m, policy="mlp", steps=100).terms == p("fused", m, policy="mlp", steps=100).terms
        with pytest.raises(ConfigError, match="no counted operations for toy-compiled with policy 'none'"):
            p("toy-compiled", m)  # priced from counts that were never measured for it: refused, not guessed
    finally:
        for t in toys:
            unregister(t.name)
    with pytest.raises(ConfigError, match="no cost model for 'torch-compile': its record names no dispatch"):
        p("torch-compile")


def test_advise_picks_each_dispatchs_implementation_from_the_records():
    assert [costmodel.representative(d, SYNTH, "none") for d in ("python-loop", "eager", "compiled", "native")] == \
        ["gym", "torch", "jax", "cpp"]
    assert costmodel.representative("native", SYNTH, "mlp") == "fused"  # the one whose kernel runs the MLP
    assert costmodel.representative("native", GPU, "none") == "cuda"  # on the GPU where there is one


def test_only_the_python_loop_record_is_priced_by_mujocos_step():
    """``reference_step_s`` (MuJoCo's physics per environment step) prices the record whose loop
    steps scalar simulators from Python, and no other: a vectorized record's physics is its flops."""
    from studylib.implspec import specs

    priced = {r.name for r in specs() if costmodel.prices_reference_step(r.name)}
    assert priced == {r.name for r in specs() if r.dispatch == "python-loop"} == {"gym"}
