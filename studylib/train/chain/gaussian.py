"""The continuous policy's distribution: a diagonal Gaussian with a state-independent log-std.

cleanrl's ppo_continuous_action.py builds it from ``torch.distributions.Normal``::

    action_mean = self.actor_mean(x)
    action_logstd = self.actor_logstd.expand_as(action_mean)
    action_std = torch.exp(action_logstd)
    probs = Normal(action_mean, action_std)
    ...
    return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)

Here the same formulas are written once for any array module (numpy, torch, jax.numpy), so the
PyTorch and the JAX PPO share them (tests: against ``torch.distributions.Normal`` and
``jax.scipy.stats.norm``). The log-probability is of the *unclipped* sample, as cleanrl's: the
environment sees the action clipped to [-1, 1] (its ClipAction wrapper), the learner the sample.
"""

from __future__ import annotations

import math

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def log_prob(mean, log_std, action, xp):
    """log N(action; mean, exp(log_std)^2) summed over the last axis (the action's dimensions)."""
    z = (action - mean) * xp.exp(-log_std)
    return (-0.5 * z * z - log_std - HALF_LOG_2PI).sum(-1)


def entropy(log_std, xp, batch_shape=()):
    """The Gaussian's entropy summed over the action's dimensions (it does not depend on the
    mean): 0.5 + log(2 pi)/2 + log_std per dimension; broadcast to ``batch_shape``."""
    per_sample = (0.5 + HALF_LOG_2PI + log_std).sum(-1)
    return per_sample + xp.zeros(batch_shape) if batch_shape else per_sample
