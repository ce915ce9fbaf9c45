"""The chain's physics as batched matrices: ``dynamics.accelerations`` with the links a dimension of
the arrays instead of a Python loop, so that an eager framework's step is a few dozen calls at
every n (the columns formulation is ~10 n² calls a forward dynamics: at n = 32 about 40,000 eager
torch calls an mj_step). The same equations, term for term:

    φ = cumsum θ, ω = cumsum θ̇;  s, c = sin φ, cos φ (N, n)
    M = [[m_total, (β c)ᵀ], [β c, M_φ]],  M_φ,ij = L β_max(i,j) cos(φ_i − φ_j) (i ≠ j), diag_j on the diagonal
    f_x = m_total g_x + gear u − b ẋ + Σ_j β_j s_j ω_j²
    f_φ = β (g_x c − g_z s) + b (θ̇_{j+1} − θ̇_j) − (L β_max ∘ sin(φ_i − φ_j)) ω²

(the pairs' Coriolis terms, −t ω_j² into f_i and +t ω_i² into f_j for i < j with
t = L β_j sin(φ_i − φ_j), are one antisymmetric matrix times ω²), M a = f solved per environment
by the framework's batched solver, θ̈ from φ̈ by differences, and MuJoCo's RK4 over it. Float32
rounding differs from the columns' (another order of the same sums, a library's solver): both
agree with the float64 reference to float32 rounding (tests/test_chain_envs.py). Works with numpy,
torch and jax.numpy (``xp``); ``env_step`` has ``dynamics.env_step``'s contract.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import dynamics
from .model import ChainParams


@lru_cache(maxsize=None)
def _matrices(p: ChainParams):
    """(β (n,), diag (n,), L β_max(i,j) (n, n)) in float64 numpy, folded once per chain."""
    beta, diag, _, _ = dynamics._constants(p)
    beta = np.asarray(beta)
    index = np.arange(p.links)
    return beta, np.asarray(diag), p.link_length * beta[np.maximum(index[:, None], index[None, :])]


def _const(x, like, xp):
    """A numpy constant as ``like``'s array type, dtype and device."""
    if hasattr(like, "device") and hasattr(xp, "as_tensor"):  # torch
        return xp.as_tensor(x, dtype=like.dtype, device=like.device)
    return xp.asarray(x, dtype=like.dtype)


def accelerations(qpos, qvel, force, p: ChainParams, xp=np):
    """qacc (N, n+1) at (qpos, qvel) (N, n+1) under the slider's ``force`` (N,)."""
    n, b = p.links, p.damping
    beta_np, diag_np, lb_np = _matrices(p)
    beta, lb = _const(beta_np, qpos, xp), _const(lb_np, qpos, xp)
    m_total = float(p.total_mass)
    gx, gz = p.gravity[0], p.gravity[2]
    theta_dot = qvel[:, 1:]
    phi, omega = xp.cumsum(qpos[:, 1:], axis=1), xp.cumsum(theta_dot, axis=1)
    s, c = xp.sin(phi), xp.cos(phi)
    w = omega * omega
    bs, bc = beta * s, beta * c
    # generalized forces in φ: gravity, the damping torques through P⁻ᵀ, the pairs' Coriolis terms
    damping = b * (xp.concatenate((theta_dot[:, 1:], theta_dot[:, :1] * 0.0), axis=1) - theta_dot)
    sin_pairs = s[:, :, None] * c[:, None, :] - c[:, :, None] * s[:, None, :]  # sin(φ_i − φ_j)
    cos_pairs = c[:, :, None] * c[:, None, :] + s[:, :, None] * s[:, None, :]  # cos(φ_i − φ_j)
    f = gx * bc - gz * bs + damping - ((lb * sin_pairs) @ w[:, :, None])[:, :, 0]
    fx = m_total * gx + force - b * qvel[:, 0] + xp.sum(bs * w, axis=1)
    eye = _const(np.eye(n), qpos, xp)
    m_phi = lb * cos_pairs * (1.0 - eye) + eye * _const(diag_np, qpos, xp)
    top = xp.concatenate((xp.ones_like(fx)[:, None, None] * m_total, bc[:, None, :]), axis=2)
    mass = xp.concatenate((top, xp.concatenate((bc[:, :, None], m_phi), axis=2)), axis=1)
    rhs = xp.concatenate((fx[:, None], f), axis=1)
    a = xp.linalg.solve(mass, rhs[:, :, None])[:, :, 0]
    return xp.concatenate((a[:, :2], a[:, 2:] - a[:, 1:-1]), axis=1)  # θ̈ from φ̈


def _rk4(qpos, qvel, force, p: ChainParams, xp):
    """One mj_step by MuJoCo's RK4 (``dynamics._rk4``'s tableau); also the last stage's qpos."""
    h = p.timestep
    a0 = accelerations(qpos, qvel, force, p, xp)
    vs, acs, q = [qvel], [a0], qpos
    for frac in (0.5, 0.5, 1.0):
        q = qpos + (frac * h) * vs[-1]
        v = qvel + (frac * h) * acs[-1]
        vs.append(v)
        acs.append(accelerations(q, v, force, p, xp))
    h6, h3 = h / 6, h / 3
    new_q = qpos + h6 * (vs[0] + vs[3]) + h3 * (vs[1] + vs[2])
    new_v = qvel + h6 * (acs[0] + acs[3]) + h3 * (acs[1] + acs[2])
    return new_q, new_v, q


def env_step(state, ctrl, p: ChainParams, xp=np):
    """``dynamics.env_step`` (frame_skip mj_steps with one control, then v5's observation, reward
    and termination, the tip read at the last RK4 stage) on (N, 2(n+1)) rows, batched."""
    n1 = p.links + 1
    qpos, qvel = state[:, :n1], state[:, n1:]
    force = dynamics.actuator_force(ctrl, p, xp)
    seen = qpos
    for _ in range(p.frame_skip):
        qpos, qvel, seen = _rk4(qpos, qvel, force, p, xp)
    new = xp.concatenate((qpos, qvel), axis=1)
    x, y = dynamics.tip(seen, p, xp)
    terminated = dynamics.is_terminated(y, p)
    return new, dynamics.observation(new, p, xp), dynamics.reward(x, y, qvel, terminated, p, xp), terminated
