"""PPO on CartPole-v1 with every collector: does faster collection train faster?

    from studylib.train import TrainRun, train
    result = train(TrainRun("fused", 4096, seed=0))     # a TrainResult; .as_dict() is the JSON
    python -m studylib.train --collector fused --num-envs 4096 --seed 0 --json

``settings.PPOSettings`` holds every hyperparameter; ``collectors`` turns an implementation into
T-step trajectories; ``ppo_torch`` (PyTorch PPO) and ``ppo_jax`` (PPO fully jitted in JAX; many
seeds in one vmapped program with ``ppo_jax.train_population``) learn from them; ``peers`` times
Stable-Baselines3 and a cleanrl-style loop by the same clock (``progress``); ``evaluate`` judges a
greedy actor; ``results`` keeps results on disk; ``stats`` aggregates seeds (rliable's IQM and
probability of improvement, bootstrap intervals, censored times to solve).
"""

from __future__ import annotations

from .settings import COLLECTORS, PEER_TRAINERS, TRAINERS, PPOSettings, TrainRun


def train(run: TrainRun, *, log=None):
    """Train ``run`` with the trainer its collector calls for; returns a TrainResult. PyTorch
    runs with ``run.settings.torch_threads`` intra-op threads meanwhile (restored afterwards)."""
    import torch

    if run.collector == "jax":
        from .ppo_jax import train as trainer
    elif run.is_peer:
        from .peers import train_peer as trainer
    else:
        from .ppo_torch import train as trainer
    threads = torch.get_num_threads()
    torch.set_num_threads(run.settings.torch_threads)
    try:
        return trainer(run, log=log)
    finally:
        torch.set_num_threads(threads)


__all__ = ["COLLECTORS", "PEER_TRAINERS", "TRAINERS", "PPOSettings", "TrainRun", "train"]
