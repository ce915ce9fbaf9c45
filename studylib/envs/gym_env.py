"""``gym``: real gymnasium CartPole-v1 environments, one Python object per env, stepped in a
Python loop on one core (the paper's status-quo baseline; ``GymChain`` below: gymnasium MujocoEnv
objects of the n-link chain, the same way). Observations are batched into one
tensor for PyTorch policy inference, on the CPU or a GPU.

Each env is gymnasium's own ``CartPoleEnv`` class; the loop here adds what gymnasium's wrappers
would (the 500-step TimeLimit, a same-step reset) so that all implementations share one episode
semantics (studylib/episodes.py). The knobs are applied to the real objects: C sub-steps are C
calls to ``step`` with ``tau`` set to tau/C; the state factor's 4*(S-1) carried floats
(``studylib.sims.cartpole``) are one float64 array beside the objects, sign-flipped once per step
(``dynamics.carry``), as every implementation's are.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from . import footprint
from .base import VectorCartPole, VectorEnv
from ..sims.cartpole import RESET_HIGH, RESET_LOW, STATE_SIZE, carry
from ..episodes import end_of_step, hash_actions_numpy
from ..policy import GAUSSIAN_LOG_STD, TorchGreedyMLP, gaussian_actions
from ..sims.chain import dynamics as chain_dynamics, episode as chain_episode
from ..devices import resolve_torch_device


class GymCartPole(VectorCartPole):
    name = "gym"
    dtype = np.float64

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.gym_cartpole(num_envs, state_factor, params)

    def _resolve_device(self, device):
        return resolve_torch_device(device)  # where the policy runs; simulation is always CPU

    def __init__(self, settings):
        super().__init__(settings)
        self._envs = [self._make_env() for _ in range(self.num_envs)]
        self._policy = TorchGreedyMLP(self.policy_weights, self.device)
        self.elapsed = np.zeros(self.num_envs, np.int64)
        self.episode = np.zeros(self.num_envs, np.int64)
        self._reset()

    def _make_env(self) -> CartPoleEnv:
        env = CartPoleEnv()
        assert env.kinematics_integrator == "euler"
        env.tau = self.params.tau / self.compute_factor
        return env

    def _reset(self):
        # Episode 0 of env i is seeded from (seed, i); later resets continue its RNG. The carried
        # floats are drawn once, from (seed, "carried").
        for i, env in enumerate(self._envs):
            env.reset(seed=int(np.random.SeedSequence([self.seed, i]).generate_state(1)[0]))
        rng = np.random.default_rng([self.seed, 0xCA])
        self._carried = rng.uniform(RESET_LOW, RESET_HIGH, (self.num_envs, self.row_len - STATE_SIZE))
        self.elapsed[:] = 0
        self.episode[:] = 0
        self._obs = np.array([env.state for env in self._envs], dtype=np.float32)
        self._final_obs = self._obs.copy()
        return self._obs.copy()

    def _step(self, actions):
        substeps = self.compute_factor
        obs = self._obs
        terminated = np.zeros(self.num_envs, bool)
        for i, (env, action) in enumerate(zip(self._envs, actions.tolist())):
            for _ in range(substeps):
                if substeps > 1:
                    # Only the step-end state ends an episode: a mid-step crossing is not one, so
                    # gymnasium must not warn about it.
                    env.steps_beyond_terminated = None
                o, _, term, _, _ = env.step(action)
            obs[i], terminated[i] = o, term
        self._carried = carry(self._carried)
        truncated, done, self.elapsed, self.episode = end_of_step(terminated, self.elapsed, self.episode, self.params)
        self._final_obs = obs.copy()
        for i in np.flatnonzero(done):  # same-step autoreset
            obs[i] = self._envs[i].reset()[0]
        return obs.copy(), np.ones(self.num_envs, np.float32), terminated, truncated

    def final_obs(self):
        return self._final_obs.copy()

    def _restart(self, mask):
        # As the same-step reset: the env's own reset, continuing its RNG.
        for i in np.flatnonzero(mask):
            self._obs[i] = self._envs[i].reset()[0]
        self._final_obs[mask] = self._obs[mask]
        self.elapsed[mask] = 0
        self.episode[mask] += 1
        return self._obs.copy()

    def _set_state(self, states):
        for env, row in zip(self._envs, states):
            env.state = row[:STATE_SIZE].copy()
        self._carried = states[:, STATE_SIZE:].copy()
        self._obs = states[:, :STATE_SIZE].astype(np.float32)

    def get_state(self):
        return np.concatenate([np.array([env.state for env in self._envs]), self._carried], axis=1)

    def policy_actions(self) -> np.ndarray:
        # The status quo: one inference minibatch from all envs' observations, copied to the device.
        obs = torch.from_numpy(self._obs).to(self.device)
        return self._policy(obs).cpu().numpy()

    def _rollout(self, num_steps, policy):
        done = 0
        for _ in range(num_steps):
            actions = self.policy_actions() if policy == "mlp" else hash_actions_numpy(self.seed, self.episode, self.elapsed)
            _, _, terminated, truncated = self._step(actions)
            done += int(np.count_nonzero(terminated | truncated))
        return done


class GymChain(VectorEnv):
    """``gym`` for the n-link chain: what RL users step today, one gymnasium ``MujocoEnv`` per
    environment (``studylib.sims.chain.mujoco_env.ChainMujocoEnv`` on ``chain_mjcf(n)``: MuJoCo C's
    float64 ``mj_step``, v5's observation, reward and termination), stepped in a Python loop on one
    core as the paper's gym row, the policy batched in PyTorch. The loop adds what gymnasium's
    wrappers would (the 1000-step TimeLimit, a same-step reset), and each episode starts from the
    hashed reset draw every implementation starts from (``episode.reset_states``, set with
    ``MujocoEnv.set_state``), so its rows count the same episodes as the others'."""

    name = "gym"
    dtype = np.float64

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.gym_chain(num_envs, state_factor, params)

    def _resolve_device(self, device):
        return resolve_torch_device(device)  # where the policy runs; simulation is always CPU

    def __init__(self, settings):
        super().__init__(settings)
        from ..sims.chain.mujoco_env import ChainMujocoEnv

        self._envs = [ChainMujocoEnv(links=self.params.links) for _ in range(self.num_envs)]
        self._layers = [(torch.from_numpy(w).to(self.device), torch.from_numpy(b).to(self.device))
                        for w, b in self.policy_weights.layers()]
        self.log_std = GAUSSIAN_LOG_STD
        self._env_index = np.arange(self.num_envs, dtype=np.uint32)
        self.elapsed = np.zeros(self.num_envs, np.int64)
        self.episode = np.zeros(self.num_envs, np.int64)
        self._reset()

    def _start(self, rows, episodes) -> np.ndarray:
        """Each env of ``rows`` at its hashed reset draw of ``episodes``; their observations."""
        states = chain_episode.reset_states(self.seed, self._env_index[rows], episodes.astype(np.uint32),
                                            self.params).astype(np.float64)
        n1 = self.params.links + 1
        for i, row in zip(rows, states):
            self._envs[i].reset(seed=int(self.seed))
            self._envs[i].set_state(row[:n1], row[n1:])
        return chain_dynamics.observation(states, self.params).astype(np.float32)

    def _reset(self):
        self.elapsed[:] = 0
        self.episode[:] = 0
        self._obs = self._start(np.arange(self.num_envs), self.episode)
        self._final_obs = self._obs.copy()
        return self._obs.copy()

    def _step(self, actions):
        obs, reward = self._obs, np.empty(self.num_envs, np.float32)
        terminated = np.zeros(self.num_envs, bool)
        for i, (env, action) in enumerate(zip(self._envs, actions.tolist())):
            o, r, term, _, _ = env.step(np.array([action]))
            obs[i], reward[i], terminated[i] = o, r, term
        truncated, done, self.elapsed, self.episode = end_of_step(terminated, self.elapsed, self.episode, self.params)
        self._final_obs = obs.copy()
        rows = np.flatnonzero(done)
        if len(rows):  # same-step autoreset
            obs[rows] = self._start(rows, self.episode[rows])
        return obs.copy(), reward, terminated, truncated

    def final_obs(self):
        return self._final_obs.copy()

    def _restart(self, mask):
        rows = np.flatnonzero(mask)
        self._obs[rows] = self._start(rows, self.episode[rows] + 1)
        self._final_obs[mask] = self._obs[mask]
        self.elapsed[mask] = 0
        self.episode[mask] += 1
        return self._obs.copy()

    def _set_state(self, states):
        n1 = self.params.links + 1
        for env, row in zip(self._envs, states):
            env.set_state(row[:n1], row[n1:])
        self._obs = chain_dynamics.observation(states, self.params).astype(np.float32)

    def get_state(self):
        return np.array([np.concatenate([env.data.qpos, env.data.qvel]) for env in self._envs])

    def _rollout(self, num_steps, policy):
        done = 0
        for _ in range(num_steps):
            if policy == "mlp":  # one inference minibatch from all envs' observations, as CartPole's row
                with torch.inference_mode():
                    obs = torch.from_numpy(self._obs).to(self.device)
                    noise = torch.from_numpy(chain_episode.policy_noise(
                        self.seed, self._env_index, self.episode.astype(np.uint32),
                        self.elapsed.astype(np.uint32))).to(self.device)
                    actions = gaussian_actions(self._layers, obs, noise, self.log_std, torch).cpu().numpy()
            else:
                actions = chain_episode.hash_controls(self.seed, self._env_index, self.episode.astype(np.uint32),
                                                      self.elapsed.astype(np.uint32))
            _, _, terminated, truncated = self._step(actions)
            done += int(np.count_nonzero(terminated | truncated))
        return done
