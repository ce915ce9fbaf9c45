"""PPO in PyTorch for the torch-side collectors: GAE, then clipped-surrogate minibatch updates.

The algorithm is cleanrl's ppo.py (and PureJaxRL's) for CartPole: advantages by GAE(gamma,
lambda) with bootstrapping at the rollout's end (and at truncations where the collector gives
the pre-reset observation), ``update_epochs`` passes of ``num_minibatches`` shuffled minibatches,
the clipped policy loss, a value loss weighted by ``vf_coef``, an optional entropy bonus, global
gradient-norm clipping and Adam. The value loss is not clipped (Stable-Baselines3's default).

Determinism: the networks, the minibatch shuffles and (in the collectors) the action draws come
from generators seeded by the run's seed, so on the CPU the same seed gives the same run.
"""

from __future__ import annotations

import math

import torch

from .actor_critic import ActorCritic
from .collectors import Collector, Trajectory, make_collector
from ..progress import Clock, TrainResult
from ..settings import PPOSettings, TrainRun


class TorchPPO:
    """The learner: an ActorCritic, its Adam optimizer and the PPO update."""

    def __init__(self, settings: PPOSettings, seed: int, device: str = "cpu"):
        self.s = settings
        self.device = device
        self.model = ActorCritic(seed).to(device)
        # fused: one kernel over all parameters (the per-parameter loop was ~30% of a minibatch step)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=settings.learning_rate, eps=settings.adam_eps,
                                          fused=True)
        self._shuffle = torch.Generator(device=device).manual_seed(seed ^ 0x5EED)  # minibatch order

    @torch.no_grad()
    def advantages(self, traj: Trajectory) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE advantages and value targets, both (T, N)."""
        s, v = self.s, self.model.value
        t_, n = traj.num_steps, traj.num_envs
        values = v(traj.obs.reshape(t_ * n, -1)).reshape(t_, n)
        # The value after step t: of the next observation, or of the pre-reset observation where
        # the episode was truncated (bootstrapping), or 0 where it terminated.
        next_values = torch.cat([values[1:], v(traj.next_obs)[None]])
        if traj.bootstraps_truncation:
            # torch.where over all steps, not an `if cut.any()` + boolean index: no data-dependent
            # branch, so no host sync on an accelerator (and the meta-device test can run it)
            cut = traj.truncated & ~traj.terminated
            next_values = torch.where(cut, v(traj.final_obs.reshape(t_ * n, -1)).reshape(t_, n), next_values)
            ends_return = traj.terminated  # no value beyond a terminal state
        else:
            ends_return = traj.terminated | traj.truncated  # truncation treated as termination
        episode_ends = traj.terminated | traj.truncated  # GAE does not run across an episode's end
        not_end = (~ends_return).float()
        delta = traj.rewards + s.gamma * next_values * not_end - values
        carry_on = s.gamma * s.gae_lambda * (~episode_ends).float()
        adv = torch.empty_like(delta)
        last = torch.zeros(n, device=delta.device)
        for t in range(t_ - 1, -1, -1):
            last = delta[t] + carry_on[t] * last
            adv[t] = last
        return adv, adv + values

    def update(self, traj: Trajectory) -> dict:
        """One PPO update on a trajectory; returns the last minibatch's losses (floats)."""
        s = self.s
        adv, returns = self.advantages(traj)
        obs, actions, logp_old = traj.obs.reshape(-1, traj.obs.shape[-1]), traj.actions.reshape(-1), traj.logp.reshape(-1)
        adv, returns = adv.reshape(-1), returns.reshape(-1)
        if traj.valid is not None:  # drop a NEXT_STEP env's reset steps (no transition happened)
            keep = traj.valid.reshape(-1)
            obs, actions, logp_old, adv, returns = obs[keep], actions[keep], logp_old[keep], adv[keep], returns[keep]
        size = obs.shape[0]
        mb = max(1, size // s.num_minibatches)
        for _ in range(s.update_epochs):
            order = torch.randperm(size, generator=self._shuffle, device=self.device)
            # one gather per array and epoch; the minibatches are then contiguous slices (views)
            shuffled = [x[order] for x in (obs, actions, logp_old, adv, returns)]
            for start in range(0, size - mb + 1, mb):
                stats = self._minibatch_step(*(x[start:start + mb] for x in shuffled))
        return {k: float(v) for k, v in stats.items()}

    def _minibatch_step(self, obs, actions, logp_old, adv, returns) -> dict:
        s, model = self.s, self.model
        logits = model.logits(obs)
        log_probs = torch.log_softmax(logits, dim=-1)
        logp = log_probs.gather(1, actions[:, None]).squeeze(1)
        if s.norm_adv and adv.numel() > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        ratio = torch.exp(logp - logp_old)
        pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - s.clip_coef, 1 + s.clip_coef)).mean()
        v_loss = 0.5 * (model.value(obs) - returns).square().mean()
        loss = pg_loss + s.vf_coef * v_loss
        entropy = None
        if s.ent_coef > 0:
            entropy = -(log_probs.exp() * log_probs).sum(-1).mean()
            loss = loss - s.ent_coef * entropy
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), s.max_grad_norm)
        self.optimizer.step()
        return {"pg_loss": pg_loss.detach(), "v_loss": v_loss.detach()}


def train_loop(run: TrainRun, collector: Collector, learner: TorchPPO, *, log=None, peer=None,
               trainer: str = "torch-ppo") -> TrainResult:
    """Collect, update, check: until the greedy check passes or the budget is spent."""
    s = learner.s
    n = collector.num_envs
    clock = Clock(run, num_envs=n, batch_size=n * s.num_steps, log=log, peer=peer)
    collector.warm_up()
    clock.start(compile_s=collector.compile_s, device=collector.device)
    while True:
        with clock.phase("collect"):
            traj = collector.collect(learner.model, s.num_steps)
        with clock.phase("learn"):
            learner.update(traj)
        returns = traj.episode_returns
        clock.add_update(int(traj.valid.sum()) if traj.valid is not None else n * s.num_steps,
                         float(returns.mean()) if returns is not None and len(returns) else math.nan,
                         bootstraps_truncation=traj.bootstraps_truncation)
        if clock.check_due() and clock.check(learner.model.actor_arrays()):
            break
        if clock.out_of_budget():
            break
    return clock.finish(learner.model.actor_arrays(), trainer=trainer)


def train(run: TrainRun, *, log=None) -> TrainResult:
    """Train with a torch-side collector (``run.collector`` not ``jax``)."""
    collector = make_collector(run.collector, run.n, run.seed)
    learner = TorchPPO(run.settings, run.seed, collector.device)
    return train_loop(run, collector, learner, log=log)
