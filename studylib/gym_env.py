"""``gym``: real gymnasium CartPole-v1 environments, one Python object per env, stepped in a
Python loop on one core (the paper's status-quo baseline). Observations are batched into one
tensor for PyTorch policy inference, on the CPU or a GPU.

Each env is gymnasium's own ``CartPoleEnv`` class; the loop here adds what gymnasium's wrappers
would (the 500-step TimeLimit, a same-step reset) so that all implementations share one episode
semantics (studylib/episodes.py). The knobs are applied to the real objects: S copies are S
``CartPoleEnv`` objects stepped with the same action, and C sub-steps are C calls to ``step`` with
``tau`` set to tau/C.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from .base import VectorCartPole
from .dynamics import STATE_SIZE
from .episodes import end_of_step, hash_actions_numpy
from .policy import TorchGreedyMLP
from .devices import resolve_torch_device


class GymCartPole(VectorCartPole):
    name = "gym"
    dtype = np.float64

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor):
        return num_envs * state_factor * 8192  # a CartPoleEnv with its spaces and RNG: a few KiB

    def _resolve_device(self, device):
        return resolve_torch_device(device)  # where the policy runs; simulation is always CPU

    def __init__(self, settings):
        super().__init__(settings)
        self._copies = [[self._make_copy() for _ in range(self.state_factor)] for _ in range(self.num_envs)]
        self._policy = TorchGreedyMLP(self.policy_weights, self.device)
        self.elapsed = np.zeros(self.num_envs, np.int64)
        self.episode = np.zeros(self.num_envs, np.int64)
        self._reset()

    def _make_copy(self) -> CartPoleEnv:
        env = CartPoleEnv()
        assert env.kinematics_integrator == "euler"
        env.tau = self.params.tau / self.compute_factor
        return env

    def _reset(self):
        # Episode 0 of copy (i, s) is seeded from (seed, i, s); later resets continue its RNG.
        for i, copies in enumerate(self._copies):
            for s, env in enumerate(copies):
                env.reset(seed=int(np.random.SeedSequence([self.seed, i, s]).generate_state(1)[0]))
        self.elapsed[:] = 0
        self.episode[:] = 0
        self._obs = np.array([copies[0].state for copies in self._copies], dtype=np.float32)
        self._final_obs = self._obs.copy()
        return self._obs.copy()

    def _step(self, actions):
        substeps = self.compute_factor
        obs = self._obs
        terminated = np.zeros(self.num_envs, bool)
        for i, (copies, action) in enumerate(zip(self._copies, actions.tolist())):
            for s, env in enumerate(copies):
                for _ in range(substeps):
                    if s > 0 or substeps > 1:
                        # Only copy 0's step-end state ends an episode: a mid-step crossing or a
                        # crossing of another copy is not one, so gymnasium must not warn about it.
                        env.steps_beyond_terminated = None
                    o, _, term, _, _ = env.step(action)
                if s == 0:
                    obs[i], terminated[i] = o, term
        truncated, done, self.elapsed, self.episode = end_of_step(terminated, self.elapsed, self.episode, self.params)
        self._final_obs = obs.copy()
        for i in np.flatnonzero(done):  # same-step autoreset
            obs[i] = [env.reset()[0] for env in self._copies[i]][0]
        return obs.copy(), np.ones(self.num_envs, np.float32), terminated, truncated

    def final_obs(self):
        return self._final_obs.copy()

    def _set_state(self, states):
        for copies, row in zip(self._copies, states):
            for s, env in enumerate(copies):
                env.state = row[STATE_SIZE * s: STATE_SIZE * (s + 1)].copy()
        self._obs = states[:, :STATE_SIZE].astype(np.float32)

    def get_state(self):
        return np.array([np.concatenate([env.state for env in copies]) for copies in self._copies])

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
