// CUDA kernel: K CartPole steps per launch, one thread per environment.
//
// The dynamics come from cartpole.cuh, the same header the CPU build (cartpole_cpu.cpp) compiles,
// so the CPU build runs this kernel's logic on machines without a GPU. The per-thread loop (the
// CartPole in registers for all K steps: the paper's simulator kernel fusion, section 4) is
// gpu_rollout.cuh, shared with the fused kernel. Every entry point (rollout, reset, restart) takes
// one RolloutArgs by value (rollout_args.h). Launched through CuPy (studylib/native/backends.py);
// compiled here with `nvcc -ptx` to check it.
#include "cartpole.cuh"
#include "gpu_rollout.cuh"
#include "rollout_args.h"

// a.policy: CP_POLICY_ACTIONS (a.actions, K == 1) or CP_POLICY_HASH (hashed actions).
extern "C" __global__ void cartpole_rollout(const RolloutArgs a) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    const CartPoleParams p = cp_args_params(a);
    const RolloutConfig cfg = cp_args_config(a);
    const int32_t* __restrict__ actions = a.policy == CP_POLICY_ACTIONS ? a.actions : nullptr;
    const uint32_t seed = a.seed;
    cp_thread_rollout(a.state, a.elapsed, a.episode, a.flags_out, a.final_obs, a.episodes_done, i, cfg, p,
                      [&](const float*, uint32_t ep, int32_t el) {
                          return actions ? CP_LDG(actions + i) : cp_hash_action(seed, (uint32_t)i, ep, (uint32_t)el);
                      });
}

// Reset every environment to episode 0's draws (the same draws the CPU build makes).
extern "C" __global__ void cartpole_reset(const RolloutArgs a) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    cp_args_reset_env(a, i);
}

// Start the next episode of the environments in a.reset_mask (the same draws the CPU build makes).
extern "C" __global__ void cartpole_restart(const RolloutArgs a) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    cp_args_restart_env(a, i);
}
