// CUDA kernel: policy inference fused with the simulation (paper section 7, future work).
//
// One thread per environment runs K steps, each: the MLP 4 -> 64 -> 64 -> 2 on the CartPole of
// its state (mlp.cuh: h1 in registers, the weights in shared memory, loaded once per block and
// read by a whole warp at the same address, a broadcast), the greedy action, then the CartPole
// step of cartpole.cuh (C sub-steps, termination/truncation, same-step reset). The CartPole stays
// in registers for all K steps and the carried floats of S > 1 are read and written once per
// launch; nothing (no activations, no actions) goes to global memory between steps, and there is
// one launch per rollout instead of K simulation
// launches plus K inference launches. The CPU build of the same logic is cuda/fused_cpu.cpp.
// Its entry points take one RolloutArgs by value (rollout_args.h), except the logits test kernel
// and fused_collect (in-kernel sampling, the trajectory written), which also takes TrajectoryArgs.
// Launched through CuPy (studylib/native/backends.py); compiled with `nvcc -ptx` in the tests.
#include "cartpole.cuh"
#include "gpu_rollout.cuh"
#include "mlp.cuh"
#include "rollout_args.h"
#include "trajectory_args.h"

#define FUSED_JB 8  // layer-2 neurons per register block (mlp_forward)

// The action of environment i for this step (CP_POLICY_* of rollout_args.h). `obs`: the CartPole.
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

// The whole MLP (MLP_NUM_PARAMS floats, 18 KiB) into the block's shared memory, every thread of
// the block helping; then a barrier. Call it from every thread of a block (before any early return).
__device__ __forceinline__ void load_weights_shared(float* w, const float* __restrict__ weights) {
    for (int j = threadIdx.x; j < MLP_NUM_PARAMS; j += blockDim.x) w[j] = CP_LDG(weights + j);
    __syncthreads();
}

// a.policy: CP_POLICY_MLP (the MLP on a.weights, MLP_NUM_PARAMS floats), CP_POLICY_HASH or
// CP_POLICY_ACTIONS (a.actions, K == 1).
extern "C" __global__ void fused_rollout(const RolloutArgs a) {
    __shared__ float w[MLP_NUM_PARAMS];  // 18 KiB: the whole MLP, once per block
    const int32_t policy = a.policy;
    if (policy == CP_POLICY_MLP) load_weights_shared(w, a.weights);  // uniform across the block: no divergent barrier
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

// fused_rollout for the policies without the MLP (CP_POLICY_HASH, CP_POLICY_ACTIONS), which the
// GPU backend launches for them. A kernel gets the registers of its most demanding path:
// fused_rollout keeps ~130 (the MLP's) even for policy "none", 18.75% occupancy where
// cartpole_rollout's ~46 give 62.5%, which would make a fused-against-cuda comparison without a
// policy measure the register file instead of the simulation. No shared memory either.
extern "C" __global__ void fused_rollout_no_mlp(const RolloutArgs a) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    const CartPoleParams p = cp_args_params(a);
    const RolloutConfig cfg = cp_args_config(a);
    const int32_t* __restrict__ actions = a.actions;
    const uint32_t seed = a.seed;
    const bool hashed = a.policy == CP_POLICY_HASH;
    cp_thread_rollout(a.state, a.elapsed, a.episode, a.flags_out, a.final_obs, a.episodes_done, i, cfg, p,
                      [&](const float*, uint32_t ep, int32_t el) {
                          return hashed ? cp_hash_action(seed, (uint32_t)i, ep, (uint32_t)el) : CP_LDG(actions + i);
                      });
}

// The shared-memory weights' address, as a value the compiler cannot prove the same from one step
// to the next. Without it, ptxas hoists the MLP's shared-memory loads (weights that do not change
// during the T steps) out of fused_collect's step loop and keeps them live across it: 255
// registers and ~1.4 KB of spill stores and loads per thread (sm_80 and sm_90). Reloaded every
// step from shared memory (a broadcast across the warp), they cost no spills. The host build
// (cuda_host.h) has no such allocator to fool: there it is the address itself.
__device__ __forceinline__ const float* fused_weights_per_step(const float* w) {
#if defined(__CUDA_ARCH__)
    unsigned int zero;
    asm volatile("mov.u32 %0, 0;" : "=r"(zero));  // volatile: a fresh, opaque 0 every step
    return w + zero;
#else
    return w;
#endif
}

// Environment i's T steps of fused_collect on its CartPole (`row`: 4 floats in registers): each
// step records obs, samples the action from the MLP's softmax (mlp_sample, keyed
// by the counter hash), records it and its log-probability, then cp_env_step writes final_obs
// (the CartPole before the same-step reset) and the step's flags are recorded. Returns the
// episodes ended.
__device__ __forceinline__ unsigned int fused_collect_steps(float* row, const float* w, const TrajectoryArgs& t,
                                                            long long i, long long n, int32_t& el, uint32_t& ep,
                                                            int& flags, const RolloutConfig& cfg,
                                                            const CartPoleParams& p) {
    unsigned int done = 0;
    for (int k = 0; k < cfg.num_steps; ++k) {
        const long long at = (long long)k * n + i;  // element (k, i) of a (T, n) array
        const float obs[MLP_IN] = {row[0], row[1], row[2], row[3]};
        for (int j = 0; j < MLP_IN; ++j) t.obs[at * 4 + j] = obs[j];
        float logit0, logit1, logp;
        mlp_forward<FUSED_JB>(obs, fused_weights_per_step(w), logit0, logit1);
        const int action = mlp_sample(logit0, logit1, mlp_sample_uniform(cfg.seed, (uint32_t)i, ep, (uint32_t)el), logp);
        t.actions[at] = action;
        t.logp[at] = logp;
        flags = cp_env_step(row, 1, action, el, ep, (uint32_t)i, t.final_obs + at * 4, cfg, p);
        t.flags[at] = (uint8_t)flags;
        done += flags != 0;
    }
    return done;
}

// a.num_steps (T) steps of every environment with actions sampled from the MLP on a.weights,
// the trajectory written into t (trajectory_args.h): the CUDA form of fused_cpu.cpp's
// fused_collect. One thread per environment; the CartPole stays in registers for all T steps (the
// carried floats of S > 1 are read and written once), the weights in shared memory; what goes to
// global memory is the trajectory itself.
extern "C" __global__ void fused_collect(const RolloutArgs a, const TrajectoryArgs t) {
    __shared__ float w[MLP_NUM_PARAMS];
    load_weights_shared(w, a.weights);
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;  // after the barrier: every thread of the block helped load the weights
    const CartPoleParams p = cp_args_params(a);
    const RolloutConfig cfg = cp_args_config(a);
    int32_t el = a.elapsed[i];
    uint32_t ep = a.episode[i];
    int flags = 0;
    float* row = a.state + i * 4 * (long long)cfg.state_factor;
    unsigned int done;
    float r[4] = {row[0], row[1], row[2], row[3]};
    cp_carry_device(row, cfg.state_factor, cp_carry_mask(cfg.num_steps));
    done = fused_collect_steps(r, w, t, i, a.n, el, ep, flags, cfg, p);
    for (int j = 0; j < 4; ++j) row[j] = r[j];
    a.elapsed[i] = el;
    a.episode[i] = ep;
    a.flags_out[i] = (uint8_t)flags;
    cp_count_episodes(a.episodes_done, done);
}

// Reset every environment to episode 0's draws (the same draws as cartpole_reset and the CPU build).
extern "C" __global__ void fused_reset(const RolloutArgs a) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    cp_args_reset_env(a, i);
}

// Start the next episode of the environments in a.reset_mask (the draws of cartpole_restart and
// of the CPU build).
extern "C" __global__ void fused_restart(const RolloutArgs a) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    cp_args_restart_env(a, i);
}

// Logits (n, 2) of observations (n, 4): the kernel's forward pass on its own (for tests).
extern "C" __global__ void fused_mlp_logits(const float* __restrict__ obs, float* __restrict__ logits,
                                            const float* __restrict__ weights, long long n) {
    __shared__ float w[MLP_NUM_PARAMS];
    load_weights_shared(w, weights);
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float o[MLP_IN] = {obs[i * 4], obs[i * 4 + 1], obs[i * 4 + 2], obs[i * 4 + 3]};
    float logit0, logit1;
    mlp_forward<FUSED_JB>(o, w, logit0, logit1);
    logits[i * 2] = logit0;
    logits[i * 2 + 1] = logit1;
}
