"""An n-link cart-pole chain, stated once in Python (float64): gymnasium's InvertedDoublePendulum-v5
at n = 2, generalized to any n >= 1 (the paper's §7: "explore additional simulators of varying
memory/compute complexity"), and its record (``CHAIN``).

The reference is MuJoCo C's ``mj_step`` (float64) on the model ``chain_mjcf(n)`` generates: a cart
on a slider carrying n hinged capsule links, each the same capsule (length L = 0.6, radius 0.045),
so the chain is n L = 0.6 n long and weighs n link masses. The dynamics below repeat what that
model's ``mj_step`` computes, without MuJoCo in the hot path: the bodies' masses and inertias are
the capsule's in closed form (``capsule_mass``, ``capsule_inertia``; tests/test_chain.py checks
them against MuJoCo's compiler), the forward dynamics is the mass-matrix method and the
integrator MuJoCo's RK4. MuJoCo's documentation (doc/computation/index.rst), the semantics
mirrored:

    "forward: v̇ = M⁻¹ (τ + Jᵀ f − c)" with "τ ... applied force: passive, actuation, external"
    and "c(q, v) ... bias force: Coriolis, centrifugal, gravitational". [The chain has no
    constraint, so f is empty: MuJoCo solves nothing for it.]

    "Semi-implicit with implicit joint damping (Euler): For this method, D only includes
    derivatives of joint damping."
    "4th-order Runge-Kutta (RK4) ... the fixed-step 4th-order Runge-Kutta method, though users can
    easily implement other integrators by calling mj_forward and integrating accelerations
    themselves."

Only Euler treats damping implicitly: under RK4 (gymnasium's model) joint damping is an explicit
passive force −b q̇ in each stage's τ (mj_RungeKutta runs the forward dynamics at each stage and
integrates qacc), and this model has no armature (``dof_armature`` = 0: M is the bodies' inertia
alone). One ``mj_step`` with mj_RungeKutta's tableau, RK4_A = {½; 0, ½; 0, 0, 1} and
RK4_B = {1/6, 1/3, 1/3, 1/6}: stage i at (q0 + h A_i·v, v0 + h A_i·a) over the earlier stages'
velocities v_j and accelerations a_j, then q' = q0 + h Σ B_i v_i, v' = v0 + h Σ B_i a_i.

The work: (2n³ + 57n² + 85n + 6)/6 flops a forward dynamics (the n³/3 Cholesky's, M's n(n+1)/2
entries and the pairs' Coriolis terms n²), four an mj_step, (4n³ + 114n² + 242n + 84)/3 in all
with 12n sin/cos/sqrt (n = 2: 352 flops); see ``rk4_flops`` and the count below.

An environment step is ``frame_skip`` (5, gymnasium's) such steps with one control; reward,
termination and observation are InvertedDoublePendulum-v5's, generalized (``reward``,
``is_terminated``, ``observation``), its tip read where v5 reads it (``env_step``).
"""

from __future__ import annotations

import math

import numpy as np

# the model (constants, bodies, MJCF) lives in model.py; its names are the chain's too
from .model import (INVERTED_DOUBLE_PENDULUM, ChainParams, capsule_inertia, capsule_mass,  # noqa: F401
                    chain_mjcf, stable_timestep)


# ---- the dynamics, on columns: lists of arrays (N,) (or scalars), so numpy, torch and jax share them ----
#
# The mass-matrix method in *absolute* link angles φ_k = θ_1 + ... + θ_k (MuJoCo's hinges are
# relative to the parent: q = (x, θ)). The change of variables is linear and constant (φ = P θ,
# P lower-triangular ones), so M_θ = Pᵀ M_φ P and τ_θ = Pᵀ τ_φ: solving M_φ φ̈ = f_φ and
# differencing φ̈ gives the same θ̈ as MuJoCo's M_θ θ̈ = τ_θ − c_θ without forming Pᵀ M P.
# Link k's centre of mass sits at x + Σ_{j<k} L sin φ_j + c sin φ_k, height Σ_{j<k} L cos φ_j + c cos φ_k
# (c = L/2; hinge axis y turns the link's z axis to (sin φ, cos φ)), so with β_j = m (c + L (n−1−j)),
# the mass every link from j up puts on the arm of link j (0-based):
#     M_xx = m_cart + n m           M_xφj = β_j cos φ_j
#     M_φjφj = m (c² + L² (n−1−j)) + I      M_φiφj = L β_j cos(φ_i − φ_j)   (i < j)
#     f_x = m_total g_x + Σ_j β_j sin φ_j φ̇_j² + gear u − b ẋ
#     f_φj = β_j (g_x cos φ_j − g_z sin φ_j) − Σ_i M'_ji sin(φ_j − φ_i) φ̇_i² + (P⁻ᵀ τ_damping)_j
# (Coriolis and centrifugal from Lagrange's equations, M' the off-diagonal coefficients L β).

def _constants(p: ChainParams):
    """The mass matrix's constant coefficients for ``p`` (Python floats: folded once, when ``p`` was made)."""
    return p.mass_coefficients


def cholesky_solve(A, b, xp=np):
    """Solve A z = b for a symmetric positive-definite A given by its lower triangle (A[i][j], j <= i)
    and b, by Cholesky (A = L Lᵀ) and two triangular solves, unrolled: each entry is an array over
    the batch (or a Python float, a constant). For N = len(b): N(N+1)(2N+1)/6 flops to factor
    (reciprocals of the diagonal included), 2N² to solve, N square roots; a constant A[0][0] (the
    chain's M_xx) saves one of each."""
    N = len(b)
    low = [[None] * N for _ in range(N)]
    inv = [None] * N  # 1 / L_jj: one division per column, multiplications after
    for j in range(N):
        s = A[j][j]
        for k in range(j):
            s = s - low[j][k] * low[j][k]
        inv[j] = 1.0 / (math.sqrt(s) if isinstance(s, float) else xp.sqrt(s))  # a constant M_00 folds
        for i in range(j + 1, N):
            s = A[i][j]
            for k in range(j):
                s = s - low[i][k] * low[j][k]
            low[i][j] = s * inv[j]
    y = [None] * N
    for i in range(N):
        s = b[i]
        for k in range(i):
            s = s - low[i][k] * y[k]
        y[i] = s * inv[i]
    z = [None] * N
    for i in reversed(range(N)):
        s = y[i]
        for k in range(i + 1, N):
            s = s - low[k][i] * z[k]
        z[i] = s * inv[i]
    return z


def accelerations(qpos, qvel, force, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=np):
    """qacc (a list of n+1 columns) at (qpos, qvel), both lists of n+1 columns, with the slider's
    actuator ``force`` (gear × clipped control, N): M(q) qacc = τ − c(q, v) by Cholesky."""
    n, L, b = p.links, p.link_length, p.damping
    beta, diag, m_total, gravity_x = _constants(p)
    gx, gz = p.gravity[0], p.gravity[2]
    phi, omega = [qpos[1]], [qvel[1]]
    for k in range(2, n + 1):
        phi.append(phi[-1] + qpos[k])
        omega.append(omega[-1] + qvel[k])
    s = [xp.sin(a) for a in phi]
    c = [xp.cos(a) for a in phi]
    w = [a * a for a in omega]
    bs = [beta[j] * s[j] for j in range(n)]
    bc = [beta[j] * c[j] for j in range(n)]  # also M_xφj
    # generalized forces in φ: gravity, then the damping torques −b θ̇ carried through P⁻ᵀ
    f = [gx * bc[j] - gz * bs[j] for j in range(n)]
    for j in range(n - 1):
        f[j] = f[j] + b * (qvel[j + 2] - qvel[j + 1])
    f[n - 1] = f[n - 1] - b * qvel[n]
    fx = gravity_x + force - b * qvel[0]
    for j in range(n):
        fx = fx + bs[j] * w[j]
    # M's lower triangle (index 0 the cart) and the Coriolis/centrifugal terms, pair by pair
    A = [[m_total]] + [[bc[j]] + [None] * (j + 1) for j in range(n)]
    for j in range(n):
        A[j + 1][j + 1] = diag[j]
        for i in range(j):
            A[j + 1][i + 1] = (L * beta[j]) * (c[i] * c[j] + s[i] * s[j])  # cos(φ_i − φ_j)
            t = (L * beta[j]) * (s[i] * c[j] - c[i] * s[j])  # sin(φ_i − φ_j)
            f[i] = f[i] - t * w[j]
            f[j] = f[j] + t * w[i]
    a = cholesky_solve(A, [fx, *f], xp)
    return [a[0], a[1]] + [a[k] - a[k - 1] for k in range(2, n + 1)]  # θ̈ from φ̈


def rk4_step(qpos, qvel, force, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=np):
    """One mj_step of ``p.timestep`` by MuJoCo's RK4 (mj_RungeKutta), on lists of columns."""
    return _rk4(qpos, qvel, force, p, xp)[:2]


def _rk4(qpos, qvel, force, p, xp):
    """(qpos', qvel', the last stage's qpos): mj_RungeKutta evaluates its fourth stage at
    q0 + h v_3 and restores q0 before advancing, so MuJoCo's kinematics (``site_xpos``) after an
    mj_step are that stage's: what gymnasium reads (``env_step``)."""
    h = p.timestep
    vs, acs = [qvel], [accelerations(qpos, qvel, force, p, xp)]
    for frac in (0.5, 0.5, 1.0):  # RK4_A's rows: each stage from the one before
        q = [q0 + (frac * h) * v for q0, v in zip(qpos, vs[-1])]
        v = [v0 + (frac * h) * a for v0, a in zip(qvel, acs[-1])]
        vs.append(v)
        acs.append(accelerations(q, v, force, p, xp))
    h6, h3 = h / 6, h / 3  # RK4_B = (1/6, 1/3, 1/3, 1/6), folded with h

    def advance(x0, k):
        return [x0[i] + h6 * (k[0][i] + k[3][i]) + h3 * (k[1][i] + k[2][i]) for i in range(len(x0))]

    return advance(qpos, vs), advance(qvel, acs), q


def actuator_force(ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=np):
    """The slider's motor: gear × ctrl clamped to ctrlrange [−1, 1] (ctrllimited), as mj_fwdActuation."""
    return p.gear * xp.clip(ctrl, -1.0, 1.0)


def physics_step(state, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=np, steps: int = 1):
    """``steps`` mj_steps of ``state[..., :2(n+1)]`` = (qpos, qvel) with control ``ctrl`` (...,);
    works on any leading shape and on numpy (float64, the reference), torch and jax arrays."""
    return _steps(state, ctrl, p, xp, steps)[0]


def _steps(state, ctrl, p, xp, steps):
    n1 = p.links + 1
    qpos = [state[..., i] for i in range(n1)]
    qvel = [state[..., n1 + i] for i in range(n1)]
    force = actuator_force(ctrl, p, xp)
    for _ in range(steps):
        qpos, qvel, seen = _rk4(qpos, qvel, force, p, xp)
    return xp.stack(qpos + qvel, axis=-1), xp.stack(seen, axis=-1)


def tip(qpos, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=np):
    """The ``tip`` site's (x, z) at ``qpos`` (..., n+1): the cart's x plus each link's L (sin φ, cos φ);
    z is v5's y."""
    x, z, phi = qpos[..., 0], 0.0, 0.0
    for k in range(1, p.links + 1):
        phi = phi + qpos[..., k]
        x = x + p.link_length * xp.sin(phi)
        z = z + p.link_length * xp.cos(phi)
    return x, z


def observation(state, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=np):
    """v5's ``_get_obs``: qpos[:1], sin(qpos[1:]), cos(qpos[1:]), clip(qvel, -10, 10),
    clip(qfrc_constraint, -10, 10)[:1] — the last always 0 here: the chain has no constraint (v5's
    is the slider limit's force, nonzero only within 0.01 of |x| = 1). 3n + 3 floats."""
    n1 = p.links + 1
    angles = state[..., 1:n1]
    return xp.concatenate((state[..., :1], xp.sin(angles), xp.cos(angles),
                           xp.clip(state[..., n1:2 * n1], -10.0, 10.0), xp.zeros_like(state[..., :1])), axis=-1)


def observed_qpos(obs, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=np):
    """The positions an observation shows (``observation``'s first 2n + 1 entries): the cart's x and
    each hinge angle as atan2(sin, cos), so wrapped to (-π, π]. n + 1 floats."""
    n = p.links
    return xp.concatenate((obs[..., :1], xp.arctan2(obs[..., 1:n + 1], obs[..., n + 1:2 * n + 1])), axis=-1)


def is_terminated(y, p: ChainParams = INVERTED_DOUBLE_PENDULUM):
    """v5: ``terminated = bool(y <= 1)`` with y the tip's height, "The maximum standing height of
    the system is 1.2 m": 1 = 1.2 / 1.2. Generalized as y <= n L / 1.2: the same fraction of the
    upright height, so a chain of any n ends when its tip has dropped by a sixth of its length."""
    return y <= p.length / 1.2


TARGET_ABOVE_TIP = 0.8  # m: v5's height target 2 above its 1.2 m chain's upright tip


def reward(x, y, qvel, terminated, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=np):
    """v5's ``_get_rew`` with the tip at (x, y) and the velocities ``qvel`` (..., n+1):

        dist_penalty = 0.01 * x**2 + (y - 2) ** 2
        vel_penalty = 1e-3 * v1**2 + 5e-3 * v2**2
        alive_bonus = self._healthy_reward * int(not terminated)

    generalized: the height target 2 is 0.8 m above the upright tip of v5's 1.2 m chain, and stays
    0.8 m above it at every n (``TARGET_ABOVE_TIP``), so that the upright chain's distance penalty
    is v5's 0.64 at every n. (Scaling the target with the chain instead, 2/1.2 of its length, makes
    that penalty 0.16 n², more than the alive bonus 10 from n = 8 on: a policy there would gain by
    ending its episode.) Every hinge but the first is weighted as v5's second:
    1e-3 θ̇_1² + 5e-3 Σ_{k>=2} θ̇_k² (n = 1: 1e-3 θ̇_1²). Both reproduce v5 at n = 2."""
    vel = 1e-3 * qvel[..., 1] ** 2
    for k in range(2, p.links + 1):
        vel = vel + 5e-3 * qvel[..., k] ** 2
    # the alive bonus only while healthy
    return xp.where(terminated, 0.0, p.healthy_reward) - distance_penalty(x, y, p) - vel


def distance_penalty(x, y, p: ChainParams = INVERTED_DOUBLE_PENDULUM):
    """v5's ``dist_penalty`` of the tip at (x, y), its height target generalized (``reward``)."""
    return 0.01 * x**2 + (y - (p.length + TARGET_ABOVE_TIP)) ** 2


def env_step(state, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=np):
    """One environment step: ``frame_skip`` mj_steps with one control, then v5's observation,
    reward and termination. Returns (next_state, observation, reward, terminated).

    The tip is where v5 reads it: ``x, _, y = self.data.site_xpos[0]`` right after ``mj_step``
    (and ``mj_rnePostConstraint``, which moves nothing), that is MuJoCo's kinematics of the last
    RK4 stage (``_rk4``), not of the new state: about 1e-5 m from it. Mirrored, so that rewards
    and terminations are v5's transition for transition."""
    state, seen = _steps(state, ctrl, p, xp, p.frame_skip)
    x, y = tip(seen, p, xp)
    terminated = is_terminated(y, p)
    n1 = p.links + 1
    return state, observation(state, p, xp), reward(x, y, state[..., n1:2 * n1], terminated, p, xp), terminated


def reference_step(states, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM):
    """``env_step`` on float64 states (N, 2(n+1)) and controls (N,): (next_states, observations
    (N, 3n+3) float32, rewards (float64), terminated). No reset and no truncation: those are episode
    bookkeeping, not dynamics."""
    states, obs, rewards, terminated = env_step(np.asarray(states, dtype=np.float64),
                                                np.asarray(ctrl, dtype=np.float64), p)
    return states, obs.astype(np.float32), rewards, terminated


# ---- the work of a step (counted from the code above: tests/test_chain.py traces it op by op) ----
# Per forward dynamics (``accelerations``) with n links, N = n + 1, Python-float constants folded:
#   φ, φ̇ cumulative sums                                   2(n − 1)
#   φ̇², β sin φ, β cos φ                                   3n
#   gravity on φ 3n, damping through P⁻ᵀ 3(n − 1) + 2       6n − 1
#   the cart's row: gear force, damping, Σ β sin φ φ̇²      3 + 2n
#   each link pair i < j, n(n − 1)/2 of them: cos and sin of φ_i − φ_j from the products 6,
#     times L β_j 2, Coriolis/centrifugal into f_i and f_j 4                              12
#   Cholesky N(N+1)(2N+1)/6 − 1 (M_xx is a constant: its root and reciprocal fold), solves 2N²
#   θ̈ from φ̈                                               n − 1
# = (2n³ + 57n² + 85n + 6)/6, plus 2n sin/cos and n square roots (the transcendentals). RK4 is
# four of them, three stage updates of 4N and the final update of 12N:
# (4n³ + 114n² + 242n + 84)/3 flops and 12n transcendentals an mj_step (n = 2: 352 and 24). The
# n² terms (9.5 n² a forward dynamics, mostly the pairs) outweigh Cholesky's n³/3 up to n ≈ 28.
# An environment step is frame_skip mj_steps; the gear × clip of its control, the observation,
# reward and termination are not physics (as CartPole's count leaves termination out).
def forward_flops(n: int) -> int:
    """Flops of one forward dynamics (``accelerations``), sin, cos and sqrt apart."""
    return (2 * n**3 + 57 * n**2 + 85 * n + 6) // 6


def rk4_flops(n: int) -> int:
    """Flops of one mj_step (RK4: four forward dynamics and the stage updates); sin, cos, sqrt apart."""
    return 4 * forward_flops(n) + 3 * 4 * (n + 1) + 12 * (n + 1)


def rk4_transcendentals(n: int) -> int:
    """sin and cos of the n link angles and Cholesky's n square roots, in four forward dynamics."""
    return 4 * (2 * n + n)


def chain_flops(n: int, frame_skip: int | None = None) -> int:
    """Flops of one environment step (``frame_skip`` mj_steps; None: the timestep rule's for n,
    ``stable_timestep``) of an n-link chain: frame_skip (4n³ + 114n² + 242n + 84)/3, the n³ term
    Cholesky's (four a step)."""
    return (stable_timestep(n)[1] if frame_skip is None else frame_skip) * rk4_flops(n)


def chain_transcendentals(n: int, frame_skip: int | None = None) -> int:
    return (stable_timestep(n)[1] if frame_skip is None else frame_skip) * rk4_transcendentals(n)


COUNTER_BYTES = 4 + 4  # int32 elapsed, uint32 episode (as CartPole's)


def chain_bytes(n: int, state_factor: int = 1) -> int:
    """Bytes one environment step moves when the state is not kept in cache: the 2(n+1) float32
    state read and written, the counters read and written (as CartPole's unfused_bytes)."""
    return 2 * (4 * 2 * (n + 1) * state_factor + COUNTER_BYTES)
