"""The n-link cart-pole chain (studylib.sims.chain) against its reference, MuJoCo C's mj_step
(float64) on the model chain_mjcf(n) generates: the model is gymnasium's at n = 2, the closed-form
bodies are MuJoCo's, one step agrees to rounding (numpy float64) and to float32 (torch, jax), 50
steps within a bound the measured divergence sets, the flop count is the code's, op for op, and at
n = 2 an environment step is gymnasium's InvertedDoublePendulum-v5's."""

from __future__ import annotations

import functools
import math
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pytest

from studylib import sims
from studylib.errors import ConfigError
from studylib.sims import chain

GYM_XML = Path(mujoco.__file__).parents[1] / "gymnasium/envs/mujoco/assets/inverted_double_pendulum.xml"
SLIDER = ('<joint axis="1 0 0" limited="true" margin="0.01" name="slider" pos="0 0 0" range="-1 1" type="slide"/>',
          '<joint axis="1 0 0" name="slider" pos="0 0 0" type="slide"/>')  # the slider's limit, which chain_mjcf omits
LINKS = (1, 2, 4, 8)
STATES, STEPS = 1000, 50


def relative_error(a, b):
    """|a − b| / max(|b|, 1): relative where |b| > 1, absolute near zero (angles and velocities
    cross zero; a plain relative error would blow up there)."""
    return np.abs(np.asarray(a, np.float64) - b) / np.maximum(np.abs(b), 1.0)


def gym_model_without_limit() -> mujoco.MjModel:
    text = GYM_XML.read_text()
    assert text.count(SLIDER[0]) == 1
    return mujoco.MjModel.from_xml_string(text.replace(*SLIDER))


# ---- the model ----

@pytest.mark.parametrize("n", [0, -1, 2.0, True, "2"])
def test_a_chain_has_a_whole_number_of_links(n):
    with pytest.raises(ConfigError, match="integer number of links"):
        chain.chain_mjcf(n)


def _tree(element, drop=()):
    """An element as (tag, attributes with numbers read as numbers, children), less ``drop``."""
    def value(v):
        try:
            return tuple(float(x) for x in v.split())
        except ValueError:
            return v
    attrs = {k: value(v) for k, v in element.attrib.items() if (element.get("name"), k) not in drop}
    return element.tag, attrs, [_tree(child, drop) for child in element]


def test_at_two_links_the_mjcf_is_gymnasiums_less_the_slider_limit():
    ours = ET.fromstring(chain.chain_mjcf(2))
    gyms = ET.fromstring(GYM_XML.read_text())
    assert _tree(ours) == _tree(gyms, drop={("slider", "limited"), ("slider", "margin"), ("slider", "range")})
    assert _tree(ours) != _tree(gyms)


def test_at_two_links_the_compiled_model_is_gymnasiums():
    ours, gyms = mujoco.MjModel.from_xml_string(chain.chain_mjcf(2)), gym_model_without_limit()
    for field in ("body_mass", "body_inertia", "body_ipos", "body_pos", "dof_damping", "dof_armature",
                  "actuator_gear", "actuator_ctrlrange", "actuator_ctrllimited", "jnt_limited", "jnt_axis"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(gyms, field), err_msg=field)
    for field in ("timestep", "integrator", "gravity"):
        assert np.all(getattr(ours.opt, field) == getattr(gyms.opt, field)), field
    assert ours.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 and not ours.dof_armature.any()


@pytest.mark.parametrize("n", LINKS)
def test_the_closed_form_bodies_are_mujocos(n):
    """Each link the same capsule: the chain n L long, n link masses on the cart; MuJoCo's compiler
    (inertiafromgeom) gives the masses and inertias ChainParams states in closed form."""
    m, p = mujoco.MjModel.from_xml_string(chain.chain_mjcf(n)), chain.ChainParams(links=n)
    assert (m.nq, m.nv, m.nu, m.nbody) == (n + 1, n + 1, 1, n + 2) and not m.jnt_limited.any()
    np.testing.assert_allclose(m.body_mass[1:], [p.cart_mass] + [p.link_mass] * n, rtol=1e-14)
    np.testing.assert_allclose(np.sort(m.body_inertia[2:], axis=1),
                               [sorted(chain.capsule_inertia(p.link_radius, p.link_length / 2, p.density))] * n,
                               rtol=1e-12)
    np.testing.assert_allclose(m.body_ipos[2:], [[0, 0, p.link_length / 2]] * n, atol=1e-15)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    assert math.isclose(d.site_xpos[0][2], p.length, rel_tol=1e-14)  # the tip, upright: n L


# ---- the dynamics, against mj_step ----

def random_inputs(n, count, seed=0):
    """qpos: cart x in ±1, hinge angles in ±0.5 rad; qvel in ±2; ctrl in ±1 (float64)."""
    rng = np.random.default_rng(seed + n)
    qpos = np.concatenate((rng.uniform(-1, 1, (count, 1)), rng.uniform(-0.5, 0.5, (count, n))), axis=1)
    return np.concatenate((qpos, rng.uniform(-2, 2, (count, n + 1))), axis=1), rng.uniform(-1, 1, count)


@functools.lru_cache(maxsize=None)
def mujoco_trajectories(n):
    """(states (STATES, 2(n+1)), ctrl (STATES,), MuJoCo's STEPS mj_steps from each (STATES, STEPS, 2(n+1)))."""
    states, ctrl = random_inputs(n, STATES)
    m = mujoco.MjModel.from_xml_string(chain.chain_mjcf(n))
    d = mujoco.MjData(m)
    out = np.empty((STATES, STEPS, 2 * (n + 1)))
    for i in range(STATES):
        d.qpos[:], d.qvel[:], d.ctrl[:] = states[i, :n + 1], states[i, n + 1:], ctrl[i]
        for k in range(STEPS):
            mujoco.mj_step(m, d)
            out[i, k, :n + 1], out[i, k, n + 1:] = d.qpos, d.qvel
    return states, ctrl, out


@pytest.mark.parametrize("n", LINKS)
def test_one_step_in_float64_is_mujocos(n):
    states, ctrl, mj = mujoco_trajectories(n)
    ours = chain.physics_step(states, ctrl, chain.ChainParams(links=n))
    assert relative_error(ours, mj[:, 0]).max() < 1e-9  # measured 7e-16 (n=1), 2e-15, 2e-14, 4e-13 (n=8)


@pytest.mark.parametrize("n", LINKS)
@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_one_step_in_float32_is_mujocos_to_float32(n, framework):
    """The same lines on float32 tensors: the inputs' rounding (6e-8) and float32 arithmetic through
    four Cholesky solves; measured 4e-7 (n = 1) to 6e-6 (n = 8), bound 1e-4."""
    states, ctrl, mj = mujoco_trajectories(n)
    if framework == "torch":
        torch = pytest.importorskip("torch")
        ours = chain.physics_step(torch.tensor(states, dtype=torch.float32), torch.tensor(ctrl, dtype=torch.float32),
                                  chain.ChainParams(links=n), xp=torch)
        assert ours.dtype == torch.float32
        ours = ours.numpy()
    else:
        jnp = pytest.importorskip("jax.numpy")
        ours = chain.physics_step(jnp.asarray(states, jnp.float32), jnp.asarray(ctrl, jnp.float32),
                                  chain.ChainParams(links=n), xp=jnp)
        assert ours.dtype == jnp.float32
    assert relative_error(ours, mj[:, 0]).max() < 1e-4


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_an_environment_step_in_float32_is_the_references(framework):
    """env_step's observation and reward on float32 tensors (jax under jit) against numpy's, n = 3."""
    p = chain.ChainParams(links=3)
    states, ctrl = random_inputs(3, 256)
    ref = chain.env_step(states, ctrl, p)
    if framework == "torch":
        torch = pytest.importorskip("torch")
        out = chain.env_step(torch.tensor(states, dtype=torch.float32), torch.tensor(ctrl, dtype=torch.float32), p, torch)
        out = [a.numpy() for a in out]
    else:
        jax = pytest.importorskip("jax")
        jnp = jax.numpy
        out = jax.jit(lambda s, c: chain.env_step(s, c, p, jnp))(jnp.asarray(states, jnp.float32),
                                                                   jnp.asarray(ctrl, jnp.float32))
    for ours, theirs in zip(out[:3], ref[:3]):
        assert ours.dtype == np.float32 and relative_error(ours, theirs).max() < 1e-4
    np.testing.assert_array_equal(out[3], ref[3])
    assert 0 < ref[3].sum() < len(states)


def rollout(states, ctrl, p, steps):
    out = []
    for _ in range(steps):
        states = chain.physics_step(states, ctrl, p)
        out.append(states)
    return np.stack(out, axis=1)


@pytest.mark.parametrize("n", LINKS)
def test_fifty_steps_in_float64_stay_with_mujoco_within_the_chaos_bound(n):
    """The chain is chaotic: a difference grows along a trajectory. Measure how much: G, the largest
    amplification over 50 steps (and every step before) of a 1e-10 perturbation of the start, our
    own dynamics. Each step's own disagreement with MuJoCo is at most ε (the one-step error,
    measured), so after k steps the disagreement is at most Σ_j G ε ≤ 50 G ε; a factor 10 covers ε
    at states the trajectories reach that the first step did not see. Measured, n = 1, 2, 4, 8:
    G ≈ 39, 356, 694, 762 (the worst of 1000 starts; e-folding in ~0.07 s at n = 8), ε ≈ 7e-16,
    2e-15, 2e-14, 4e-13, the 50-step error 4e-14, 1.5e-13, 6e-13, 6e-12 against bounds 1e-11,
    4e-10, 8e-9, 2e-7: the errors do not line up with the most unstable direction. The last
    assertion keeps the float64 goal absolute."""
    states, ctrl, mj = mujoco_trajectories(n)
    p = chain.ChainParams(links=n)
    ours = rollout(states, ctrl, p, STEPS)
    eps = max(relative_error(ours[:, 0], mj[:, 0]).max(), 1e-16)
    delta = 1e-10
    kick = np.random.default_rng(1).uniform(-delta, delta, states.shape) * np.maximum(np.abs(states), 1)
    growth = relative_error(rollout(states + kick, ctrl, p, STEPS), ours).max() / delta
    error = relative_error(ours, mj).max()
    assert error <= 10 * STEPS * growth * eps, (error, growth, eps)
    assert error < 1e-9


# ---- the work of a step ----

class _Traced:
    """A number whose every +, −, ×, ÷ is tallied (Python floats, the constants, fold for free)."""

    flops = transcendentals = 0

    def _op(self, other):
        _Traced.flops += 1
        return _Traced()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _op

    def __neg__(self):
        return self._op(None)


def _transcendental(x):
    _Traced.transcendentals += 1
    return _Traced()


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_the_flop_count_is_the_codes(n):
    """Run one mj_step on traced numbers: the counts are the formulas', op for op."""
    xp = types.SimpleNamespace(sin=_transcendental, cos=_transcendental, sqrt=_transcendental)
    _Traced.flops = _Traced.transcendentals = 0
    chain.rk4_step([_Traced() for _ in range(n + 1)], [_Traced() for _ in range(n + 1)], _Traced(),
                   chain.ChainParams(links=n), xp)
    assert (_Traced.flops, _Traced.transcendentals) == (chain.rk4_flops(n), chain.rk4_transcendentals(n))
    assert 3 * chain.rk4_flops(n) == 4 * n**3 + 114 * n**2 + 242 * n + 84
    assert chain.chain_flops(n) == 5 * chain.rk4_flops(n) and chain.chain_bytes(n) == 2 * (8 * (n + 1) + 8)


def test_the_record():
    c = sims.sim("chain")
    assert c is chain.CHAIN and c.params_type is chain.ChainParams and c.default_params.links == 2
    assert (c.state_size, c.observation_size, c.num_actions, c.knobs) == (6, 9, 0, ())
    assert c.dynamics == {"python": "studylib.sims.chain", "c": "cuda/chain.cuh"}
    p = c.default_params
    assert (c.physics_flops(p, 1), c.transcendentals(p, 1), c.unfused_bytes(p, 1)) == (1760, 120, 64)
    assert (p.max_episode_steps, p.frame_skip, p.length) == (1000, 5, 1.2)
    # the work of a step is of the chain's parameters (its n and the timestep rule's frame_skip)
    p32 = c.params_of({"links": 32})
    assert c.physics_flops(p32, 1) == 25 * chain.rk4_flops(32) and c.unfused_bytes(p32, 1) == 2 * (8 * 33 + 8)
    assert c.sizes(p32) == (66, 99) and c.policy_sizes(p32) == (99, 64, 64, 1) and c.continuous
    assert c.variant(p32) == {"links": 32, "episode_rules": "v5"}


# ---- an environment step at n = 2 is InvertedDoublePendulum-v5's ----

def gymnasium_v5():
    """InvertedDoublePendulum-v5's own ``step``, ``_get_rew`` and ``_get_obs`` and MujocoEnv's
    ``do_simulation`` and ``_step_mujoco_simulation``, read from gymnasium's source and run on
    gymnasium's model (its slider limit in). Read, not imported: importing gymnasium.envs.mujoco
    imports its renderer, which needs imageio (not installed here)."""
    import ast

    env_dir = GYM_XML.parents[1]
    methods = {}
    for file, cls, names in (("mujoco_env.py", "MujocoEnv", ("do_simulation", "_step_mujoco_simulation")),
                             ("inverted_double_pendulum_v5.py", "InvertedDoublePendulumEnv",
                              ("step", "_get_rew", "_get_obs"))):
        tree = ast.parse((env_dir / file).read_text())
        body = next(c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == cls).body
        module = ast.Module([f for f in body if isinstance(f, ast.FunctionDef) and f.name in names], [])
        namespace = {"np": np, "mujoco": mujoco, "NDArray": np.ndarray}
        exec(compile(ast.fix_missing_locations(module), str(env_dir / file), "exec"), namespace)
        methods.update({name: namespace[name] for name in names})
    env = type("V5", (), methods)()
    env.model = mujoco.MjModel.from_xml_path(str(GYM_XML))
    env.data = mujoco.MjData(env.model)
    env.frame_skip, env._healthy_reward, env.render_mode = 5, 10.0, None  # v5's defaults
    return env


def test_at_two_links_an_environment_step_is_inverted_double_pendulum_v5s():
    """Observation, reward and termination after frame_skip = 5 mj_steps, from states that keep the
    cart off its slider limit (so gymnasium's constraint stays inactive and its qfrc_constraint 0),
    some far enough from upright to terminate. The reward's tip is MuJoCo's last RK4 stage's, as
    v5 reads it (chain.env_step)."""
    env = gymnasium_v5()
    rng = np.random.default_rng(2)
    count = 60
    qpos = np.stack((rng.uniform(-0.3, 0.3, count), rng.uniform(-0.6, 0.6, count), rng.uniform(-0.6, 0.6, count)), 1)
    qvel = rng.uniform(-1, 1, (count, 3))
    ctrl = rng.uniform(-1, 1, count)
    gym_state, gym_obs, gym_reward, gym_term = [], [], [], []
    for i in range(count):
        env.data.qpos[:], env.data.qvel[:] = qpos[i], qvel[i]
        mujoco.mj_forward(env.model, env.data)
        obs, reward, terminated, truncated, _ = env.step(ctrl[i:i + 1])
        assert abs(env.data.qpos[0]) < 0.99 and obs[-1] == 0 and not truncated
        gym_state.append(np.concatenate((env.data.qpos, env.data.qvel)))
        gym_obs.append(obs), gym_reward.append(reward), gym_term.append(terminated)
    states, obs, reward, terminated = chain.reference_step(np.concatenate((qpos, qvel), 1), ctrl)
    assert obs.dtype == np.float32 and obs.shape == (count, 9)
    assert relative_error(states, np.array(gym_state)).max() < 1e-9
    np.testing.assert_allclose(obs, np.array(gym_obs), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(terminated, gym_term)
    assert 0 < np.sum(gym_term) < count
    np.testing.assert_allclose(reward, gym_reward, rtol=1e-10, atol=1e-10)


def test_dynamo_traces_the_dynamics_without_a_warning():
    """torch.compile traces the chain's dynamics (torch-compile's step) without dynamo's warnings:
    the mass matrix's constant coefficients are an attribute of the frozen ChainParams, computed
    once when it is made (an lru_cache there drew dynamo's "lru_cache-wrapped function" warning on
    every user's first compile). Dynamo's own backend: the trace, not inductor's compile."""
    import warnings

    torch = pytest.importorskip("torch")
    from torch._dynamo import utils as dynamo_utils

    p = chain.ChainParams(links=3)
    assert p.mass_coefficients == chain.ChainParams(links=3).mass_coefficients and "mass_coefficients" not in repr(p)
    dynamo_utils.warn_once_cache.clear()  # warnings an earlier test's trace raised are raised again
    qpos, qvel = ([torch.full((4,), 0.1 * (k + 1)) for k in range(4)] for _ in range(2))
    fn = torch.compile(lambda q, v: chain.dynamics.accelerations(q, v, 1.0, p, torch), backend="eager", fullgraph=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = fn(qpos, qvel)
    eager = chain.dynamics.accelerations(qpos, qvel, 1.0, p, torch)
    assert all(torch.equal(a, b) for a, b in zip(traced, eager))
    assert not [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
