"""PPO on CartPole-v1 with every collector: does faster collection train faster?

    from studylib.train import TrainRun, train
    result = train(TrainRun("fused", 4096, seed=0))     # a TrainResult; .as_dict() is the JSON
    python -m studylib.train --collector fused --num-envs 4096 --seed 0 --json

    results = train_population([TrainRun("jax", 64, seed=k) for k in range(32)], on_result=save)

``settings.PPOSettings`` holds every hyperparameter (``settings.collector_spec``: what a collector
is); ``peers`` times Stable-Baselines3 and our PPO with cleanrl's settings on gymnasium's vector env
by the same clock (``progress``); ``evaluate`` judges a greedy actor; ``results`` keeps results on
disk; ``stats`` aggregates seeds (rliable's IQM and probability of improvement, bootstrap
intervals, censored times to solve); ``chapter`` and ``answers`` are the training chapter's;
``ppo_jax_parts`` holds what both JAX trainers share (GAE, the minibatch epochs, K updates in one
scan, collection timed alone). Two rooms hold the trainers:

``cartpole/``  ``collectors`` turns an implementation into T-step trajectories; ``ppo_torch``
               (PyTorch PPO) and ``ppo_jax`` (fully jitted in JAX; many seeds in one vmapped
               program with ``ppo_jax.train_population``) learn from them; ``population_torch`` is
               the PyTorch PPO over many seeds in one batched model (``population_collectors``: all
               seeds' environments in one call); ``train_population`` picks the JAX or the PyTorch one
``chain/``     the n-link chain (continuous actions), with the same clock: ``train_chain(ChainRun(
               "jax", seed=0, settings=ChainPPOSettings(links=2)))``; ``settings``, ``ppo_jax`` /
               ``ppo_torch`` (the trainers), ``collectors`` (any implementation, stepped),
               ``gaussian`` and ``running_norm`` (the policy's distribution, the normalizations),
               ``policy`` (the trained policy as arrays), ``evaluate`` and ``clock`` (gymnasium's
               judge, and when it is called), ``cli``
"""

from __future__ import annotations

from .chain.settings import CHAIN_COLLECTORS, ChainPPOSettings, ChainRun
from .settings import (
    COLLECTORS,
    PEER_TRAINERS,
    TRAINERS,
    CollectorSpec,
    PPOSettings,
    TrainRun,
    collector_spec,
)


def train(run: TrainRun, *, log=None):
    """Train ``run`` with the trainer its collector calls for; returns a TrainResult. PyTorch
    runs with ``run.settings.torch_threads`` intra-op threads meanwhile (restored afterwards)."""
    import torch

    if run.is_peer:
        from .peers import train_peer as trainer
    elif collector_spec(run.collector).trainer == "jax-ppo":
        from .cartpole.ppo_jax import train as trainer
    else:
        from .cartpole.ppo_torch import train as trainer
    threads = torch.get_num_threads()
    torch.set_num_threads(run.settings.torch_threads)
    try:
        return trainer(run, log=log)
    finally:
        torch.set_num_threads(threads)


def train_chain(run, *, log=None, progress=None):
    """Train a ``ChainRun`` (PPO for continuous actions on the n-link chain): the JAX PPO for
    ``jax`` (studylib.train.chain.ppo_jax), a peer's own trainer for a peer (``CHAIN_PEERS``),
    the PyTorch PPO for the other collectors (chain.ppo_torch); a TrainResult judged by gymnasium (chain_evaluate). ``progress``: see
    ``chain_clock.ChainClock``."""
    import importlib

    import torch

    from .chain.settings import CHAIN_PEERS

    peer = CHAIN_PEERS.get(run.collector)
    module = peer.module if peer else "ppo_jax" if run.collector == "jax" else "ppo_torch"
    trainer = importlib.import_module(f".chain.{module}", __package__).train
    options = dict(peer.options) if peer else {}
    threads = torch.get_num_threads()
    torch.set_num_threads(run.settings.torch_threads)
    try:
        return trainer(run, log=log, progress=progress, **options)
    finally:
        torch.set_num_threads(threads)


def has_population(collector: str) -> bool:
    """Whether ``train_population`` can train seeds of ``collector`` together: the JAX PPO, and the
    PyTorch PPO where a block of environments can draw one seed's streams (torch, torch-compile,
    gym; not the kernels, whose draws are keyed by one seed per call)."""
    if collector_spec(collector).trainer == "jax-ppo":
        return True
    from .cartpole.population_collectors import POPULATION_ENVS

    return collector in POPULATION_ENVS


def train_population(runs: list[TrainRun], *, log=None, on_result=None):
    """Train ``runs`` (one collector, N, settings and budget; one seed each) as one population: the
    JAX PPO vmapped over the seeds for ``jax``, the batched PyTorch PPO for the others that have a
    population (``population_collectors.POPULATION_ENVS``). A TrainResult per run, in order;
    ``on_result(result)`` as each seed finishes; ``wall_s`` is the population's shared clock."""
    if not runs:
        return []
    if collector_spec(runs[0].collector).trainer == "jax-ppo":
        from .cartpole.ppo_jax import train_population as trainer
    else:
        from .cartpole.population_torch import train_population as trainer
    return trainer(runs, log=log, on_result=on_result)


__all__ = ["CHAIN_COLLECTORS", "ChainPPOSettings", "ChainRun", "train_chain", "COLLECTORS", "PEER_TRAINERS", "TRAINERS", "CollectorSpec", "PPOSettings", "TrainRun", "collector_spec",
           "has_population", "train", "train_population"]
