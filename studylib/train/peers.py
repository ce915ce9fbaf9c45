"""Two peer trainers, timed by the same clock as our PPO (studylib/train/progress.py).

``sb3``      Stable-Baselines3's PPO (``MlpPolicy``: separate 64-64 tanh actor and critic, the
             study's actor shape) on ``make_vec_env("CartPole-v1")``, i.e. gymnasium's own
             CartPoleEnv, with rl-baselines3-zoo's tuned CartPole-v1 hyperparameters
             (``RL_ZOO_CARTPOLE``), including its budget of 10^5 timesteps over which the learning
             rate and clip range decay linearly. A callback times collection (SB3's rollouts) and
             learning (between rollouts), runs our greedy check and stops SB3 when it passes.
``gymnasium-vector``  the status quo: cleanrl's ppo.py hyperparameters (``CLEANRL_SETTINGS``: 4 envs,
             128 steps, lr 2.5e-4, 4 epochs, entropy 0.01; truncation treated as termination;
             here without cleanrl's learning-rate annealing and value clipping) on gymnasium's
             numpy-vectorized ``CartPoleVectorEnv``, with our PyTorch learner. That env resets
             NEXT_STEP (the step after an episode's end only resets it: action ignored, reward
             0), so those steps are marked invalid and left out of the update.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from .cartpole.collectors import Collector, Trajectory, sample_actions
from .progress import Clock, TrainResult
from .settings import PPOSettings, TrainRun

# rl-baselines3-zoo, hyperparams/ppo.yml, CartPole-v1 ("Tuned"); lin_X: X * progress_remaining.
RL_ZOO_CARTPOLE = {"n_envs": 8, "n_timesteps": 100_000, "n_steps": 32, "batch_size": 256, "gae_lambda": 0.8,
                   "gamma": 0.98, "n_epochs": 20, "ent_coef": 0.0, "learning_rate": "lin_0.001", "clip_range": "lin_0.2"}

# cleanrl's ppo.py defaults (Args), in our settings object.
CLEANRL_SETTINGS = PPOSettings(num_envs=4, num_steps=128, learning_rate=2.5e-4, update_epochs=4, num_minibatches=4,
                               ent_coef=0.01, max_samples=500_000)


class _Linear:
    """rl-zoo's ``lin_X`` schedule: X * progress_remaining (1 at the start, 0 at n_timesteps)."""

    def __init__(self, start: float):
        self.start = start

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.start


def sb3_actor_layers(policy) -> list[tuple[np.ndarray, np.ndarray]]:
    """SB3's MlpPolicy actor (policy_net's linear layers, then action_net) as float32 (W, b) numpy
    pairs in x @ W layout."""
    linears = [m for m in policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)] + [policy.action_net]
    return [(m.weight.detach().cpu().float().T.contiguous().numpy(), m.bias.detach().cpu().float().numpy().copy())
            for m in linears]


def _sb3_actor_arrays(policy) -> dict:
    out = {}
    for i, (w, b) in enumerate(sb3_actor_layers(policy), start=1):
        out[f"W{i}"], out[f"b{i}"] = w, b
    return out


def without_log_folder(model):
    """``model`` (an SB3 algorithm) logging nowhere. SB3's default logger, made at each ``learn``,
    creates an empty folder ``SB3-<date>`` in the temporary directory even with ``verbose=0``
    (stable_baselines3.common.logger.configure): a study of many seeds left hundreds behind."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def sb3_timer(clock: Clock, batch: int, setup_s: float, actor):
    """An SB3 callback that runs ``clock``'s rule on SB3's PPO: its rollouts are collection, the
    time between rollouts its update; after each update, ``clock.check(actor())`` when a check is
    due; SB3 stops at a passing check or when the budget is spent."""
    from stable_baselines3.common.callbacks import BaseCallback

    class _Timer(BaseCallback):
        def _on_training_start(self):
            clock.start(compile_s=setup_s, device="cpu")
            self.mark, self.stop = time.perf_counter(), False

        def _on_rollout_start(self):
            now = time.perf_counter()
            if self.num_timesteps:  # the time since the last rollout ended was SB3's update
                clock.parts["learn"] += now - self.mark
                buf = self.model.ep_info_buffer
                clock.add_update(batch, float(np.mean([e["r"] for e in buf])) if buf else math.nan,
                                 bootstraps_truncation=True)  # SB3 >= 1.8 bootstraps TimeLimit truncations
                if (clock.check_due() and clock.check(actor())) or clock.out_of_budget():
                    self.stop = True
            self.mark = time.perf_counter()

        def _on_rollout_end(self):
            now = time.perf_counter()
            clock.parts["collect"] += now - self.mark
            self.mark = now

        def _on_step(self) -> bool:
            return not self.stop

    return _Timer()


def train_sb3(run: TrainRun, *, log=None) -> TrainResult:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    z = RL_ZOO_CARTPOLE
    n_envs = run.num_envs or z["n_envs"]
    batch = n_envs * z["n_steps"]
    clock = Clock(run, num_envs=n_envs, batch_size=batch, log=log,
                  peer={"settings": {"rl_zoo": dict(z, n_envs=n_envs), **{k: getattr(run.settings, k) for k in
                                     ("eval_every_samples", "eval_episodes", "solve_return", "torch_threads")}},
                        "max_samples": z["n_timesteps"]})
    start = time.perf_counter()
    env = make_vec_env("CartPole-v1", n_envs=n_envs, seed=run.seed)
    model = PPO("MlpPolicy", env, n_steps=z["n_steps"], batch_size=z["batch_size"], gae_lambda=z["gae_lambda"],
                gamma=z["gamma"], n_epochs=z["n_epochs"], ent_coef=z["ent_coef"], learning_rate=_Linear(1e-3),
                clip_range=_Linear(0.2), seed=run.seed, device="cpu", verbose=0)
    without_log_folder(model)
    setup_s = time.perf_counter() - start

    try:
        model.learn(total_timesteps=z["n_timesteps"],
                    callback=sb3_timer(clock, batch, setup_s, lambda: _sb3_actor_arrays(model.policy)))
    finally:
        env.close()
    return clock.finish(_sb3_actor_arrays(model.policy), trainer="sb3-ppo")


class GymnasiumVectorCollector(Collector):
    """gymnasium's ``CartPoleVectorEnv`` (NEXT_STEP autoreset) as a collector, with a validity mask."""

    name = "gymnasium-vector"
    device = "cpu"

    def __init__(self, num_envs: int, seed: int):
        from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

        self.num_envs, self.seed = num_envs, seed
        self.env = CartPoleVectorEnv(num_envs=num_envs, max_episode_steps=500)
        self._generator = torch.Generator().manual_seed(seed)
        self._obs = None

    def warm_up(self) -> None:
        start = time.perf_counter()
        obs, _ = self.env.reset(seed=self.seed)
        self._obs = torch.as_tensor(obs, dtype=torch.float32)
        self._reset_next = np.zeros(self.num_envs, dtype=bool)  # this env's next step only resets it
        self._episode_return = np.zeros(self.num_envs)
        self.compile_s = time.perf_counter() - start

    @torch.no_grad()
    def collect(self, model, num_steps: int) -> Trajectory:
        t_, n = num_steps, self.num_envs
        obs_buf = torch.empty((t_, n, 4))
        actions_buf = torch.empty((t_, n), dtype=torch.int64)
        logp_buf = torch.empty((t_, n))
        rewards = np.empty((t_, n), np.float32)
        terminated = np.empty((t_, n), bool)
        truncated = np.empty((t_, n), bool)
        valid = np.empty((t_, n), bool)
        finished = []
        obs = self._obs
        for t in range(t_):
            obs_buf[t] = obs
            actions, logp = sample_actions(model.logits(obs), self._generator)
            actions_buf[t], logp_buf[t] = actions, logp
            valid[t] = ~self._reset_next
            next_obs, rewards[t], terminated[t], truncated[t], _ = self.env.step(actions.numpy())
            done = (terminated[t] | truncated[t]) & valid[t]
            self._episode_return += rewards[t]
            if done.any():
                finished.append(self._episode_return[done].copy())
                self._episode_return[done] = 0.0
            self._reset_next = done
            obs = torch.as_tensor(next_obs, dtype=torch.float32)
        self._obs = obs
        return Trajectory(obs_buf, actions_buf, logp_buf, torch.from_numpy(rewards), torch.from_numpy(terminated),
                          torch.from_numpy(truncated), next_obs=obs.clone(), final_obs=None,
                          valid=torch.from_numpy(valid),
                          episode_returns=np.concatenate(finished) if finished else np.empty(0))


def train_on_gymnasium_vector(run: TrainRun, *, log=None) -> TrainResult:
    from .cartpole.ppo_torch import TorchPPO, train_loop

    settings = CLEANRL_SETTINGS.replace(**{k: getattr(run.settings, k) for k in
                                           ("eval_every_samples", "eval_episodes", "solve_return", "max_seconds")})
    run = TrainRun(run.collector, run.num_envs or settings.num_envs, run.seed, settings, run.max_seconds)
    collector = GymnasiumVectorCollector(run.n, run.seed)
    learner = TorchPPO(settings, run.seed, "cpu")
    return train_loop(run, collector, learner, log=log, trainer="torch-ppo-cleanrl-settings")


def train_peer(run: TrainRun, *, log=None) -> TrainResult:
    return {"sb3": train_sb3, "gymnasium-vector": train_on_gymnasium_vector}[run.collector](run, log=log)
