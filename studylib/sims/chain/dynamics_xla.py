"""The chain's dynamics for XLA (jax): the same physics as ``dynamics`` (one ``mj_step`` is
MuJoCo's RK4 of the forward dynamics M(q) q̈ = τ − c(q, q̇)), stated so that the compiled program
does not grow like n³ scalar operations.

``dynamics.env_step`` traced with ``xp=jax.numpy`` unrolls the mass-matrix method coordinate by
coordinate: its program holds the (2n³ + 57n² + ...)/6 scalar operations of four forward
dynamics per mj_step and frame_skip mj_steps per environment step, and XLA:CPU compiles it in
21–36 s at n = 8 and not within 150 s at n = 16. Here:

* ``aba_env_step``: the forward dynamics by Featherstone's articulated-body algorithm (ABA, "Rigid
  Body Dynamics Algorithms", 2008, Table 7.1), O(n) per forward dynamics instead of the mass
  matrix's O(n³) Cholesky: mathematically the same accelerations (M q̈ = τ − c solved exactly),
  so it agrees with the reference to rounding (float64: ~1e-13; float32: the float32 tolerance of
  tests/test_chain.py). Its three passes run as ``lax.scan`` over the links (a loop of n
  iterations on (N,) vectors), the frame_skip mj_steps as ``lax.fori_loop``: the program's size
  does not depend on n. For small n the link loops can be unrolled (``unroll``).
* ``columns_env_step``: ``dynamics.env_step`` itself on ``jax.numpy`` (the reference's lines),
  optionally with the polynomial sine/cosine below (``columns_poly_env_step``).

Both use ``sincos``: XLA:CPU's ``jnp.sin``/``jnp.cos`` cost ~3e8 values/s on this machine, against
~4e9 for a polynomial written in jnp (float32: Cody–Waite reduction by π/2 and Cephes' sinf/cosf
minimax polynomials on [−π/4, π/4], max error ~1e-7 absolute for |x| < 1e3,
tests/test_chain_xla.py); float64 arrays take ``jnp.sin``/``jnp.cos`` (the reference's accuracy).

The planar ABA, in world-aligned frames at each hinge ((u, w) = (z, x), angles counter-clockwise
from the z axis: link k's direction (cos φ_k, sin φ_k), φ_k = θ_1 + ... + θ_k). Spatial motion
(ω, V_u, V_w), V the velocity of the frame's origin; a hinge's motion subspace is S = (1, 0, 0)
and the slider's (0, 0, 1), both constant in these frames. Link k's inertia at its hinge, com at
h = ℓ (cos φ, sin φ), ℓ = L/2:

    I_k = [[I_c + m ℓ², −m ℓ sin φ, m ℓ cos φ], [−m ℓ sin φ, m, 0], [m ℓ cos φ, 0, m]]

Pass 1 (velocities, bias terms): V_1 = (0, ẋ), V_{k+1} = V_k + L φ̇_k (−sin φ_k, cos φ_k);
c_k = (0, θ̇_k V_w, −θ̇_k V_u) (v_parent ×ₘ S θ̇_k); p_k = v_k ×* I_k v_k =
(m ℓ ω (cos φ V_u + sin φ V_w), −ω m (V_w + ℓ ω cos φ), ω m (V_u − ℓ ω sin φ)).
Pass 2 (n → 1): I^A = I_k + child's, p^A likewise, D = I^A_ωω, u = τ_k − p^A_ω (τ_k = −b θ̇_k, the
joint damping), I^a = I^A − U Uᵀ/D (its ω row vanishes: T, 2 × 2), p^a = p^A + I^a c + U u/D;
to the parent's hinge (r = L (cos φ_{k−1}, sin φ_{k−1}), e = (−r_w, r_u)):
Xᵀ I^a X = [[eᵀTe, (Te)ᵀ], [Te, T]], the force (p^a_ω + r × p^a_V, p^a_V). The cart (slider):
ẍ = (gear u − b ẋ − P_w + C_uw g_z) / (m_cart + C_ww) + g_x with (C, P) link 1's.
Pass 3 (1 → n): a_0 = (0, −g_z, ẍ − g_x) (gravity as the base's acceleration), a'_k = X a_{k−1} + c_k,
θ̈_k = (u_k − U_k · a'_k)/D_k, a_k = a'_k + S θ̈_k. About 90 flops a link a forward dynamics, 2
sin/cos: at n = 32 ~10× fewer than the mass-matrix method's (``dynamics.forward_flops``).
"""

from __future__ import annotations

import functools
import math
import types

from . import dynamics
from .model import INVERTED_DOUBLE_PENDULUM, ChainParams


def _jax():
    import jax
    import jax.numpy as jnp
    return jax, jnp


# ---- sine and cosine as polynomials (float32) ----

# π/2 = PIO2_1 + PIO2_2 + PIO2_3, each with few enough mantissa bits that k · PIO2_1 and
# k · PIO2_2 are exact in float32 for |k| < 2¹⁵ (Cody–Waite; Cephes' sinf uses π/4's).
PIO2_1 = 1.5703125
PIO2_2 = 4.837512969970703125e-4
PIO2_3 = 7.549789954891882e-8
TWO_OVER_PI = 2.0 / math.pi
# Cephes sinf.c / cosf.c: minimax on [−π/4, π/4]
SIN_COEFFS = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
COS_COEFFS = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
POLY_RANGE = 8192.0  # |x| up to which the float32 reduction keeps its accuracy (tested to 1e3)


def sincos_poly(x):
    """(sin x, cos x) of a float32 jax array by polynomials: k = round(2x/π), r = x − k π/2
    (three-part Cody–Waite), Cephes' minimax polynomials of r on [−π/4, π/4], the quadrant k mod 4
    selecting and signing them. Elementwise multiply-adds and selects only: XLA fuses and
    vectorizes it (XLA:CPU's own sin/cos are ~10× slower here)."""
    _, jnp = _jax()
    k = jnp.round(x * TWO_OVER_PI)
    r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3
    z = r * r
    s = r + r * z * ((SIN_COEFFS[0] * z + SIN_COEFFS[1]) * z + SIN_COEFFS[2])
    c = 1.0 - 0.5 * z + z * z * ((COS_COEFFS[0] * z + COS_COEFFS[1]) * z + COS_COEFFS[2])
    q = k.astype(jnp.int32)
    swap = (q & 1) == 1
    sin = jnp.where(swap, c, s)
    cos = jnp.where(swap, s, c)
    sin = jnp.where((q & 2) == 2, -sin, sin)
    cos = jnp.where(((q + 1) & 2) == 2, -cos, cos)
    return sin, cos


def sincos(x, poly: bool = True):
    """(sin x, cos x): the polynomials on float32 (``poly``), jnp.sin/jnp.cos otherwise or on float64."""
    _, jnp = _jax()
    if poly and x.dtype == jnp.float32:
        return sincos_poly(x)
    return jnp.sin(x), jnp.cos(x)


def poly_numpy(poly: bool = True):
    """A stand-in for ``jax.numpy`` whose sin and cos are the polynomials (on float32): what
    ``dynamics.env_step`` takes as ``xp`` for the columns formulation with fast sine/cosine."""
    _, jnp = _jax()
    if not poly:
        return jnp
    ns = types.SimpleNamespace(**{k: getattr(jnp, k) for k in dir(jnp) if not k.startswith("__")})
    ns.sin = lambda x: sincos(x)[0]
    ns.cos = lambda x: sincos(x)[1]
    return ns


# ---- the articulated-body algorithm on (n+1, N) arrays ----

def _scan(f, carry, xs, reverse, unroll):
    """lax.scan over the leading axis; ``unroll`` True unrolls it in Python (a flat program), or
    "barrier": unrolled with each iteration's carry behind ``lax.optimization_barrier``, so that
    XLA materializes it instead of fusing (and recomputing) the whole chain of iterations into
    its consumers (XLA:CPU copies a producer into each consumer's fusion: unrolled without a
    barrier, n = 4 ran 15x slower than the loop)."""
    jax, jnp = _jax()
    if unroll is True or unroll == "barrier":
        n = len(jax.tree_util.tree_leaves(xs)[0])
        ys = [None] * n
        for i in (reversed(range(n)) if reverse else range(n)):
            carry, ys[i] = f(carry, jax.tree_util.tree_map(lambda a: a[i], xs))
            if unroll == "barrier":
                carry, ys[i] = jax.lax.optimization_barrier((carry, ys[i]))
        return carry, jax.tree_util.tree_map(lambda *a: jnp.stack(a), *ys)
    return jax.lax.scan(f, carry, xs, reverse=reverse, unroll=unroll or 1)


def aba_accelerations(q, v, force, p: ChainParams = INVERTED_DOUBLE_PENDULUM, poly: bool = True, unroll=1):
    """qacc (n+1, N) at qpos ``q`` and qvel ``v`` (n+1, N) with the slider's actuator ``force`` (N,):
    the articulated-body algorithm (module docstring), its link loops ``lax.scan``s."""
    _, jnp = _jax()
    L, m, ic, b = p.link_length, p.link_mass, p.link_inertia, p.damping
    ell = L / 2
    mell = m * ell
    i0 = ic + m * ell * ell
    gx, gz = p.gravity[0], p.gravity[2]
    zero = jnp.zeros_like(v[0])

    # pass 1 (links 1 → n): absolute angles, their sin/cos, the hinges' velocities
    def outward(carry, x):
        phi, omega, vu, vw = carry
        theta, dtheta = x
        phi, omega = phi + theta, omega + dtheta
        s, c = sincos(phi, poly)
        out = (s, c, omega, vu, vw)
        return (phi, omega, vu - (L * omega) * s, vw + (L * omega) * c), out

    _, (s, c, omega, vu, vw) = _scan(outward, (zero, zero, zero, v[0]), (q[1:], v[1:]), False, unroll)
    dtheta = v[1:]
    i_wu, i_ww = -mell * s, mell * c  # I_k's ω–u and ω–w entries
    p0 = mell * omega * (c * vu + s * vw)
    pu = -omega * (m * vw + (mell * omega) * c)
    pw = omega * (m * vu - (mell * omega) * s)
    cu, cw = dtheta * vw, -dtheta * vu  # c_k's linear part
    tau = -b * dtheta
    zrow = jnp.zeros_like(s[:1])
    eu = jnp.concatenate((zrow, -L * s[:-1]))  # e = (−r_w, r_u), r the parent link's L (cos, sin); 0 for link 1
    ew = jnp.concatenate((zrow, L * c[:-1]))

    # pass 2 (links n → 1): articulated inertias and bias forces, carried to the parent's hinge
    def inward(carry, x):
        cww_, cwu_, cwv_, cuu, cuv, cvv, pw_, pu_, pv_ = carry
        iwu, iwv, p0_, pu0, pv0, cu_, cv_, t, e_u, e_v = x
        a_ww = i0 + cww_
        a_wu = iwu + cwu_
        a_wv = iwv + cwv_
        a_uu, a_uv, a_vv = m + cuu, cuv, m + cvv
        pa_w, pa_u, pa_v = p0_ + pw_, pu0 + pu_, pv0 + pv_
        dinv = 1.0 / a_ww
        uu = t - pa_w
        tuu = a_uu - a_wu * a_wu * dinv
        tuv = a_uv - a_wu * a_wv * dinv
        tvv = a_vv - a_wv * a_wv * dinv
        ud = uu * dinv
        fu = pa_u + tuu * cu_ + tuv * cv_ + a_wu * ud
        fv = pa_v + tuv * cu_ + tvv * cv_ + a_wv * ud
        te_u = tuu * e_u + tuv * e_v
        te_v = tuv * e_u + tvv * e_v
        carry = (e_u * te_u + e_v * te_v, te_u, te_v, tuu, tuv, tvv, t + e_v * fv + e_u * fu, fu, fv)
        return carry, (dinv, a_wu, a_wv, uu)

    zeros9 = (zero,) * 9
    (_, _, _, _, c_uw, c_ww, _, _, p_w), (dinv, a_wu, a_wv, uu) = _scan(
        inward, zeros9, (i_wu, i_ww, p0, pu, pw, cu, cw, tau, eu, ew), True, unroll)
    # the cart: slider S = (0, 0, 1), base acceleration −gravity = (0, −g_z, −g_x)
    xacc = (force - b * v[0] - p_w + c_uw * gz) / (p.cart_mass + c_ww) + gx

    # pass 3 (links 1 → n): accelerations
    def outward_acc(carry, x):
        alpha, au, aw = carry
        dinv_, awu, awv, uu_, cu_, cv_, e_u, e_v = x
        au = au + alpha * e_u + cu_
        aw = aw + alpha * e_v + cv_
        qacc = (uu_ - awu * au - awv * aw) * dinv_ - alpha
        return (alpha + qacc, au, aw), qacc

    _, hacc = _scan(outward_acc, (zero, zero - gz, xacc - gx), (dinv, a_wu, a_wv, uu, cu, cw, eu, ew), False, unroll)
    return jnp.concatenate((xacc[None], hacc))


def _rk4_stages(q, v, force, p, accel):
    """One mj_step (mj_RungeKutta's tableau, as ``dynamics._rk4``) on (n+1, N) arrays:
    (q', v', the last stage's q)."""
    h = p.timestep
    vs, acs = [v], [accel(q, v, force)]
    for frac in (0.5, 0.5, 1.0):
        qs = q + (frac * h) * vs[-1]
        vv = v + (frac * h) * acs[-1]
        vs.append(vv)
        acs.append(accel(qs, vv, force))
    h6, h3 = h / 6, h / 3
    return (q + h6 * (vs[0] + vs[3]) + h3 * (vs[1] + vs[2]),
            v + h6 * (acs[0] + acs[3]) + h3 * (acs[1] + acs[2]), qs)


def _tip(seen, p, poly):
    """The tip's (x, z) from the last stage's qpos (n+1, N): the cart's x plus each link's L (sin φ, cos φ)."""
    _, jnp = _jax()
    s, c = sincos(jnp.cumsum(seen[1:], axis=0), poly)
    return seen[0] + p.link_length * jnp.sum(s, axis=0), p.link_length * jnp.sum(c, axis=0)


def aba_env_step(state, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=None, *, poly: bool = True,
                 unroll=1, unroll_frames: bool = False):
    """One environment step as ``dynamics.env_step``: ``state`` (N, 2(n+1)), ``ctrl`` (N,) ->
    (next_state, observation (N, 3n+3), reward (N,), terminated (N,) bool), frame_skip mj_steps
    of the articulated-body forward dynamics (``aba_accelerations``) under MuJoCo's RK4, then v5's
    observation, reward and termination, the tip read at the last RK4 stage (as v5 reads it).
    ``xp`` is accepted for the contract and must be jax.numpy (or None). ``unroll``: the link
    scans' unroll (True: Python-unrolled); ``unroll_frames``: unroll the frame_skip loop too."""
    jax, jnp = _jax()
    n1 = p.links + 1
    st = jnp.asarray(state).T  # (2(n+1), N): the batch on the vector lanes
    q, v = st[:n1], st[n1:]
    force = dynamics.actuator_force(jnp.asarray(ctrl, st.dtype), p, jnp)
    accel = functools.partial(aba_accelerations, p=p, poly=poly, unroll=unroll)

    def frame(_, carry):
        q, v, _seen = carry
        return _rk4_stages(q, v, force, p, lambda a, b_, f: accel(a, b_, f))

    carry = (q, v, q)
    if unroll_frames:
        for i in range(p.frame_skip):
            carry = frame(i, carry)
    else:
        carry = jax.lax.fori_loop(0, p.frame_skip, frame, carry)
    q, v, seen = carry
    x, y = _tip(seen, p, poly)
    terminated = dynamics.is_terminated(y, p)
    s, c = sincos(q[1:], poly)
    vt = v.T
    obs = jnp.concatenate((q[:1], s, c, jnp.clip(v, -10.0, 10.0), jnp.zeros_like(q[:1]))).T
    next_state = jnp.concatenate((q, v)).T
    return next_state, obs, dynamics.reward(x, y, vt, terminated, p, jnp), terminated


def columns_env_step(state, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=None, *, poly: bool = False):
    """``dynamics.env_step`` on jax.numpy (the reference's lines, unrolled per coordinate);
    ``poly``: with ``sincos_poly`` for its sines and cosines."""
    return dynamics.env_step(state, ctrl, p, poly_numpy(poly))


def columns_poly_env_step(state, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=None):
    return columns_env_step(state, ctrl, p, poly=True)


def aba_unrolled_env_step(state, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=None):
    """``aba_env_step`` with its link loops unrolled in Python (O(n) operations, no loop)."""
    return aba_env_step(state, ctrl, p, poly=True, unroll=True)


def aba_flat_env_step(state, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=None):
    """``aba_env_step`` with its link loops and its frame_skip loop unrolled: one flat program of
    O(n · frame_skip) operations."""
    return aba_env_step(state, ctrl, p, poly=True, unroll=True, unroll_frames=True)


def aba_jnp_sin_env_step(state, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, xp=None):
    """``aba_env_step`` with XLA's own jnp.sin/jnp.cos (for comparison)."""
    return aba_env_step(state, ctrl, p, poly=False)


FORMULATIONS = {
    "columns": columns_env_step,  # dynamics.env_step on jax.numpy: the baseline
    "columns_poly": columns_poly_env_step,
    "aba": aba_env_step,  # lax.scan over links, polynomial sin/cos
    "aba_unrolled": aba_unrolled_env_step,
    "aba_flat": aba_flat_env_step,
    "aba_jnp_sin": aba_jnp_sin_env_step,
}
FORMULATIONS["aba_barrier"] = functools.partial(aba_env_step, unroll="barrier")
for _k in (2, 4, 8):  # the link scans unrolled by _k (fewer loop iterations, a bigger body)
    FORMULATIONS[f"aba_u{_k}"] = functools.partial(aba_env_step, unroll=_k)

# The fastest formulation per n, as measured on a 2-core AMD EPYC (Zen 5) when the choice was made
# (float32, K = 100 environment steps under lax.scan, N = 4096 and 65536); n not in the table:
# "aba". Unrolled, XLA:CPU's fusion recomputes shared producers across the unrolled links and
# stages, so from n = 4 on the loop wins. The chain chapter measures every formulation on the
# reader's machine (harness.robotics.chain_formulations) and says whether this choice is still the
# fastest there.
BEST = {1: "aba_unrolled", 2: "aba_unrolled", 3: "aba_unrolled"}


def best_formulation(p: ChainParams = INVERTED_DOUBLE_PENDULUM) -> str:
    return BEST.get(p.links, "aba")


def best_env_step(p: ChainParams = INVERTED_DOUBLE_PENDULUM):
    """The env_step function (contract of ``dynamics.env_step``) fastest under jax.jit at ``p``'s n."""
    return FORMULATIONS[best_formulation(p)]


# ---- measuring ----

def rollout_program(env_step, p: ChainParams, steps: int):
    """jit-able (state, ctrl, reset) -> (state, summed reward): ``steps`` environment steps under
    lax.scan, finished envs reset to ``reset`` (so states stay in the reset distribution's reach)."""
    jax, jnp = _jax()

    def run(state, ctrl, reset):
        def body(carry, _):
            st, total = carry
            nxt, _obs, rew, term = env_step(st, ctrl, p, jnp)
            return (jnp.where(term[:, None], reset, nxt), total + rew), None
        (state, total), _ = jax.lax.scan(body, (state, jnp.zeros_like(ctrl)), None, length=steps)
        return state, total
    return run
