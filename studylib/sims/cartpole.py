"""CartPole-v1, stated once in Python (float64): the reference every implementation must match,
and its record (``CARTPOLE``: what the rest of the study reads of it, with the work of a step).

The formulas mirror gymnasium's ``CartPoleEnv.step`` line for line (explicit Euler: positions
advance with the *old* velocities). ``cuda/cartpole.cuh`` repeats them line for line in C++/CUDA;
``studylib/envs/torch_env.py`` and ``studylib/envs/jax_env.py`` repeat them on tensors. A reviewer can read
the four side by side.

The paper's complexity knobs (Gleeson et al. 2022, section 4.2) are defined here, once:

state factor S
    Paper §4.2: "The state factor S increases the cartpole state size by a factor of S×,
    resulting in S× as many global memory loads and stores"; Fig 9's caption: "state factor S
    increases memory bandwidth requirements by S×" (C, below, is the knob for arithmetic). An
    environment's state is one row of 4*S floats: the CartPole's 4 (x, x_dot, theta, theta_dot)
    and 4*(S-1) *carried* floats, which are memory traffic and no arithmetic: every step flips
    their sign (``carry``: x -> -x, exact), so a step that passes over memory reads and writes all
    4*S floats, and an implementation that fuses K steps in one call reads and writes them once,
    flipped K times. A sign flip cannot be folded by a compiler or skipped (XLA, TorchInductor and
    g++ must load, flip and store every carried float), and the carried floats are returned by
    ``get_state``. The CartPole's transition is the same for every S; observation, reward and
    termination are the CartPole's; an episode's reset redraws the CartPole and leaves the carried
    floats as they are (``reset()`` draws all 4*S). S=1 is CartPole-v1.
compute factor C
    Each step integrates C explicit-Euler sub-steps of tau/C. Each sub-step depends on the one
    before, so the work cannot be folded away; the result changes with C (and converges as C
    grows). C=1 is CartPole-v1, bit for bit (tau/1 == tau).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .base import SimSpec

STATE_COMPONENTS = ("x", "x_dot", "theta", "theta_dot")
STATE_SIZE = len(STATE_COMPONENTS)  # floats of the CartPole; a state row is STATE_SIZE * S
RESET_LOW, RESET_HIGH = -0.05, 0.05  # CartPole-v1 reset bounds, uniform per component


@dataclass(frozen=True)
class CartPoleParams:
    """Physical constants of CartPole-v1. Derived constants are properties, never typed in."""

    gravity: float = 9.8  # m/s^2
    masscart: float = 1.0  # kg
    masspole: float = 0.1  # kg
    length: float = 0.5  # m, half the pole's length (as in gymnasium)
    force_mag: float = 10.0  # N, magnitude of the push left (action 0) or right (action 1)
    tau: float = 0.02  # s between state updates
    x_threshold: float = 2.4  # m, |x| beyond this terminates
    theta_threshold_radians: float = 12 * 2 * math.pi / 360  # |theta| beyond this terminates
    max_episode_steps: int = 500  # CartPole-v1's TimeLimit: truncation after this many steps

    @property
    def total_mass(self) -> float:
        return self.masspole + self.masscart

    @property
    def polemass_length(self) -> float:
        # gymnasium's phys2d JAX CartPole writes masspole + length here: a known peer bug.
        return self.masspole * self.length


CARTPOLE_V1 = CartPoleParams()


def physics_step(state, force, dt: float, p: CartPoleParams = CARTPOLE_V1, xp=np):
    """One explicit-Euler step of length ``dt``; ``state[..., 0:4]`` = x, x_dot, theta, theta_dot.

    ``xp`` is the array module: numpy here (float64, the reference), ``torch`` in torch_env.py and
    ``jax.numpy`` in jax_env.py (float32), so the Python implementations share these lines.
    Works on any leading shape; ``force`` broadcasts against ``state[..., 0]``.
    """
    x, x_dot, theta, theta_dot = (state[..., i] for i in range(STATE_SIZE))
    costheta = xp.cos(theta)
    sintheta = xp.sin(theta)
    temp = (force + p.polemass_length * xp.square(theta_dot) * sintheta) / p.total_mass
    thetaacc = (p.gravity * sintheta - costheta * temp) / (
        p.length * (4.0 / 3.0 - p.masspole * xp.square(costheta) / p.total_mass)
    )
    xacc = temp - p.polemass_length * thetaacc * costheta / p.total_mass
    return xp.stack(
        (
            x + dt * x_dot,
            x_dot + dt * xacc,
            theta + dt * theta_dot,
            theta_dot + dt * thetaacc,
        ),
        axis=-1,
    )


def is_terminated(obs, p: CartPoleParams = CARTPOLE_V1):
    """CartPole-v1 termination of the CartPole: strict inequalities, as gymnasium."""
    x, theta = obs[..., 0], obs[..., 2]
    return (
        (x < -p.x_threshold)
        | (x > p.x_threshold)
        | (theta < -p.theta_threshold_radians)
        | (theta > p.theta_threshold_radians)
    )


def carry(carried, xp=np):
    """The state factor's carried floats (..., 4*(S-1)) after one step: each flips its sign.

    Exact in any float format, and no arithmetic worth counting (one bit); K steps flip them K
    times, so a K-step call that reads and writes them once flips them (K mod 2) times."""
    return -carried


def reference_step(states, actions, *, compute_factor: int = 1, p: CartPoleParams = CARTPOLE_V1):
    """Advance float64 states (N, 4*S) by one step with actions (N,) in {0, 1}: the CartPole
    (columns 0..3) by C sub-steps, the carried floats (columns 4..4S) by ``carry``.

    Returns (next_states, observations (N, 4) float32, terminated (N,) bool). No reset and no
    truncation: those are episode bookkeeping, not dynamics.
    """
    states = np.asarray(states, dtype=np.float64)
    force = np.where(np.asarray(actions) == 1, p.force_mag, -p.force_mag)
    obs = integrate(states[:, :STATE_SIZE], force, compute_factor, p)
    next_states = np.concatenate((obs, carry(states[:, STATE_SIZE:])), axis=1)
    return next_states, obs.astype(np.float32), is_terminated(obs, p)


def integrate(cartpole, force, compute_factor: int, p: CartPoleParams = CARTPOLE_V1, xp=np):
    """The compute factor: C sub-steps of tau/C on CartPoles (..., 4); C=1 is one CartPole-v1 step."""
    dt = p.tau / compute_factor
    for _ in range(compute_factor):
        cartpole = physics_step(cartpole, force, dt, p, xp)
    return cartpole


# ---- the work of a step (studylib.costs adds the policy's; the cost model and the roofline read these) --
# Per Euler sub-step of the one CartPole (physics_step), whatever S:
#   temp      (force + pml * theta_dot^2 * sin) / total_mass    5 flops
#   thetaacc  (g*sin - cos*temp) / (l*(4/3 - mp*cos^2/M))        9 flops
#   xacc      temp - pml * thetaacc * cos / M                    4 flops
#   update    four x + dt * x_dot                                8 flops
# plus one sin and one cos, counted apart. Memory, per environment and step, when the state does
# not stay in cache between steps: the 4*S float32 state row read and written (32*S bytes) and the
# int32 elapsed and uint32 episode counters read and written (16 bytes).
PHYSICS_FLOPS_PER_SUBSTEP = 5 + 9 + 4 + 8  # sin and cos apart
PHYSICS_TRANSCENDENTALS_PER_SUBSTEP = 2  # sin, cos
COUNTER_BYTES = 4 + 4  # int32 elapsed, uint32 episode


def physics_flops(compute_factor: int = 1) -> int:
    """Arithmetic flops of one step: one CartPole's C sub-steps, sin/cos not counted (S adds none)."""
    return PHYSICS_FLOPS_PER_SUBSTEP * compute_factor


def physics_transcendentals(compute_factor: int = 1) -> int:
    """sin and cos of one step's C sub-steps."""
    return PHYSICS_TRANSCENDENTALS_PER_SUBSTEP * compute_factor


def unfused_bytes(state_factor: int = 1) -> int:
    """Bytes one environment step moves to and from memory when the state is not kept in cache."""
    return 2 * (4 * STATE_SIZE * state_factor + COUNTER_BYTES)


CARTPOLE = SimSpec(
    name="cartpole", title="CartPole-v1", state_size=STATE_SIZE, observation_size=STATE_SIZE, num_actions=2,
    params_type=CartPoleParams, default_params=CARTPOLE_V1,
    reward="1 every step, the terminating one included (gymnasium's CartPole-v1)",
    termination=f"|x| > {CARTPOLE_V1.x_threshold} m or |theta| > 12 degrees; truncated after "
                f"{CARTPOLE_V1.max_episode_steps} steps",
    reference="gymnasium's CartPole-v1 (gymnasium.envs.classic_control.cartpole.CartPoleEnv)",
    dynamics={"python": "studylib.sims.cartpole", "c": "cuda/cartpole.cuh"},
    knobs=("state_factor", "compute_factor"),
    physics_flops=lambda p, c: physics_flops(c), transcendentals=lambda p, c: physics_transcendentals(c),
    unfused_bytes=lambda p, s: unfused_bytes(s))
