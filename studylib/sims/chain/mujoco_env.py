"""``ChainMujocoEnv``: gymnasium's ``InvertedDoublePendulumEnv`` (v5,
gymnasium/envs/mujoco/inverted_double_pendulum_v5.py) generalized to an n-link chain, a
``MujocoEnv`` on the model ``chain_mjcf(n)`` generates, stepped by MuJoCo's own ``mj_step``: the
reference the array dynamics (``dynamics.env_step``, ``episode.advance``) are tested against
(tests/test_chain_conformance.py).

What it generalizes exactly as ``dynamics`` does: the observation (3n + 3 floats), the reward
(``dynamics.reward``), the termination (``dynamics.is_terminated``), timestep and frame_skip by
``ChainParams(links=n)``'s rule (``model.stable_timestep``: 0.01 s × 5 up to n = 8, 0.005 s × 10
up to 16, 0.002 s × 25 up to 32, so an environment step is v5's 0.05 s at every n), v5's reset.

At n = 2 the model differs from v5's ``inverted_double_pendulum.xml`` only by the slider's range
limit (``limited="true" margin="0.01" range="-1 1"``, which ``chain_mjcf`` omits: see its
docstring), so ``qfrc_constraint`` — v5's last observation — is always 0 here, and the step is
v5's wherever v5's cart stays more than 0.01 from |x| = 1 (its constraint inactive).

Rendering is ``MujocoEnv``'s (``render_mode`` "human", "rgb_array", "depth_array",
"rgbd_tuple"), with the camera v5's module declares (``DEFAULT_CAMERA_CONFIG``, which gymnasium's
v5 itself does not pass to ``MujocoEnv``: its frames use MuJoCo's free camera) moved back with the
chain's length, so a chain of any n fills the frame.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
from gymnasium import utils
from gymnasium.envs.mujoco.mujoco_env import MujocoEnv
from gymnasium.spaces import Box

from . import dynamics
from .model import ChainParams, chain_mjcf

# v5's DEFAULT_CAMERA_CONFIG ("distance": 4.1225, looking at 0.1225 m), its distance scaled with
# the chain's length below (n L / 1.2 of v5's)
DEFAULT_CAMERA_CONFIG = {"trackbodyid": 0, "distance": 4.1225, "lookat": np.array((0.0, 0.0, 0.12250000000000005))}


class ChainMujocoEnv(MujocoEnv, utils.EzPickle):
    """An n-link cart-pole chain on MuJoCo: InvertedDoublePendulum-v5 at ``links`` = 2 (less the
    slider limit). Arguments as v5's (``healthy_reward``, ``reset_noise_scale``,
    ``default_camera_config``, and MujocoEnv's ``render_mode``, ``width``, ``height``, ...), plus
    ``links``; timestep and frame_skip are ``ChainParams(links=links)``'s unless ``frame_skip`` is
    given (as v5's argument). No TimeLimit here: v5's is added by its registration
    (max_episode_steps = 1000), and so is this one's by whoever registers it."""

    metadata = {"render_modes": ["human", "rgb_array", "depth_array", "rgbd_tuple"]}

    def __init__(self, links: int = 2, frame_skip: int | None = None, default_camera_config: dict | None = None,
                 healthy_reward: float = 10.0, reset_noise_scale: float = 0.1, **kwargs):
        utils.EzPickle.__init__(self, links, frame_skip, default_camera_config, healthy_reward, reset_noise_scale,
                                **kwargs)
        self.params = ChainParams(links=links, healthy_reward=healthy_reward)  # checks links
        if frame_skip is not None:
            self.params = ChainParams(links=links, healthy_reward=healthy_reward, frame_skip=frame_skip)
        self._healthy_reward = healthy_reward
        self._reset_noise_scale = reset_noise_scale
        if default_camera_config is None:
            scale = self.params.length / 1.2
            default_camera_config = dict(DEFAULT_CAMERA_CONFIG, distance=DEFAULT_CAMERA_CONFIG["distance"] * scale,
                                         lookat=DEFAULT_CAMERA_CONFIG["lookat"] * scale)
        # v5: observation_space = Box(low=-np.inf, high=np.inf, shape=(9,), dtype=np.float64)
        observation_space = Box(low=-np.inf, high=np.inf, shape=(self.params.observation_size,), dtype=np.float64)
        # MujocoEnv loads its model from a path: chain_mjcf(n) is written to a temporary file, read
        # once here (MjModel.from_xml_path) and removed (the model is compiled by then)
        with tempfile.TemporaryDirectory(prefix="chain_mjcf_") as folder:
            path = os.path.join(folder, f"chain_{links}.xml")
            with open(path, "w") as f:
                f.write(chain_mjcf(links, self.params))
            MujocoEnv.__init__(self, path, self.params.frame_skip, observation_space=observation_space,
                               default_camera_config=default_camera_config, **kwargs)
        self.metadata = {"render_modes": ["human", "rgb_array", "depth_array", "rgbd_tuple"],
                         "render_fps": int(np.round(1.0 / self.dt))}

    def step(self, action):
        """v5's, the tip read where v5 reads it (the last RK4 stage's kinematics)::

            self.do_simulation(action, self.frame_skip)
            x, _, y = self.data.site_xpos[0]
            observation = self._get_obs()
            terminated = bool(y <= 1)
            reward, reward_info = self._get_rew(x, y, terminated)

        with ``y <= 1`` generalized as ``dynamics.is_terminated`` (y <= n L / 1.2)."""
        self.do_simulation(action, self.frame_skip)
        x, _, y = self.data.site_xpos[0]
        observation = self._get_obs()
        terminated = bool(dynamics.is_terminated(y, self.params))
        reward, reward_info = self._get_rew(x, y, terminated)
        info = reward_info
        if self.render_mode == "human":
            self.render()
        # truncation=False as the time limit is handled by the `TimeLimit` wrapper added during `make`
        return observation, reward, terminated, False, info

    def _get_rew(self, x, y, terminated):
        """v5's generalized as ``dynamics.reward`` (called here: one statement of the rule; its
        height target and its weight of every hinge after the first as v5's second)::

            v1, v2 = self.data.qvel[1:3]
            dist_penalty = 0.01 * x**2 + (y - 2) ** 2
            vel_penalty = 1e-3 * v1**2 + 5e-3 * v2**2
            alive_bonus = self._healthy_reward * int(not terminated)
            reward = alive_bonus - dist_penalty - vel_penalty

        ``info``'s terms as v5's: the alive bonus, the velocity penalty 1e-3 θ̇_1² + 5e-3 Σ_{k≥2} θ̇_k²,
        and the distance penalty the rest of ``dynamics.reward``."""
        qvel = self.data.qvel
        reward = float(dynamics.reward(x, y, qvel, terminated, self.params))
        alive_bonus = self._healthy_reward * int(not terminated)
        vel_penalty = 1e-3 * qvel[1] ** 2 + 5e-3 * float(np.sum(qvel[2:] ** 2))
        reward_info = {"reward_survive": alive_bonus, "distance_penalty": reward - alive_bonus + vel_penalty,
                       "velocity_penalty": -vel_penalty}
        return reward, reward_info

    def _get_obs(self):
        """v5's, as it is (3n + 3 floats; the last, the slider's constraint force, is 0: no limit)::

            self.data.qpos[:1],  # cart x pos
            np.sin(self.data.qpos[1:]),  # link angles
            np.cos(self.data.qpos[1:]),
            np.clip(self.data.qvel, -10, 10),
            np.clip(self.data.qfrc_constraint, -10, 10)[:1],
        """
        return np.concatenate([self.data.qpos[:1], np.sin(self.data.qpos[1:]), np.cos(self.data.qpos[1:]),
                               np.clip(self.data.qvel, -10, 10), np.clip(self.data.qfrc_constraint, -10, 10)[:1]]).ravel()

    def reset_model(self):
        """v5's, as it is::

            self.set_state(
                self.init_qpos + self.np_random.uniform(low=noise_low, high=noise_high, size=self.model.nq),
                self.init_qvel + self.np_random.standard_normal(self.model.nv) * self._reset_noise_scale,
            )
        """
        noise_low = -self._reset_noise_scale
        noise_high = self._reset_noise_scale
        self.set_state(
            self.init_qpos + self.np_random.uniform(low=noise_low, high=noise_high, size=self.model.nq),
            self.init_qvel + self.np_random.standard_normal(self.model.nv) * self._reset_noise_scale,
        )
        return self._get_obs()

    def state(self) -> np.ndarray:
        """(qpos, qvel), 2(n+1) floats: the array dynamics' state."""
        return self.state_vector()
