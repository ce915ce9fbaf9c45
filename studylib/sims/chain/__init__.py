"""The n-link cart-pole chain, one folder: gymnasium's InvertedDoublePendulum-v5 at n = 2,
generalized to any n (the paper's §7: "explore additional simulators of varying memory/compute
complexity"), and its record (``CHAIN``).

    model.py     its constants (``ChainParams``), bodies in closed form and the MJCF MuJoCo compiles
    dynamics.py  the array dynamics (numpy float64 is the reference; torch and jax run the same
                 lines through ``xp``), checked against MuJoCo's ``mj_step``, and the work of a step
    episode.py   the episode step in array form: v5's reset, truncation, same-step autoreset, the
                 hashed reset draws, controls and policy noise every implementation shares
    native.py    the C/CUDA builds of ``cuda/chain.cuh`` (environment layer: imported by
                 ``studylib.native``, never by the core)
    backend.py   the episodes in the C builds as Python calls them (cpp, fused)
    cuda_backend.py  the same through CuPy on the GPU (cuda; tested here through the host build)

The names of model.py and dynamics.py are this package's too (``chain.physics_step``,
``chain.ChainParams``), so ``from studylib.sims import chain`` reads as one module.
"""

from __future__ import annotations

from ..base import SimSpec
from .dynamics import (COUNTER_BYTES, accelerations, actuator_force, chain_bytes, chain_flops,  # noqa: F401
                       chain_transcendentals, cholesky_solve, env_step, forward_flops, is_terminated, observation,
                       physics_step, reference_step, reward, rk4_flops, rk4_step, rk4_transcendentals, tip,
                       _constants, _rk4, _steps)
from .model import (INVERTED_DOUBLE_PENDULUM, MAX_LINKS, ChainParams, capsule_inertia, capsule_mass,  # noqa: F401
                    chain_mjcf)

# What a chain row measured: since the chain is an environment, every step runs v5's episode rules
# (observation, reward, termination, truncation, same-step reset; ``episode.py``). Rows measured
# before, of the physics alone, have no such column, so their keys differ and none stands for a
# row of today's.
EPISODE_RULES = "v5"

CHAIN = SimSpec(
    name="chain", title="n-link cart-pole chain (InvertedDoublePendulum-v5 at n = 2)",
    state_size=INVERTED_DOUBLE_PENDULUM.state_size, observation_size=INVERTED_DOUBLE_PENDULUM.observation_size,
    num_actions=0, params_type=ChainParams, default_params=INVERTED_DOUBLE_PENDULUM,
    reward="v5's, generalized: 10 while healthy − 0.01 x_tip² − (y_tip − (n L + 0.8))² − 1e-3 θ̇_1² − "
           "5e-3 Σ_{k≥2} θ̇_k² (InvertedDoublePendulum-v5 at n = 2)",
    termination="the tip's height y ≤ n L / 1.2 (v5's y ≤ 1 at n = 2); truncated after "
                f"{INVERTED_DOUBLE_PENDULUM.max_episode_steps} steps",
    reference="MuJoCo C's mj_step (float64) on chain_mjcf(n)",
    dynamics={"python": "studylib.sims.chain", "c": "cuda/chain.cuh"}, episode="studylib.sims.chain.episode:RULES",
    knobs=(), policies=("mlp", "none"),
    variant=lambda p: {"links": p.links, "episode_rules": EPISODE_RULES},
    params_of=lambda columns: ChainParams(links=columns["links"]),
    sizes_of=lambda p: (p.state_size, p.observation_size),
    variant_flags=(("links", f"the chain's links n, 1 to {MAX_LINKS} (--sim chain; list allowed: 1,2,4,8)"),),
    physics_flops=lambda p, c: chain_flops(p.links, p.frame_skip),
    transcendentals=lambda p, c: chain_transcendentals(p.links, p.frame_skip),
    unfused_bytes=lambda p, s: chain_bytes(p.links, s),
    mujoco_mjcf=lambda p: (chain_mjcf(p.links, p), p.frame_skip))
