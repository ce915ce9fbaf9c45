"""The PyTorch PPO over a population of seeds in one batched model: S actor-critics as stacked
weights, each layer one batched matmul (``torch.baddbmm``) for all seeds, one Adam for all.

The issue's shape for PyTorch (PureJaxRL's vmap over seeds, written as batched matmuls): the
weights of S ``ActorCritic`` (each initialized as a single run of its seed would be) are stacked
into (S, fan_in, fan_out) tensors; a forward pass is one ``baddbmm`` per layer for all seeds.
The loss is the sum of the seeds' losses, so seed k's gradient is its own loss's gradient.
Gradient-norm clipping is per seed (each seed's norm over its own parameters, as
``clip_grad_norm_`` of a single run); Adam is elementwise, so one fused Adam over the stacked
tensors is S independent Adams (all seeds step together, so they share its step count). Each
seed's minibatch order comes from its own generator, its advantages are normalized over its own
minibatch. The collector (``population_collectors``) steps all seeds' environments in one call.

    from studylib.train.cartpole.population_torch import train_population
    results = train_population([TrainRun("torch", 64, seed=k) for k in range(16)], on_result=save)

The contract is ``ppo_jax.train_population``'s: one collector, N, settings and budget for all
runs; a TrainResult per seed, ``on_result`` as each seed finishes (solved, out of samples or of
the shared budget); a finished seed leaves the model, the optimizer and the sampling (its
environments keep being stepped with action 0, unused: the env is not rebuilt); ``wall_s`` is the population's
shared wall-clock (paused while a finished seed is judged on gymnasium), samples and updates are
the seed's own.
"""

from __future__ import annotations

import math
import time

import torch

from .actor_critic import ActorCritic
from .collectors import Trajectory
from .population_collectors import PopulationCollector
from .ppo_torch import TorchPPO
from ..progress import Clock, SharedTime, TrainResult, check_population
from ..results import TORCH_POPULATION_TRAINER
from ..settings import PPOSettings, TrainRun


def _stack(layers) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """[(W, b)] per layer from S nn.Sequential MLPs: W (S, fan_in, fan_out), b (S, fan_out)."""
    linears = [[m for m in mlp if isinstance(m, torch.nn.Linear)] for mlp in layers]
    stacked = []
    for depth in range(len(linears[0])):
        w = torch.stack([ls[depth].weight.detach().T for ls in linears]).contiguous().requires_grad_()
        b = torch.stack([ls[depth].bias.detach() for ls in linears]).contiguous().requires_grad_()
        stacked.append((w, b))
    return stacked


def _mlp(layers, x: torch.Tensor) -> torch.Tensor:
    """x (S, B, fan_in) through tanh layers: one baddbmm per layer for all seeds."""
    for w, b in layers[:-1]:
        x = torch.tanh(torch.baddbmm(b[:, None, :], x, w))
    w, b = layers[-1]
    return torch.baddbmm(b[:, None, :], x, w)


class PopulationActorCritic:
    """S ActorCritics (seeds ``seeds``) as stacked tensors. ``logits``/``value`` take (S, B, 4);
    ``value`` also takes flat (L * S * N, 4) rows in a trajectory's layout (``block`` = N)."""

    def __init__(self, seeds, block: int, device: str = "cpu"):
        models = [ActorCritic(int(s)) for s in seeds]  # the single run's initialization, seed by seed
        self.size, self.block = len(models), block
        self.actor = [tuple(t.to(device).detach().requires_grad_() for t in layer) for layer in _stack([m.actor for m in models])]
        self.critic = [tuple(t.to(device).detach().requires_grad_() for t in layer) for layer in _stack([m.critic for m in models])]

    def parameters(self) -> list[torch.Tensor]:
        return [t for layer in self.actor + self.critic for t in layer]

    def keep(self, kept: list[int]) -> None:
        """Only seeds ``kept`` (indices into the current stack) from now on, in that order."""
        index = torch.tensor(kept, device=self.actor[0][0].device)
        cut = lambda layers: [tuple(t.detach().index_select(0, index).requires_grad_() for t in layer) for layer in layers]  # noqa: E731
        self.actor, self.critic, self.size = cut(self.actor), cut(self.critic), len(kept)

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        return _mlp(self.actor, obs)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.dim() == 3:
            return _mlp(self.critic, obs)[..., 0]
        # rows ordered (L, S, N): regroup per seed, evaluate, restore the order
        s, n = self.size, self.block
        per_seed = obs.reshape(-1, s, n, obs.shape[-1]).transpose(0, 1).reshape(s, -1, obs.shape[-1])
        return _mlp(self.critic, per_seed)[..., 0].reshape(s, -1, n).transpose(0, 1).reshape(-1)

    @torch.no_grad()
    def actor_arrays(self) -> list[dict]:
        """Every seed's actor as float32 arrays W1 b1 W2 b2 W3 b3 (one copy to the host)."""
        host = [(w.detach().to("cpu", torch.float32).numpy(), b.detach().to("cpu", torch.float32).numpy())
                for w, b in self.actor]
        return [{name: a[k].copy() for i, (w, b) in enumerate(host, start=1) for name, a in ((f"W{i}", w), (f"b{i}", b))}
                for k in range(self.size)]


def clip_grad_norm_per_seed(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_`` for each seed apart: seed k's gradients (index k of the
    first dimension of every tensor) scaled by min(1, max_norm / (its norm + 1e-6)). Returns the
    norms (S,)."""
    grads = [p.grad for p in params]
    norms = torch.stack([g.reshape(g.shape[0], -1).square().sum(1) for g in grads]).sum(0).sqrt()
    scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
    return norms


class PopulationPPO:
    """The learner of S seeds: a PopulationActorCritic, one Adam, the PPO update of every seed."""

    def __init__(self, settings: PPOSettings, seeds, block: int, device: str = "cpu"):
        self.s, self.device, self.size, self.block = settings, device, len(seeds), block
        self.model = PopulationActorCritic(seeds, block, device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=settings.learning_rate, eps=settings.adam_eps,
                                          fused=True)
        # each seed's minibatch order: the single run's generator (TorchPPO: seed ^ 0x5EED)
        self._shuffles = [torch.Generator(device=device).manual_seed(int(s) ^ 0x5EED) for s in seeds]

    def keep(self, kept: list[int]) -> None:
        """Train only seeds ``kept`` (indices into the current stack) from now on: their weights,
        Adam moments and shuffle generators, nothing else changed (a finished seed's work stops)."""
        old = self.model.parameters()
        self.model.keep(kept)
        index = torch.tensor(kept, device=self.device)
        state = self.optimizer.state
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.s.learning_rate, eps=self.s.adam_eps,
                                          fused=True)
        for p_old, p_new in zip(old, self.model.parameters()):
            if p_old in state:
                st = state[p_old]
                self.optimizer.state[p_new] = {"step": st["step"].clone(), "exp_avg": st["exp_avg"].index_select(0, index),
                                               "exp_avg_sq": st["exp_avg_sq"].index_select(0, index)}
        self._shuffles = [self._shuffles[k] for k in kept]
        self.size = len(kept)

    def advantages(self, steps: Trajectory) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE per environment, (T, S * N): TorchPPO's, with the population's critic."""
        return TorchPPO.advantages(self, steps)

    def _per_seed(self, x: torch.Tensor) -> torch.Tensor:
        """(T, S * N, ...) -> (S, T * N, ...): each seed's samples, in a single run's (t, env) order."""
        t_ = x.shape[0]
        return x.reshape(t_, self.size, self.block, *x.shape[2:]).transpose(0, 1).reshape(self.size, t_ * self.block, *x.shape[2:])

    def update(self, steps: Trajectory) -> None:
        """One PPO update of every seed on its blocks of ``steps`` (T, size * N, ...)."""
        s = self.s
        if steps.valid is not None:
            raise ValueError("a population's collectors reset in the step (no invalid steps)")
        adv, returns = self.advantages(steps)
        data = [self._per_seed(x) for x in (steps.obs, steps.actions, steps.logp, adv, returns)]
        size = data[0].shape[1]
        mb = max(1, size // s.num_minibatches)
        rows = torch.arange(self.size, device=self.device)[:, None]
        for _ in range(s.update_epochs):
            order = torch.stack([torch.randperm(size, generator=g, device=self.device) for g in self._shuffles])
            shuffled = [x[rows, order] for x in data]
            for start in range(0, size - mb + 1, mb):
                self._minibatch_step(*(x[:, start:start + mb] for x in shuffled))

    def _minibatch_step(self, obs, actions, logp_old, adv, returns) -> None:
        s, model = self.s, self.model
        log_probs = torch.log_softmax(model.logits(obs), dim=-1)  # (S, mb, 2)
        logp = log_probs.gather(2, actions[..., None]).squeeze(2)
        if s.norm_adv and adv.shape[1] > 1:
            adv = (adv - adv.mean(1, keepdim=True)) / (adv.std(1, keepdim=True) + 1e-8)
        ratio = torch.exp(logp - logp_old)
        pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - s.clip_coef, 1 + s.clip_coef)).mean(1)
        v_loss = 0.5 * (model.value(obs) - returns).square().mean(1)
        loss = pg_loss + s.vf_coef * v_loss  # (S,): seed k's loss
        if s.ent_coef > 0:
            loss = loss - s.ent_coef * (-(log_probs.exp() * log_probs).sum(-1).mean(1))
        self.optimizer.zero_grad(set_to_none=True)
        loss.sum().backward()  # seed k's parameters get seed k's gradient only
        clip_grad_norm_per_seed(self.model.parameters(), s.max_grad_norm)
        self.optimizer.step()


def _check_runs(runs: list[TrainRun]) -> None:
    first = runs[0]
    if any((r.collector, r.n, r.settings, r.budget_seconds) != (first.collector, first.n, first.settings,
                                                                  first.budget_seconds) for r in runs):
        raise ValueError("a population shares the collector, N, the settings and the budget")
    if len({r.seed for r in runs}) != len(runs):
        raise ValueError("a population's seeds must differ")


def train_population(runs: list[TrainRun], *, log=None, on_result=None, device: str = "cpu") -> list[TrainResult]:
    """Train every run (one seed each; the same collector, N, settings and budget) as one batched
    PyTorch PPO; the results in the order of ``runs`` (see the module's doc for the contract)."""
    if not runs:
        return []
    _check_runs(runs)
    s, n, size = runs[0].settings, runs[0].n, len(runs)
    threads = torch.get_num_threads()
    torch.set_num_threads(s.torch_threads)
    try:
        seeds = [r.seed for r in runs]
        collector = PopulationCollector(runs[0].collector, n, seeds, device)
        learner = PopulationPPO(s, seeds, n, collector.device)
        shared = SharedTime()
        clocks = [Clock(r, num_envs=n, batch_size=n * s.num_steps, log=log, now=shared.now, population=size)
                  for r in runs]
        collector.warm_up()
        for c in clocks:
            c.start(compile_s=collector.compile_s, device=collector.device)
        results: list[TrainResult | None] = [None] * size
        active = list(range(size))
        while active:
            t = time.perf_counter()
            traj = collector.collect(learner.model, s.num_steps)
            collect_s = time.perf_counter() - t
            learner.update(traj.blocks(collector.active))
            learn_s = time.perf_counter() - t - collect_s
            for i in active:
                c = clocks[i]
                c.parts["collect"] += collect_s  # the population's: shared
                c.parts["learn"] += learn_s
                returns = traj.episode_returns[i]
                c.add_update(n * s.num_steps, float(returns.mean()) if len(returns) else math.nan,
                             bootstraps_truncation=True)
            done, arrays = [], None
            if clocks[active[0]].check_due():
                arrays = dict(zip(active, learner.model.actor_arrays()))  # the model's seed j is active[j]
                passed = check_population([clocks[i] for i in active], [arrays[i] for i in active], s)
                done = [i for i, ok in zip(active, passed) if ok]
            for i in active:
                if i in done or clocks[i].out_of_budget():
                    t_judge = time.perf_counter()
                    arrays = arrays or dict(zip(active, learner.model.actor_arrays()))
                    results[i] = clocks[i].finish(arrays[i], trainer=TORCH_POPULATION_TRAINER)
                    if on_result is not None:
                        on_result(results[i])
                    shared.pause(time.perf_counter() - t_judge)
            if any(results[i] is not None for i in active):
                kept = [j for j, i in enumerate(active) if results[i] is None]
                active = [active[j] for j in kept]
                if active:  # the finished seeds stop costing: out of the model, sampled no more
                    learner.keep(kept)
                    collector.active = active
        return results
    finally:
        torch.set_num_threads(threads)
