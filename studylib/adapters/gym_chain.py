"""The n-link chain under gymnasium's API, as ``studylib/CartPole-v1`` is CartPole's (gym_vector.py):

    import gymnasium, studylib.adapters.gym_chain                       # the import registers the ids
    envs = gymnasium.make_vec("studylib/InvertedDoublePendulum-v5", num_envs=4096, impl="fused")
    envs = gymnasium.make_vec("studylib/Chain-v0", num_envs=4096, impl="jax", links=8)
    obs, info = envs.reset(seed=0)
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    env = gymnasium.make("studylib/Chain-v0", impl="cpp", links=4)    # one env, for check_env and friends

``studylib/InvertedDoublePendulum-v5`` is the chain at n = 2: gymnasium's InvertedDoublePendulum-v5
(its XML less the slider's range limit, see ``studylib.sims.chain.model.chain_mjcf``), with its
1000-step time limit and reward threshold 9100. ``studylib/Chain-v0`` takes ``links`` (1 to 32).
The spaces are v5's: observations Box(-inf, inf, (3n+3,)) float64 in gymnasium (float32 here, as
every studylib observation), actions Box(-1, 1, (1,)) float32 (the slider's motor).

``StudylibChainVectorEnv`` is ``StudylibVectorEnv`` (the autoreset modes, arrays, seeding) with the
chain's spaces and v5's reset distribution for seeded resets (``reset(seed=[...])`` draws each
env as ``InvertedDoublePendulumEnv.reset_model`` does from that seed's ``np_random``: qpos
uniform in ±0.1, qvel 0.1 N(0, 1)). ``StudylibChainEnv`` is one environment for ``gymnasium.make``.
Rendering (``render_mode="rgb_array"``) is MuJoCo's, through gymnasium's ``MujocoEnv``
(``ChainRenderer``); on a machine without a display MuJoCo needs ``MUJOCO_GL=egl`` (or ``osmesa``)
set before it is imported. No "human" mode: MuJoCo's window needs a display, and gymnasium's
``check_env`` opens every listed mode (without a display, glfw aborts the process);
``ChainMujocoEnv`` has it.
"""

from __future__ import annotations

import dataclasses

import gymnasium
import numpy as np
from gymnasium import spaces

from ..envs.registry import make
from ..errors import ConfigError
from ..sims.chain import ChainParams, dynamics
from ..sims.chain.model import MAX_EPISODE_STEPS
from ..sims.chain.episode import RESET_NOISE
from .gym_vector import StudylibVectorEnv
from .gym_single import OneEnvOfAnImplementation
from .rendering import check_render_mode

DOUBLE_PENDULUM_ID = "studylib/InvertedDoublePendulum-v5"
CHAIN_ID = "studylib/Chain-v0"
REWARD_THRESHOLD = 9100.0  # gymnasium's InvertedDoublePendulum-v5 registration
# The implementation's time limit under the single env, whose time limit is gymnasium's TimeLimit
# wrapper: the largest the chain takes (its C builds read it as an exact float32).
NO_TIME_LIMIT = MAX_EPISODE_STEPS


def chain_spaces(p: ChainParams) -> tuple[spaces.Box, spaces.Box]:
    """(observation space, action space) of an n-link chain: v5's, sized for n."""
    obs = spaces.Box(-np.inf, np.inf, (p.observation_size,), np.float32)
    return obs, spaces.Box(-1.0, 1.0, (1,), np.float32)


def draw_chain_rows(rng: np.random.Generator, rows: int, p: ChainParams) -> np.ndarray:
    """v5's ``reset_model`` draw for ``rows`` envs from ``rng`` (float64): init_qpos + U(±0.1),
    init_qvel + 0.1 N(0, 1), the chain upright at rest being init_qpos = init_qvel = 0."""
    n1 = p.links + 1
    qpos = rng.uniform(-RESET_NOISE, RESET_NOISE, (rows, n1))
    qvel = RESET_NOISE * rng.standard_normal((rows, n1))
    return np.concatenate([qpos, qvel], axis=1)


def _flat_actions(actions):
    """gymnasium's batched Box (N, 1) as the implementations take one control per env, (N,)."""
    shape = getattr(actions, "shape", None)
    return actions.reshape(shape[0]) if shape is not None and len(shape) == 2 and shape[1] == 1 else actions


class ChainRenderer:
    """Frames of an n-link chain drawn by MuJoCo through gymnasium's ``MujocoEnv``
    (``ChainMujocoEnv``: v5's model at n = 2, its camera scaled with the chain's length), from
    observations: a frame shows positions only, qpos = (x, atan2(sin θ, cos θ)). The MuJoCo model is
    built at the first frame, so that making an env with a render mode (SB3's ``make_vec_env``
    asks for "rgb_array") costs nothing until something renders."""

    # Set once MuJoCo has found no OpenGL platform in this process: every later frame (of any
    # chain) is refused at once, as the first was, because asking MuJoCo again aborts the process
    # (GLFW's second initialization: "__cxa_guard_acquire detected recursive initialization"; so
    # does gymnasium's own v5 on its second render()).
    _no_opengl: str | None = None

    def __init__(self, p: ChainParams, render_mode: str):
        self._params, self._render_mode, self._env = p, render_mode, None

    def frame(self, obs):
        if ChainRenderer._no_opengl is not None:
            raise ConfigError(ChainRenderer._no_opengl)
        n = self._params.links
        qpos = dynamics.observed_qpos(np.asarray(obs, dtype=np.float64), self._params)
        if self._env is None:
            from ..sims.chain.mujoco_env import ChainMujocoEnv  # needs mujoco, as gymnasium's v5 does

            self._env = ChainMujocoEnv(links=n, render_mode=self._render_mode)
        self._env.set_state(qpos, np.zeros(n + 1))
        viewer = self._env.mujoco_renderer.viewer
        if viewer is not None:
            # gymnasium's offscreen viewer makes its OpenGL context current only when it is created:
            # once another MuJoCo env renders or closes (check_env makes and closes one per mode),
            # this one's frames would come back black
            viewer.make_context_current()
        try:
            return self._env.render()
        except Exception as e:  # mujoco.FatalError: no OpenGL context
            if "OpenGL" not in str(e):
                raise
            ChainRenderer._no_opengl = ("MuJoCo has no OpenGL context to render the chain: on a machine without a "
                                        "display, set MUJOCO_GL=egl (or osmesa) before Python imports mujoco")
            raise ConfigError(ChainRenderer._no_opengl) from e

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None


# gymnasium's VectorEnv again among the direct bases (already StudylibVectorEnv's): skrl's
# wrap_env tells gymnasium's API from an env's direct bases alone, and refuses the env otherwise.
class StudylibChainVectorEnv(StudylibVectorEnv, gymnasium.vector.VectorEnv):
    """``num_envs`` n-link chains of implementation ``impl`` (``links``: n, 1 to 32)."""

    metadata = {**StudylibVectorEnv.metadata, "render_fps": 20}  # an environment step is v5's 0.05 s
    sim = "chain"

    def __init__(self, num_envs: int = 1, impl: str = "cpp", *, links: int = 2, **kwargs):
        self._chain = ChainParams(links=links)  # ConfigError for links outside 1..32
        for knob in ("state_factor", "compute_factor"):
            if kwargs.get(knob, 1) != 1:
                raise ConfigError(f"the chain takes no {knob}")
        super().__init__(num_envs, impl, **kwargs)

    def _params(self):
        return self._chain

    def _spaces(self, params):
        return chain_spaces(params)

    def _draw(self, rng, rows):
        return draw_chain_rows(rng, rows, self._chain)

    def _observations(self, rows):
        return self._kind.from_numpy(dynamics.observation(rows, self._chain).astype(np.float32))

    def _actions(self, actions):
        return _flat_actions(actions)

    def _new_renderer(self):
        return ChainRenderer(self._chain, self.render_mode)


# gymnasium's Env again among the direct bases (already OneEnvOfAnImplementation's): skrl's
# wrap_env tells gymnasium's API from an env's direct bases alone.
class StudylibChainEnv(OneEnvOfAnImplementation, gymnasium.Env):
    """One n-link chain: implementation ``impl`` with ``num_envs=1``, for ``gymnasium.make``. As
    gymnasium's InvertedDoublePendulum-v5: ``reset`` draws from ``self.np_random`` (v5's
    distribution), the time limit is the ``TimeLimit`` wrapper ``make`` adds, the step that
    terminates returns the terminal observation; stepping on after it is refused (gym_single.py).
    ``set_state(qpos, qvel)``, ``state_vector()``, ``dt``, ``frame_skip``, ``init_qpos`` and
    ``init_qvel`` are ``MujocoEnv``'s, so code that compares transitions with gymnasium's v5 from
    the same states runs unchanged on ``env.unwrapped``. ``render_mode="rgb_array"``:
    ``ChainRenderer``'s frame of the current observation, (480, 480, 3) uint8 (MujocoEnv's default
    size)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}
    render_id = CHAIN_ID
    restart = "reset() or set_state()"

    def __init__(self, impl: str = "cpp", *, links: int = 2, device=None, render_mode: str | None = None):
        check_render_mode(render_mode, self.metadata["render_modes"])
        self.impl = impl
        self.params = dataclasses.replace(ChainParams(links=links), max_episode_steps=NO_TIME_LIMIT)
        self.env = make(impl, 1, device=device, sim="chain", params=self.params)
        self.render_mode = render_mode
        self.observation_space, self.action_space = chain_spaces(self.params)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._start_from(draw_chain_rows(self.np_random, 1, self.params)[0])
        return self._obs.copy(), {}

    def step(self, action):
        given = action
        try:
            action = np.asarray(action, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError):
            action = None
        if action is None or action.shape != (1,) or not np.isfinite(action[0]):  # beyond ±1 the motor clamps, as v5's
            raise ConfigError(f"action must be one finite float (Box(-1, 1, (1,)); beyond, it acts as -1 or 1), "
                              f"got {given!r}")
        self._before = self.env.get_state()[0], action  # what the terminal state is stepped from (state_vector)
        return self._step_one(action)

    @property
    def dt(self) -> float:
        """Simulated seconds per step, as ``MujocoEnv.dt`` (timestep × frame_skip: v5's 0.05 s)."""
        return self.params.timestep * self.params.frame_skip

    @property
    def frame_skip(self) -> int:
        """Physics steps per environment step, as ``MujocoEnv.frame_skip`` (v5's 5)."""
        return self.params.frame_skip

    @property
    def init_qpos(self) -> np.ndarray:
        """The chain upright on the cart at x = 0, as ``MujocoEnv.init_qpos``: n + 1 zeros (float64),
        the centre of reset's draw."""
        return np.zeros(self.params.links + 1)

    @property
    def init_qvel(self) -> np.ndarray:
        """At rest, as ``MujocoEnv.init_qvel``: n + 1 zeros (float64)."""
        return np.zeros(self.params.links + 1)

    def set_state(self, qpos, qvel) -> None:
        """As gymnasium's ``MujocoEnv.set_state``: the chain at ``qpos`` (cart x, then the n hinge
        angles) and ``qvel`` (n + 1 each, finite), stepping on from there (an episode that had
        terminated goes on from the new state; the time limit's count is the ``TimeLimit``
        wrapper's, which this does not touch, as in gymnasium)."""
        n1 = self.params.links + 1
        wanted = f"set_state takes qpos and qvel of {n1} finite floats each (links = {n1 - 1})"
        try:
            qpos, qvel = (np.asarray(v, dtype=np.float64).reshape(-1) for v in (qpos, qvel))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{wanted}: {e}") from None
        if qpos.shape != (n1,) or qvel.shape != (n1,) or not (np.isfinite(qpos).all() and np.isfinite(qvel).all()):
            raise ConfigError(f"{wanted}, got shapes {qpos.shape} and {qvel.shape}")
        self._start_from(np.concatenate([qpos, qvel]))

    def state_vector(self) -> np.ndarray:
        """As gymnasium's ``MujocoEnv.state_vector``: (qpos, qvel), 2n + 2 floats (float64; the
        implementation's own precision). After the step that terminated, the terminal state, as
        v5's: the implementation has begun its next episode by then (its same-step reset), so the
        terminal state is the float64 reference's step (``dynamics.reference_step``, MuJoCo's
        mj_step to about 1e-10) from the implementation's state before that step with its action,
        which the implementation's own terminal state equals to float32 rounding, as its terminal
        observation does."""
        if self._obs is not None and self._ended:
            row, action = self._before
            return dynamics.reference_step(row[None], action, self.params)[0][0]
        self._refuse_unless_running("state_vector()")
        return self.env.get_state()[0].astype(np.float64)

    def _observe(self, row: np.ndarray) -> np.ndarray:
        return dynamics.observation(row, self.params).astype(np.float32)

    def _step_info(self, reward: float) -> dict:
        """v5's info, its reward terms (``_get_rew``'s ``reward_info``): ``reward_survive`` (the alive
        bonus, 0 on the step that terminates), ``distance_penalty`` (minus ``dynamics.distance_penalty``
        of the tip of the returned observation's state) and ``velocity_penalty`` (the rest of the
        reward), so that the three sum to the reward, as v5's do. The implementations return the
        reward alone, and after the terminating step the state is gone: the tip comes from the
        observation's cart position and angles, at the new state, where v5 reads it at MuJoCo's last
        RK4 stage, about 1e-5 m away (``dynamics.env_step``); that difference falls in the velocity
        term. float64 floats, as v5's."""
        qpos = dynamics.observed_qpos(self._obs.astype(np.float64), self.params)
        survive = 0.0 if self._ended else self.params.healthy_reward
        distance = -float(dynamics.distance_penalty(*dynamics.tip(qpos, self.params), self.params))
        return {"reward_survive": survive, "distance_penalty": distance,
                "velocity_penalty": reward - survive - distance}

    def _new_renderer(self):
        return ChainRenderer(self.params, self.render_mode)

    def _obs_before_reset(self):
        """What ``render()`` draws before the first reset: the initial pose (``init_qpos``, at rest),
        the frame a MujocoEnv draws after ``set_state(init_qpos, init_qvel)``. (gymnasium's v5 draws
        a black frame there: its kinematics are computed at the first reset.)"""
        return self._observe(np.concatenate([self.init_qpos, self.init_qvel]))


def register() -> None:
    """Register both ids with gymnasium (done once, on importing this module), with v5's time
    limit (and, for the n = 2 id, its reward threshold)."""
    for env_id, kwargs, threshold in ((DOUBLE_PENDULUM_ID, {"links": 2}, REWARD_THRESHOLD), (CHAIN_ID, {}, None)):
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=f"{__name__}:StudylibChainEnv",
                               vector_entry_point=f"{__name__}:StudylibChainVectorEnv",
                               max_episode_steps=ChainParams().max_episode_steps, reward_threshold=threshold,
                               kwargs=kwargs)


register()
