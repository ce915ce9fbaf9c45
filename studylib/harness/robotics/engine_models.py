"""The robotics models the engines of studylib.harness.robotics.engines step, one record each
(``RoboticsModel``): gymnasium's own MuJoCo XMLs (read from the installed gymnasium, never
downloaded) and the study's n-link chain, with the frame skip of their gymnasium v5 environment.

The paper's Fig 2 says CartPole "is representative of robotics physics simulators commonly used in
RL"; these are the simulators meant: MuJoCo's inverted_pendulum, inverted_double_pendulum, hopper,
walker2d and humanoid, as gymnasium's ``<Task>-v5`` environments load them.

Nothing about a model is typed in that its files state: nq, nv, nu and whether any two geoms can
collide come from the compiled ``MjModel`` (``describe``); the XML file and the frame skip are the
defaults of the v5 environment's ``__init__``, read from gymnasium's source with ``ast`` (its
``gymnasium.envs.mujoco`` package does not import without ``imageio``, which this study does not
install: the XMLs are loaded with ``mujoco`` directly). The same initial states (``initial_state``)
and controls (``controls``) are given to every engine.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import ConfigError

PERTURBATION = 0.01  # the scale of the seeded uniform perturbation of qpos0 and of qvel = 0 (gymnasium
#                      v5's reset_noise_scale is 0.005 to 0.1 by environment; one scale for all here)
CONTROL_PATTERNS = ("random", "zero")  # random: uniform in each actuator's ctrlrange, seeded


def gymnasium_mujoco_dir() -> Path:
    """gymnasium's ``envs/mujoco`` folder in this installation, found without importing it (its
    ``__init__`` imports the renderer, which needs ``imageio``)."""
    import importlib.util

    spec = importlib.util.find_spec("gymnasium")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("gymnasium is not installed: its MuJoCo XMLs are the models")
    return Path(next(iter(spec.submodule_search_locations))) / "envs" / "mujoco"


def v5_default(module: str, argument: str):
    """The default of ``argument`` in ``__init__`` of gymnasium's ``envs/mujoco/<module>.py``, read
    with ``ast`` (e.g. hopper_v5's ``frame_skip: int = 4``, ``xml_file: str = "hopper.xml"``)."""
    path = gymnasium_mujoco_dir() / f"{module}.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args.args[-len(node.args.defaults):] if node.args.defaults else []
            for arg, default in zip(args, node.args.defaults):
                if arg.arg == argument:
                    return ast.literal_eval(default)
    raise ConfigError(f"gymnasium's {path.name} has no default for {argument!r}")


@dataclass(frozen=True)
class RoboticsModel:
    """One MuJoCo model: where its MJCF comes from and what its gymnasium environment does with it."""

    name: str  # the model's name in the data
    title: str  # what it is, in words
    gym_module: str | None = None  # gymnasium's v5 module (its xml_file and frame_skip defaults)
    envpool_task: str | None = None  # envpool's task of the same environment, if any
    chain_links: int | None = None  # the study's chain (studylib.sims.chain.model) of this many links

    def mjcf(self) -> tuple[str, Path | None]:
        """(MJCF text, the file it was read from or None for a generated one)."""
        if self.chain_links is not None:
            from ...sims.chain.model import chain_mjcf

            return chain_mjcf(self.chain_links), None
        path = gymnasium_mujoco_dir() / "assets" / v5_default(self.gym_module, "xml_file")
        if not path.is_file():
            raise ConfigError(f"gymnasium's MuJoCo asset {path} is missing (it ships with gymnasium; reinstall it)")
        return path.read_text(), path

    @property
    def frame_skip(self) -> int:
        """mj_steps per environment step of its gymnasium v5 environment (the chain: ChainParams')."""
        if self.chain_links is not None:
            from ...sims.chain.model import ChainParams

            return ChainParams(links=self.chain_links).frame_skip
        return int(v5_default(self.gym_module, "frame_skip"))


MODELS = {m.name: m for m in (
    RoboticsModel("inverted_pendulum", "cart-pole, one hinge (InvertedPendulum-v5)", "inverted_pendulum_v5",
                  "InvertedPendulum-v5"),
    RoboticsModel("inverted_double_pendulum", "cart with two hinged links (InvertedDoublePendulum-v5)",
                  "inverted_double_pendulum_v5", "InvertedDoublePendulum-v5"),
    RoboticsModel("hopper", "planar one-legged hopper, foot-floor contact (Hopper-v5)", "hopper_v5", "Hopper-v5"),
    RoboticsModel("walker2d", "planar biped, feet-floor contacts (Walker2d-v5)", "walker2d_v5", "Walker2d-v5"),
    RoboticsModel("humanoid", "3-D humanoid, 17 actuators, many contacts (Humanoid-v5)", "humanoid_v5",
                  "Humanoid-v5"),
    RoboticsModel("chain2", "the study's chain, 2 links (inverted_double_pendulum without the rail limit)",
                  chain_links=2),
    # the chain at every n its chapter measures (chain2 above): MuJoCo's engines beside our implementations
    *(RoboticsModel(f"chain{n}", f"the study's chain, {n} link{'s' if n > 1 else ''}", chain_links=n)
      for n in (1, 3, 4, 6, 8, 16, 32)),
)}


def model_record(name: str) -> RoboticsModel:
    if name not in MODELS:
        raise ConfigError(f"unknown robotics model {name!r}; valid: {', '.join(MODELS)}")
    return MODELS[name]


SOLVERS = ("xml", "newton")  # xml: the file's own solver (humanoid: PGS); newton: mjSOL_NEWTON, what MJX needs


@functools.lru_cache(maxsize=None)
def _compiled(name: str, solver: str):
    import mujoco

    text, path = model_record(name).mjcf()
    if path is not None:  # relative includes and meshes resolve against the file's folder
        m = mujoco.MjModel.from_xml_path(str(path))
    else:
        m = mujoco.MjModel.from_xml_string(text)
    if solver == "newton":
        m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    return m


def load(name: str, solver: str = "xml"):
    """The compiled ``MjModel`` of model ``name`` (cached: the engines read it, none writes it).
    ``solver`` "newton" sets ``opt.solver`` to Newton: MJX has no PGS, and the agreement compares
    C and MJX under the same solver."""
    if solver not in SOLVERS:
        raise ConfigError(f"unknown solver setting {solver!r}; valid: {', '.join(SOLVERS)}")
    return _compiled(model_record(name).name, solver)


def may_collide(m) -> bool:
    """Whether any two geoms of different bodies pass MuJoCo's contype/conaffinity test
    ("two geoms can collide if the contype of one and the conaffinity of the other have a common
    bit set", MuJoCo's Modeling: Contact) and contacts are not disabled. Parent-child filtering
    is not applied: an upper bound."""
    import mujoco

    if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT:
        return False
    ct, ca, body = m.geom_contype, m.geom_conaffinity, m.geom_bodyid
    pair = (ct[:, None] & ca[None, :]) | (ct[None, :] & ca[:, None])
    return bool(np.any((pair != 0) & (body[:, None] != body[None, :])))


SOLVER_NAMES = {0: "PGS", 1: "CG", 2: "Newton"}  # mjtSolver


def describe(name: str) -> dict:
    """The model's identity columns, read from its compiled MjModel and gymnasium's source."""
    rec, m = model_record(name), load(name)
    _, path = rec.mjcf()
    return {"model": rec.name, "nq": int(m.nq), "nv": int(m.nv), "nu": int(m.nu), "timestep": float(m.opt.timestep),
            "xml_solver": SOLVER_NAMES.get(int(m.opt.solver), str(m.opt.solver)), "frame_skip": rec.frame_skip,
            "contacts": may_collide(m), "xml": path.name if path is not None else "chain_mjcf"}


def initial_state(m, num_envs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(qpos, qvel), (N, nq) and (N, nv) float64: qpos0 plus, like gymnasium's reset, a seeded
    uniform perturbation of scale PERTURBATION on every coordinate (a free joint's quaternion is
    perturbed too and left unnormalised: mj_step normalises it), qvel likewise. Environment i's
    state does not depend on N (one generator each for qpos and qvel, filled environment by environment)."""
    qpos = m.qpos0[None, :] + np.random.default_rng([seed, 0]).uniform(-PERTURBATION, PERTURBATION, (num_envs, m.nq))
    qvel = np.random.default_rng([seed, 1]).uniform(-PERTURBATION, PERTURBATION, (num_envs, m.nv))
    return qpos, qvel


def controls(m, num_envs: int, steps: int, seed: int, pattern: str = "random") -> np.ndarray:
    """(N, K, nu) float64 controls, applied open loop in every call of K steps: zero, or uniform in
    each actuator's ctrlrange (seeded; [-1, 1] where a control is not limited)."""
    return _drawn(m, (num_envs, steps, m.nu), [seed, 2], pattern)


def _drawn(m, shape: tuple, key: list, pattern: str) -> np.ndarray:
    """Controls of ``shape``: zero, or uniform in each actuator's ctrlrange ([-1, 1] where a control
    is not limited) from the generator seeded by ``key``."""
    if pattern not in CONTROL_PATTERNS:
        raise ConfigError(f"unknown control pattern {pattern!r}; valid: {', '.join(CONTROL_PATTERNS)}")
    if pattern == "zero":
        return np.zeros(shape)
    limited = m.actuator_ctrllimited.astype(bool)[:, None]
    lo, hi = np.where(limited, m.actuator_ctrlrange, [-1.0, 1.0]).T
    return np.random.default_rng(key).uniform(lo, hi, shape)


WARM_SECONDS = 1.5  # simulated seconds before a timed region: humanoid's contacts and mj_step cost settle
#                     after about 0.75 s under the random controls (5.4 contacts and 96 us a step against
#                     2.2 and 36 us in its first 250 steps), hopper's after about 1.5 s (0.002 s steps)
TRAJECTORIES = 8  # the long trajectories steady states are drawn from
STRIDE = 5  # mj_steps between two states drawn from one trajectory


def warm_steps(m) -> int:
    """mj_steps of ``WARM_SECONDS`` of simulated time at the model's timestep."""
    return int(np.ceil(WARM_SECONDS / m.opt.timestep))


def steady_state(m, num_envs: int, seed: int, pattern: str = "random") -> tuple[np.ndarray, np.ndarray]:
    """(qpos, qvel) of N environments past their initial transient, drawn from ``TRAJECTORIES``
    long trajectories of MuJoCo C (``mujoco.rollout``, one thread per core): trajectory j starts
    from ``initial_state``'s environment j under ``controls(pattern)`` (one control per step, no
    repeat), and environment i takes trajectory i mod TRAJECTORIES's state at step
    ``warm_steps + STRIDE * (i // TRAJECTORIES)``. States of different times and trajectories, so
    the N environments are not N copies of one; environment i's state does not depend on N. The
    cost is TRAJECTORIES x (warm + STRIDE x N / TRAJECTORIES) steps, not N x warm."""
    import mujoco
    from mujoco import rollout

    from ..atari.engines import cores

    count = min(num_envs, TRAJECTORIES)
    per = -(-num_envs // count)
    warm = warm_steps(m)
    steps = warm + STRIDE * (per - 1) + 1
    x0 = physics_states(m, *initial_state(m, count, seed))
    ctrl = np.stack([_trajectory_controls(m, steps, seed, j, pattern) for j in range(count)])
    with rollout.Rollout(nthread=cores()) as pool:
        states, _ = pool.rollout(m, [mujoco.MjData(m) for _ in range(cores())], x0, ctrl)
    taken = states[:, warm - 1::STRIDE][:, :per]  # state after step warm + STRIDE*s (rollout's state t: after t+1 steps)
    return positions_velocities(m, taken.transpose(1, 0, 2).reshape(-1, x0.shape[1])[:num_envs])  # i: trajectory i mod count


def physics_states(m, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    """(N, state size): each environment's ``mjSTATE_FULLPHYSICS`` vector (what ``mujoco.rollout``
    starts from) for its (qpos, qvel), every other field at its reset value."""
    import mujoco

    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    d = mujoco.MjData(m)
    x = np.empty((len(qpos), mujoco.mj_stateSize(m, spec)))
    for i in range(len(qpos)):
        d.qpos[:], d.qvel[:] = qpos[i], qvel[i]
        mujoco.mj_getState(m, d, x[i], spec)
    return x


def positions_velocities(m, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(qpos, qvel) copied out of ``mjSTATE_FULLPHYSICS`` vectors, which begin: time (1), qpos (nq), qvel (nv)."""
    nq, nv = m.nq, m.nv
    return states[:, 1:1 + nq].copy(), states[:, 1 + nq:1 + nq + nv].copy()


def _trajectory_controls(m, steps: int, seed: int, j: int, pattern: str) -> np.ndarray:
    """(steps, nu): trajectory j's controls, one per step, zero or uniform in each actuator's range
    like ``controls``, from a generator of its own (so that a longer trajectory has the same first steps)."""
    return _drawn(m, (steps, m.nu), [seed, 3, j], pattern)


def contacts(m, qpos: np.ndarray, limit: int = 256) -> tuple[float, int]:
    """(mean ``d.ncon`` over the states, how many were looked at): MuJoCo's collision detection
    (``mj_fwdPosition``) on each of at most ``limit`` of the N positions, evenly spaced."""
    import mujoco

    d = mujoco.MjData(m)
    picked = qpos[np.unique(np.linspace(0, len(qpos) - 1, min(limit, len(qpos))).astype(int))]
    total = 0
    for q in picked:
        d.qpos[:] = q
        mujoco.mj_fwdPosition(m, d)
        total += d.ncon
    return total / len(picked), len(picked)
