// CUDA kernel: policy inference fused with the simulation (paper section 7, future work).
//
// One thread per environment runs K steps, each: the MLP 4 -> 64 -> 64 -> 2 on copy 0 of its
// state (mlp.cuh: h1 in registers, the weights in shared memory, loaded once per block and read
// by a whole warp at the same address, a broadcast), the greedy action, then the CartPole step of
// cartpole.cuh (all S copies, C sub-steps, termination/truncation, same-step reset). With S == 1
// the state stays in registers for all K steps; nothing (no activations, no actions) goes to
// global memory between steps, and there is one launch per rollout instead of K simulation
// launches plus K inference launches. The CPU build of the same logic is cuda/fused_cpu.cpp.
// Its entry points take one RolloutArgs by value (rollout_args.h), except the logits test kernel.
// Launched through CuPy (studylib/backends.py); compiled with `nvcc -ptx` in the tests.
#include "cartpole.cuh"
#include "gpu_rollout.cuh"
#include "mlp.cuh"
#include "rollout_args.h"

#define FUSED_JB 8  // layer-2 neurons per register block (mlp_forward)

// The action of environment i for this step (CP_POLICY_* of rollout_args.h). `obs` is copy 0.
__device__ __forceinline__ int fused_action(int policy, const float obs[MLP_IN], const float* w,
                                            const int32_t* __restrict__ actions, long long i, uint32_t seed,
                                            uint32_t episode, int32_t elapsed) {
    if (policy == CP_POLICY_MLP) {
        float logit0, logit1;
        mlp_forward<FUSED_JB>(obs, w, logit0, logit1);
        return mlp_greedy_action(logit0, logit1);
    }
    if (policy == CP_POLICY_HASH) return cp_hash_action(seed, (uint32_t)i, episode, (uint32_t)elapsed);
    return CP_LDG(actions + i);
}

// a.policy: CP_POLICY_MLP (the MLP on a.weights, MLP_NUM_PARAMS floats), CP_POLICY_HASH or
// CP_POLICY_ACTIONS (a.actions, K == 1).
extern "C" __global__ void fused_rollout(const RolloutArgs a) {
    __shared__ float w[MLP_NUM_PARAMS];  // 18 KiB: the whole MLP, once per block
    const int32_t policy = a.policy;
    if (policy == CP_POLICY_MLP) {  // uniform across the block: no divergent barrier
        const float* __restrict__ weights = a.weights;
        for (int j = threadIdx.x; j < MLP_NUM_PARAMS; j += blockDim.x) w[j] = CP_LDG(weights + j);
        __syncthreads();
    }
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;  // after the barrier: every thread of the block helped load the weights
    const CartPoleParams p = cp_args_params(a);
    const RolloutConfig cfg = cp_args_config(a);
    const int32_t* __restrict__ actions = a.actions;
    const uint32_t seed = a.seed;
    cp_thread_rollout(a.state, a.elapsed, a.episode, a.flags_out, a.final_obs, a.episodes_done, i, cfg, p,
                      [&](const float* obs, uint32_t ep, int32_t el) {
                          return fused_action(policy, obs, w, actions, i, seed, ep, el);
                      });
}

// Reset every environment to episode 0's draws (the same draws as cartpole_reset and the CPU build).
extern "C" __global__ void fused_reset(const RolloutArgs a) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    cp_thread_reset(a, i);
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
