// The CUDA kernels' shared per-thread loop (cartpole_kernel.cu for `cuda`, fused_kernel.cu for
// `fused`): one thread per environment, K steps per launch, built from cartpole.cuh's cp_env_step.
// A thread keeps its CartPole's 4 floats in registers for all K steps and touches global memory
// once at each end: the paper's simulator kernel fusion (section 4). The 4*(S-1) carried floats
// of the state factor S are read and written once per launch (cp_carry_device), so K = 1 per
// launch moves all 4*S floats every step and a K-step launch moves them once.
// Device only: included by the .cu files; the CPU form of this loop is cpu_rollout.h.
#pragma once
#include "cartpole.cuh"
#include "rollout_args.h"

// cartpole.cuh's cp_carry with 16-byte loads and stores on the GPU: a row starts at a multiple of
// 16 bytes (4*S floats per row, allocations 256-byte aligned), so its carried floats are S - 1
// float4s. The host build (cuda_host.h) runs cp_carry itself.
__device__ __forceinline__ void cp_carry_device(float* row, int32_t state_factor, uint32_t mask) {
#if defined(__CUDA_ARCH__)
    float4* v = reinterpret_cast<float4*>(row) + 1;
    for (int32_t j = 0; j < state_factor - 1; ++j) {
        float4 a = v[j];
        a.x = cp_flip_sign(a.x, mask);
        a.y = cp_flip_sign(a.y, mask);
        a.z = cp_flip_sign(a.z, mask);
        a.w = cp_flip_sign(a.w, mask);
        v[j] = a;
    }
#else
    cp_carry(row, state_factor, mask);
#endif
}

// Adds this thread's `done` episodes to the launch's counter with one 64-bit atomic per warp
// instead of one per thread (N atomics on one address serialize in L2): the lanes that arrive
// together (__activemask: after the kernels' `i >= n` returns, the live lanes of a partial warp)
// sum their counts (__reduce_add_sync, sm_80+) and their lowest lane adds the sum. Correct however
// the warp is split, since each converged group adds its own sum. A warp's sum fits 32 bits while
// K < 2^27 steps per launch. Before sm_80 (no __reduce_add_sync) a thread adds its own count.
__device__ __forceinline__ void cp_count_episodes(unsigned long long* counter, unsigned int done) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    if (done) atomicAdd(counter, (unsigned long long)done);
#else
    const unsigned int lanes = __activemask();
    const unsigned int total = __reduce_add_sync(lanes, done);
    if (total && (int)(threadIdx.x % 32) == __ffs(lanes) - 1) atomicAdd(counter, (unsigned long long)total);
#endif
}

// Runs environment i's K steps; choose_action(const float obs[4], uint32_t episode,
// int32_t elapsed) -> 0 or 1 picks each step's action from the CartPole (the observation). The
// kernels pass RolloutArgs' arrays here one by one: as __restrict__ parameters of this (inlined) function they
// keep the no-alias promise that kernel parameters gave before the arguments became one struct.
template <class ChooseAction>
__device__ __forceinline__ void cp_thread_rollout(float* __restrict__ state, int32_t* __restrict__ elapsed,
                                                  uint32_t* __restrict__ episode, uint8_t* __restrict__ flags_out,
                                                  float* __restrict__ final_obs,
                                                  unsigned long long* __restrict__ episodes_done, long long i,
                                                  const RolloutConfig& cfg, const CartPoleParams& p,
                                                  ChooseAction choose_action) {
    int32_t el = elapsed[i];
    uint32_t ep = episode[i];
    float* row = state + i * 4 * (long long)cfg.state_factor;
    float* const final_row = final_obs ? final_obs + i * 4 : nullptr;  // written on the last step only
    unsigned int done = 0;
    int flags = 0;
    float r[4] = {row[0], row[1], row[2], row[3]};  // in registers for all K steps
    cp_carry_device(row, cfg.state_factor, cp_carry_mask(cfg.num_steps));
    for (int k = 0; k < cfg.num_steps; ++k) {
        flags = cp_env_step(r, 1, choose_action(r, ep, el), el, ep, (uint32_t)i,
                            k + 1 == cfg.num_steps ? final_row : nullptr, cfg, p);
        done += flags != 0;
    }
    row[0] = r[0];
    row[1] = r[1];
    row[2] = r[2];
    row[3] = r[3];
    elapsed[i] = el;
    episode[i] = ep;
    flags_out[i] = (uint8_t)flags;
    cp_count_episodes(episodes_done, done);
}
