"""A simulator is a record (studylib.sims): CartPole's, read by the settings, the command line, the
data rows and the cost model; a toy simulator registered as a record only is priced and checked
without a branch of its own."""

from __future__ import annotations

import json

import dataclasses

import pytest

from studylib import costs, sims
from studylib.errors import ConfigError
from studylib.harness.model import costmodel
from studylib.settings import EnvSettings, MeasurePoint, point_key
from tests.test_costmodel import SYNTH


@dataclasses.dataclass(frozen=True)
class ToyParams:
    max_episode_steps: int = 100


TOY = sims.SimSpec(name="toy", title="a toy", state_size=6, observation_size=6, num_actions=0, params_type=ToyParams,
                   default_params=ToyParams(), reward="none", termination="never", reference="none",
                   dynamics={"python": "nowhere"}, knobs=("compute_factor",),
                   physics_flops=lambda p, c: 1000 * c, transcendentals=lambda p, c: 0, unfused_bytes=lambda p, s: 56 * s)


@pytest.fixture
def toy():
    sims.register(TOY)
    yield TOY
    sims.unregister(TOY.name)


def test_cartpoles_record_is_what_the_package_counts():
    c = sims.sim("cartpole")
    assert c is sims.CARTPOLE and sims.DEFAULT == "cartpole" and c.dynamics["c"] == "cuda/cartpole.cuh"
    assert c.state_size == c.observation_size == 4 and c.num_actions == 2 and c.knobs == sims.KNOBS
    p = c.default_params
    assert [c.physics_flops(p, k) for k in (1, 4)] == [costs.physics_flops(1, 1), costs.physics_flops(1, 4)] == [26, 104]
    assert c.unfused_bytes(p, 8) == costs.unfused_bytes(8) == 272
    assert c.transcendentals(p, 3) == costs.step_transcendentals(1, 3)
    assert c.sizes(p) == (4, 4) and c.policy_sizes(p) == (4, 64, 64, 2) and not c.continuous


def test_settings_check_the_simulator_once(toy):
    assert EnvSettings("cpp", 8).sim == "cartpole" and EnvSettings("cpp", 8).params == sims.CARTPOLE.default_params
    with pytest.raises(ConfigError, match="unknown simulator 'pendulum'; valid: cartpole, chain, toy"):
        EnvSettings("cpp", 8, sim="pendulum")
    with pytest.raises(ConfigError, match="'cpp' does not implement simulator 'toy'; it implements cartpole"):
        EnvSettings("cpp", 8, sim="toy")
    with pytest.raises(ConfigError, match="'gymnax' does not implement simulator 'toy'"):
        EnvSettings("gymnax", 8, sim="toy")


def test_a_toy_simulator_in_a_toy_implementation(toy):
    from studylib.implspec import ImplSpec, register, unregister

    register(ImplSpec("toy-jax", "nowhere:Toy", "xla", ("cpu",), None, label="toy", color="#000003", order=92,
                      in_paper=False, dispatch="compiled", sims=("toy",)))
    try:
        s = EnvSettings("toy-jax", 16, compute_factor=2, sim="toy")
        assert s.params == ToyParams() and s.sim == "toy"
        with pytest.raises(ConfigError, match="simulator 'toy' takes no state_factor"):
            EnvSettings("toy-jax", 16, state_factor=2, sim="toy")
        point = MeasurePoint(s, 10, policy="none")
        assert point.flat()["sim"] == "toy" and point.describe().startswith("toy toy-jax N=16")
        assert point_key(point.flat())[-1] == ("sim", "toy")  # a toy row never stands for a CartPole one
        counts = costmodel.Counts({**SYNTH.counts.table, ("toy-jax", "none"): SYNTH.counts.table[("jax", "none")]})
        m = dataclasses.replace(SYNTH, counts=counts)
        p = costmodel.predict("toy-jax", m, num_envs=2**20, steps=100, compute_factor=2, policy="none", sim="toy")
        q = costmodel.predict("jax", m, num_envs=2**20, steps=100, compute_factor=2, policy="none",
                              flops_per_step=2000, bytes_per_step=56)
        assert p.terms == q.terms  # the toy's flops and bytes come from its record
    finally:
        unregister("toy-jax")


def test_a_cartpole_row_keys_the_same_with_or_without_its_sim():
    row = MeasurePoint.of("cpp", 8, 1).flat()
    assert row["sim"] == "cartpole"
    assert point_key(row) == point_key({k: v for k, v in row.items() if k != "sim"})  # rows saved before


def test_the_command_line_takes_a_registered_simulator(capsys):
    from studylib.__main__ import main

    base = ["bench", "--impl", "torch", "--num-envs", "8", "--steps", "1"]
    assert main(base + ["--sim", "pendulum"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["error: unknown --sim 'pendulum'; valid: cartpole, chain"]
    assert main(["bench", "--impl", "gymnax", "--num-envs", "8", "--steps", "1", "--sim", "chain"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: 'gymnax' does not implement simulator 'chain'; it implements cartpole"]
    assert main(base + ["--links", "3"]) == 2
    assert "--links is for one simulator that takes it" in capsys.readouterr().err
    for bad in ("0", "-1", "abc", "33", "1000000", "2.5"):  # one line each, before anything is allocated
        assert main(base + ["--sim", "chain", f"--links={bad}"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and ("--links" in err[0] or "links from 1 to 32" in err[0])
    fast = ["--repeats", "1", "--min-seconds", "0.01", "--json"]
    assert main(base + ["--sim", "chain", "--links", "1,3", "--policy", "none,mlp", *fast]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted((r["links"], r["policy"]) for r in rows) == [(1, "mlp"), (1, "none"), (3, "mlp"), (3, "none")]
    assert all(r["sim"] == "chain" and r["episodes_finished"] >= 0 for r in rows)