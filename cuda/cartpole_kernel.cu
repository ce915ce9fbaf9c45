// CUDA kernel: K CartPole steps per launch, one thread per environment.
//
// The dynamics come from cartpole.cuh, the same header the CPU build (cartpole_cpu.cpp) compiles,
// so the CPU build runs this kernel's logic on machines without a GPU. The per-thread loop (state
// in registers for all K steps when S == 1: the paper's simulator kernel fusion, section 4) is
// gpu_rollout.cuh, shared with the fused kernel.
// Launched through CuPy (studylib/cuda_env.py); compiled here with `nvcc -ptx` to check it.
#include "cartpole.cuh"
#include "gpu_rollout.cuh"

extern "C" __global__ void cartpole_rollout(
    float* __restrict__ state,            // (n, 4*S) row-major
    int32_t* __restrict__ elapsed,        // (n,) steps into the current episode
    uint32_t* __restrict__ episode,       // (n,) episodes started, keys the reset draws
    const int32_t* __restrict__ actions,  // (n,) for K == 1 with a policy; nullptr: hashed actions
    uint8_t* __restrict__ flags_out,      // (n,) bit 0 terminated, bit 1 truncated, last step
    unsigned long long* __restrict__ episodes_done,  // (1,) += episodes finished in this call
    const float* __restrict__ param_floats, int32_t max_episode_steps, long long n,
    int32_t state_factor, int32_t compute_factor, int32_t num_steps, uint32_t seed) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const CartPoleParams p = cp_params_from_array(param_floats, max_episode_steps);
    const RolloutConfig cfg = {state_factor, compute_factor, num_steps, seed};
    cp_thread_rollout(state, elapsed, episode, flags_out, episodes_done, i, cfg, p,
                      [&](const float*, uint32_t ep, int32_t el) {
                          return actions ? actions[i] : cp_hash_action(seed, (uint32_t)i, ep, (uint32_t)el);
                      });
}

// Reset every environment to episode 0's draws (the same draws the CPU build makes).
extern "C" __global__ void cartpole_reset(float* __restrict__ state, int32_t* __restrict__ elapsed,
                                          uint32_t* __restrict__ episode, long long n,
                                          int32_t state_factor, uint32_t seed) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cp_thread_reset(state, elapsed, episode, i, state_factor, seed);
}
