// CUDA kernel: policy inference fused with the simulation (paper section 7, future work).
//
// One thread per environment runs K steps, each: the MLP 4 -> 64 -> 64 -> 2 on copy 0 of its
// state (mlp.cuh: h1 in registers, the weights in shared memory, loaded once per block and read
// by a whole warp at the same address, a broadcast), the greedy action, then the CartPole step of
// cartpole.cuh (all S copies, C sub-steps, termination/truncation, same-step reset). With S == 1
// the state stays in registers for all K steps; nothing (no activations, no actions) goes to
// global memory between steps, and there is one launch per rollout instead of K simulation
// launches plus K inference launches. The CPU build of the same logic is cuda/fused_cpu.cpp.
// Launched through CuPy (studylib/fused_env.py); compiled with `nvcc -ptx` in the tests.
#include "cartpole.cuh"
#include "gpu_rollout.cuh"
#include "mlp.cuh"

#define FUSED_JB 8  // layer-2 neurons per register block (mlp_forward)

// The action of environment i for this step (FUSED_POLICY_* of mlp.cuh). `obs` is copy 0.
__device__ __forceinline__ int fused_action(int policy, const float obs[MLP_IN], const float* w,
                                            const int32_t* actions, long long i, uint32_t seed,
                                            uint32_t episode, int32_t elapsed) {
    if (policy == FUSED_POLICY_MLP) {
        float logit0, logit1;
        mlp_forward<FUSED_JB>(obs, w, logit0, logit1);
        return mlp_greedy_action(logit0, logit1);
    }
    if (policy == FUSED_POLICY_HASH) return cp_hash_action(seed, (uint32_t)i, episode, (uint32_t)elapsed);
    return actions[i];
}

extern "C" __global__ void fused_rollout(
    float* __restrict__ state,            // (n, 4*S) row-major
    int32_t* __restrict__ elapsed,        // (n,) steps into the current episode
    uint32_t* __restrict__ episode,       // (n,) episodes started, keys the reset draws
    const int32_t* __restrict__ actions,  // (n,) for FUSED_POLICY_ACTIONS, else unused (may be null)
    uint8_t* __restrict__ flags_out,      // (n,) bit 0 terminated, bit 1 truncated, last step
    unsigned long long* __restrict__ episodes_done,  // (1,) += episodes finished in this call
    const float* __restrict__ param_floats, const float* __restrict__ weights,  // MLP_NUM_PARAMS
    int32_t max_episode_steps, long long n, int32_t state_factor, int32_t compute_factor,
    int32_t num_steps, uint32_t seed, int32_t policy) {
    __shared__ float w[MLP_NUM_PARAMS];  // 18 KiB: the whole MLP, once per block
    if (policy == FUSED_POLICY_MLP) {     // uniform across the block: no divergent barrier
        for (int j = threadIdx.x; j < MLP_NUM_PARAMS; j += blockDim.x) w[j] = weights[j];
        __syncthreads();
    }
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;  // after the barrier: every thread of the block helped load the weights
    const CartPoleParams p = cp_params_from_array(param_floats, max_episode_steps);
    const RolloutConfig cfg = {state_factor, compute_factor, num_steps, seed};
    cp_thread_rollout(state, elapsed, episode, flags_out, episodes_done, i, cfg, p,
                      [&](const float* obs, uint32_t ep, int32_t el) {
                          return fused_action(policy, obs, w, actions, i, seed, ep, el);
                      });
}

// Reset every environment to episode 0's draws (the same draws as cartpole_reset and the CPU build).
extern "C" __global__ void fused_reset(float* __restrict__ state, int32_t* __restrict__ elapsed,
                                       uint32_t* __restrict__ episode, long long n,
                                       int32_t state_factor, uint32_t seed) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cp_thread_reset(state, elapsed, episode, i, state_factor, seed);
}

// Logits (n, 2) of observations (n, 4): the kernel's forward pass on its own (for tests).
extern "C" __global__ void fused_mlp_logits(const float* __restrict__ obs, float* __restrict__ logits,
                                            const float* __restrict__ weights, long long n) {
    __shared__ float w[MLP_NUM_PARAMS];
    for (int j = threadIdx.x; j < MLP_NUM_PARAMS; j += blockDim.x) w[j] = weights[j];
    __syncthreads();
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float o[MLP_IN] = {obs[i * 4], obs[i * 4 + 1], obs[i * 4 + 2], obs[i * 4 + 3]};
    float logit0, logit1;
    mlp_forward<FUSED_JB>(o, w, logit0, logit1);
    logits[i * 2] = logit0;
    logits[i * 2 + 1] = logit1;
}
