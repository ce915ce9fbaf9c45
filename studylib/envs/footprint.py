"""How much host memory N environments of each implementation class take (bytes, by formula): what
every class's ``estimate_bytes`` returns and what a request is checked against before anything is
allocated. Light on purpose (it imports nothing): ``registry.estimate_bytes``
reads ``BY_FACTORY`` for the records' own classes, so that a request too large for this machine
is refused before the implementation's module brings in torch or jax (1-2 s of imports on 2
cores). A class registered from elsewhere, absent here, is imported and asked itself."""

from __future__ import annotations

POLICY_ACTIVATIONS = 4 * 64 * 3  # float32 bytes per environment: the MLP's two hidden layers and out


def gym_cartpole(num_envs, state_factor, params=None):
    # A CartPoleEnv with its spaces and RNG (a few KiB) and the carried floats (twice: a step's new array).
    return num_envs * (8192 + 2 * 8 * 4 * state_factor)


def gym_chain(num_envs, state_factor, params=None):
    # an MjModel and MjData per environment (tens of KiB at small n, growing with n^2)
    return num_envs * (64 * 1024 + 512 * (params.links + 1) ** 2)


def cpp_cartpole(num_envs, state_factor, params=None):
    # float32 state + final observations + elapsed/episode counters + flags + the policy's
    # activations (N x 64 x 3).
    return num_envs * (16 * state_factor + 16 + 9 + POLICY_ACTIVATIONS)


def fused_cartpole(num_envs, state_factor, params=None):
    # float32 state + final observations + elapsed/episode counters + flags; no activations
    # are ever stored.
    return num_envs * (16 * state_factor + 16 + 9)


def cuda_cartpole(num_envs, state_factor, params=None):
    # Host-side staging only; device memory is checked by CUDA's allocator.
    return num_envs * 64


def native_chain(num_envs, state_factor, params=None):
    # the chain on a native backend (cpp, fused, cuda): the state, rewards, counters, flags, two
    # observation buffers and the policy's activations
    return num_envs * (4 * params.state_size + 8 * params.observation_size + 13 + POLICY_ACTIVATIONS)


def torch_cartpole(num_envs, state_factor, params=None):
    # The state row, a step's new row and the sign-flipped carried floats (and one more row in
    # flight), ~20 float32 temporaries of the CartPole's size, the policy's activations.
    return num_envs * (4 * 4 * state_factor * 4 + 4 * 4 * 24 + 4 * 64 * 4 + 64)


def jax_cartpole(num_envs, state_factor, params=None):
    # The carry's state and its next value (and a copy XLA may make), the CartPole's
    # temporaries, the policy's activations.
    return num_envs * (4 * 4 * state_factor * 4 + 4 * 4 * 16 + 4 * 64 * 4 + 64)


def array_rules(num_envs, state_factor=1, params=None):
    """The generic array implementations (TorchEnv, JaxEnv, TorchCompileEnv) for N environments of a
    simulator with array-form rules: the state, ~20 (N,) temporaries per coordinate, the pairs'
    (N,) terms, the policy's activations (a state of 8 floats where ``params`` names no size)."""
    state = getattr(params, "state_size", 8)
    return num_envs * 4 * (8 * state + 20 * state + state * state + 64 * 4)


# The records' classes ("module:Class", as ``ImplSpec.factory_for`` names them) -> their footprint
# (tests/test_footprint.py holds every class's estimate_bytes to its entry).
BY_FACTORY = {
    ".gym_env:GymCartPole": gym_cartpole,
    ".gym_env:GymChain": gym_chain,
    ".cpp_env:CppCartPole": cpp_cartpole,
    ".cpp_env:CppChain": native_chain,
    ".torch_env:TorchCartPole": torch_cartpole,
    ".torch_env:TorchEnv": array_rules,
    ".jax_env:JaxCartPole": jax_cartpole,
    ".jax_env:JaxEnv": array_rules,
    ".cuda_env:CudaCartPole": cuda_cartpole,
    ".cuda_env:CudaChain": native_chain,
    ".torch_compile_env:TorchCompileCartPole": torch_cartpole,
    ".torch_compile_env:TorchCompileEnv": array_rules,
    ".fused_env:FusedCartPole": fused_cartpole,
    ".fused_env:FusedChain": native_chain,
}
