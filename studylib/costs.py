"""The work of one step, counted once from the formulas: CartPole's in its record
(``studylib.sims.cartpole``: its functions are re-exported here), the policy's here (studylib.policy).

The roofline (studylib.harness.model.roofline) divides this machine's measured ceilings by these
counts. The counts are of the source's operations, as written: a compiler may fold a few
constants (e.g. polemass_length / total_mass), which makes the real count slightly lower.

The paper's two knobs (Gleeson et al. 2022, §4.2) move different resources, and are counted so:
the compute factor C multiplies the arithmetic (C Euler sub-steps), the state factor S the memory
traffic only ("The state factor S increases the cartpole state size by a factor of S×, resulting
in S× as many global memory loads and stores"; Fig 9: "state factor S increases memory bandwidth
requirements by S×"). The 4*(S-1) carried floats of S (studylib.sims.cartpole) are sign-flipped each
step: one bit, counted as no flop.

Physics, per Euler sub-step of the one CartPole (dynamics.physics_step), whatever S:
  temp      (force + pml * theta_dot^2 * sin) / total_mass    5 flops
  thetaacc  (g*sin - cos*temp) / (l*(4/3 - mp*cos^2/M))        9 flops
  xacc      temp - pml * thetaacc * cos / M                    4 flops
  update    four x + dt * x_dot                                8 flops
  plus one sin and one cos, counted apart: a vector sinf/cosf is a polynomial of some tens of
  flops, so a ceiling computed from the 26 flops alone is an upper bound that sin/cos keep a
  step from reaching.
MLP 4 -> 64 -> 64 -> 2 (policy.mlp_logits): 2 * (4*64 + 64*64 + 64*2) multiply-adds as flops plus
  130 bias adds; 128 tanh counted apart.
Memory, per environment and step, when the state does NOT stay in cache between steps (unfused):
  the 4*S float32 state row (the CartPole and its carried floats) read and written (32*S bytes)
  and the int32 elapsed and uint32 episode counters read and written (16 bytes): 32*S + 16 bytes.
  A call that fuses K steps moves these bytes once, for all K steps.
  With the MLP in an unfused framework, each layer's output (64 + 64 + 2 float32) is written and
  read back once more: 2 * 4 * 130 = 1040 bytes (``policy_bytes``).
Transcendentals (``step_transcendentals``): sin and cos per physics sub-step counted, plus the
  MLP's tanh; the cost model (studylib.harness.model.costmodel) prices them apart from the flops.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import policy
from .policy import LAYER_SIZES
from .sims.cartpole import (COUNTER_BYTES, PHYSICS_FLOPS_PER_SUBSTEP,  # noqa: F401  (CartPole's, re-exported)
                            PHYSICS_TRANSCENDENTALS_PER_SUBSTEP, STATE_SIZE)
from .sims.cartpole import physics_flops as _cartpole_flops
from .sims.cartpole import unfused_bytes as _cartpole_bytes
def mlp_flops(layer_sizes=None) -> int:
    """Flops of one forward pass through an MLP of ``layer_sizes`` (default: the policy's,
    ``studylib.policy.LAYER_SIZES``, read at the call): a multiply and an add per weight
    (2 x fan_in x fan_out) and an add per bias (fan_out); the activations are counted apart."""
    sizes = tuple(policy.LAYER_SIZES if layer_sizes is None else layer_sizes)
    if len(sizes) < 2 or any(int(n) != n or n < 1 for n in sizes):
        raise ValueError(f"layer sizes must be two or more positive integers, got {sizes!r}")
    return sum(2 * a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


MLP_FLOPS = mlp_flops()  # 9090
MLP_TANH = sum(LAYER_SIZES[1:-1])  # 128
MLP_ACTIVATION_BYTES = 2 * 4 * sum(LAYER_SIZES[1:])  # 1040: each layer's float32 output written, read back
# What the fused kernel issues for one forward pass (cuda/fused_cpu.cpp, cuda/mlp.cuh): one multiply-add
# per weight, each sum starting from its bias (4480), and per tanh the operations of mlp.cuh's
# mlp_tanh as written: 4 + 3 FMAs, the clamp, the square, a multiply and the division (11; tested
# against the source). An ISA may split one into several (AVX2's clamp is a max and a min,
# AVX-512's division three uops on the FMA ports).
MLP_FMAS = sum(a * b for a, b in zip(LAYER_SIZES[:-1], LAYER_SIZES[1:]))
MLP_TANH_OPERATIONS = 11


@dataclass(frozen=True)
class TanhOnIsa:
    """mlp_tanh as the CPU build (cuda/fused_cpu.cpp) executes it on the FMA ports of one vector ISA
    (a machine's provenance "isa": ``MLP_TANH_ON_ISA``'s keys); other ISAs count the operations as
    written (``tanh_port_operations``)."""

    label: str  # the ISA's name in prose
    operations: int  # FMA-port operations (uops) of one tanh
    why: str  # how the ISA splits the operations as written


MLP_TANH_ON_ISA = {
    "avx512": TanhOnIsa("AVX-512", MLP_TANH_OPERATIONS + 2,
                        "its clamp is one vrangeps, but its division, a vdivps on zmm registers, is three uops"),
    "avx2": TanhOnIsa("AVX2", MLP_TANH_OPERATIONS + 1, "its clamp is two operations, a vmaxps and a vminps"),
}


def tanh_port_operations(isa: str | None) -> int:
    """FMA-port operations per tanh of the CPU kernel on a machine whose vector ISA is ``isa``
    (``MLP_TANH_ON_ISA``; ``MLP_TANH_OPERATIONS``, as written, for any other or unknown)."""
    known = MLP_TANH_ON_ISA.get(isa or "")
    return known.operations if known else MLP_TANH_OPERATIONS


def fma_port_bound(tanh_operations: int = MLP_TANH_OPERATIONS) -> float:
    """The largest share of the FMA ceiling (2 flops per multiply-add) the MLP's counted flops can
    reach when the FMA ports execute its multiply-adds and its tanh's ``tanh_operations`` each, and
    nothing else, every cycle: MLP_FLOPS / 2 / (MLP_FMAS + MLP_TANH * tanh_operations)."""
    return MLP_FLOPS / 2 / (MLP_FMAS + MLP_TANH * tanh_operations)


def physics_flops(state_factor: int = 1, compute_factor: int = 1) -> int:
    """Arithmetic flops of one environment step: one CartPole's C sub-steps, sin/cos not counted.
    The state factor S adds memory traffic, no arithmetic (``unfused_bytes``), so it does not
    enter; it is a parameter so that every count takes the same (S, C)."""
    return _cartpole_flops(compute_factor)


def step_flops(state_factor: int = 1, compute_factor: int = 1, policy: str = "none") -> int:
    """Flops of one environment step, with the MLP's forward pass when ``policy == "mlp"``."""
    return physics_flops(state_factor, compute_factor) + (MLP_FLOPS if policy == "mlp" else 0)


def unfused_bytes(state_factor: int = 1) -> int:
    """Bytes one environment step moves to and from memory when the state is not kept in cache."""
    return _cartpole_bytes(state_factor)


def arithmetic_intensity(state_factor: int = 1, compute_factor: int = 1, policy: str = "none") -> float:
    """Flops per byte of memory traffic of an unfused step: falls as 1/S (paper §4.2's S)."""
    return step_flops(state_factor, compute_factor, policy) / unfused_bytes(state_factor)


def policy_flops(policy: str = "none", sizes=None) -> int:
    """Flops of one step's inference (the MLP's forward pass of layer ``sizes``, default
    CartPole's 4-64-64-2, e.g. a simulator record's ``policy_sizes``; none without a policy)."""
    return mlp_flops(sizes) if policy == "mlp" else 0


def policy_transcendentals(policy: str = "none", sizes=None) -> int:
    """The MLP's tanh of one step's inference (one per hidden unit)."""
    return sum(tuple(LAYER_SIZES if sizes is None else sizes)[1:-1]) if policy == "mlp" else 0


def policy_bytes(policy: str = "none", sizes=None) -> int:
    """Bytes one environment step's inference adds to memory traffic in an unfused framework:
    each layer's float32 output written and read back once."""
    return 2 * 4 * sum(tuple(LAYER_SIZES if sizes is None else sizes)[1:]) if policy == "mlp" else 0


def step_transcendentals(state_factor: int = 1, compute_factor: int = 1, policy: str = "none") -> int:
    """sin/cos of the physics (as many sub-steps as ``physics_flops`` counts) plus the MLP's tanh."""
    substeps = physics_flops(state_factor, compute_factor) // PHYSICS_FLOPS_PER_SUBSTEP
    return PHYSICS_TRANSCENDENTALS_PER_SUBSTEP * substeps + (MLP_TANH if policy == "mlp" else 0)
