"""PPO for continuous actions on the chain in PyTorch, with any studylib collector.

The same algorithm and settings as ``chain_ppo_jax`` (cleanrl's ppo_continuous_action.py; see
its docstring for the quoted agent and loss, and ``chain_settings`` for where both differ from
cleanrl): a Gaussian policy with a state-independent learned log-std, tanh 64-64 actor and critic
(orthogonal initialization with cleanrl's gains), GAE with truncations bootstrapped
(``ppo_torch.TorchPPO.advantages``), the clipped objective and the clipped value loss,
gradient-norm clipping and Adam. Collection: ``collectors.make_collector`` (the step collector, or
fused's kernel collector), which also keeps the observation normalization and reward scaling.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import gaussian
from ..cartpole.actor_critic import _mlp
from .evaluate import ChainClock
from .collectors import ChainStepCollector, make_collector
from .policy import HIDDEN, make_policy_arrays
from .settings import ChainPPOSettings, ChainRun
from ..cartpole.collectors import Trajectory
from ..cartpole.ppo_torch import TorchPPO
from ..progress import TrainResult


class GaussianActorCritic(nn.Module):
    """cleanrl's Agent: actor_mean and critic (tanh 64-64 MLPs) and actor_logstd."""

    def __init__(self, obs_size: int, seed: int, init_log_std: float = 0.0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.actor = _mlp((obs_size, HIDDEN, HIDDEN, 1), 0.01, g)
        self.critic = _mlp((obs_size, HIDDEN, HIDDEN, 1), 1.0, g)
        self.log_std = nn.Parameter(torch.full((1,), float(init_log_std)))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    @torch.no_grad()
    def actor_layers(self):
        """The actor's (W, b) as numpy arrays in x @ W layout."""
        return [(m.weight.detach().cpu().T.numpy(), m.bias.detach().cpu().numpy())
                for m in self.actor if isinstance(m, nn.Linear)]


class ChainTorchPPO(TorchPPO):
    """``TorchPPO`` (its GAE, Adam, minibatch shuffles) with the Gaussian policy's loss."""

    def __init__(self, settings: ChainPPOSettings, seed: int, device: str = "cpu"):
        self.s, self.device = settings, device
        self.model = GaussianActorCritic(settings.chain.observation_size, seed, settings.init_log_std).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=settings.learning_rate, eps=settings.adam_eps,
                                          fused=True)
        self._shuffle = torch.Generator(device=device).manual_seed(seed ^ 0x5EED)

    def update(self, traj: Trajectory) -> dict:
        s = self.s
        adv, returns = self.advantages(traj)
        values = returns - adv
        data = (traj.obs.reshape(-1, traj.obs.shape[-1]), traj.actions.reshape(-1, 1), traj.logp.reshape(-1),
                adv.reshape(-1), returns.reshape(-1), values.reshape(-1))
        size = data[0].shape[0]
        mb = s.minibatch_size
        for _ in range(s.update_epochs):
            order = torch.randperm(size, generator=self._shuffle, device=self.device)
            shuffled = [x[order] for x in data]
            for start in range(0, size - mb + 1, mb):
                stats = self._minibatch_step(*(x[start:start + mb] for x in shuffled))
        return {k: float(v) for k, v in stats.items()}

    def _minibatch_step(self, obs, actions, logp_old, adv, returns, values_old) -> dict:
        s, model = self.s, self.model
        logp = gaussian.log_prob(model.actor(obs), model.log_std, actions, torch)
        if s.norm_adv:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        ratio = torch.exp(logp - logp_old)
        pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - s.clip_coef, 1 + s.clip_coef)).mean()
        value = model.value(obs)
        v_loss = (value - returns).square()
        if s.clip_vloss:
            clipped = values_old + (value - values_old).clamp(-s.clip_coef, s.clip_coef)
            v_loss = torch.max(v_loss, (clipped - returns).square())
        v_loss = 0.5 * v_loss.mean()
        loss = pg_loss + s.vf_coef * v_loss
        if s.ent_coef > 0:
            loss = loss - s.ent_coef * gaussian.entropy(model.log_std, torch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), s.max_grad_norm)
        self.optimizer.step()
        return {"pg_loss": pg_loss.detach(), "v_loss": v_loss.detach()}


def policy_arrays(learner: ChainTorchPPO, collector: ChainStepCollector) -> dict:
    mean, var, clip = collector.normalization()
    return make_policy_arrays(learner.model.actor_layers(), learner.model.log_std.detach().cpu().numpy(), mean, var,
                              clip)


def train(run: ChainRun, *, log=None, progress=None) -> TrainResult:
    """Collect, update, check: until gymnasium's judge says solved or the budget is spent."""
    s = run.settings
    collector = make_collector(run.collector, s, run.seed)
    learner = ChainTorchPPO(s, run.seed, collector.device)
    clock = ChainClock(run, log=log, progress=progress)
    collector.warm_up()
    clock.start(compile_s=collector.compile_s, device=collector.device)
    while True:
        with clock.phase("collect"):
            traj = collector.collect(learner.model, s.num_steps)
        with clock.phase("learn"):
            learner.update(traj)
        returns = traj.episode_returns
        clock.add_update(s.batch_size, float(returns.mean()) if len(returns) else math.nan, bootstraps_truncation=True)
        if clock.check_due() and clock.check(policy_arrays(learner, collector)):
            break
        if clock.out_of_budget():
            break
    return clock.finish(policy_arrays(learner, collector), trainer="torch-ppo-continuous")
