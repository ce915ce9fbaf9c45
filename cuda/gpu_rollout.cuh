// The CUDA kernels' shared per-thread loop (cartpole_kernel.cu for `cuda`, fused_kernel.cu for
// `fused`): one thread per environment, K steps per launch, built from cartpole.cuh's cp_env_step.
// With S == 1 a thread keeps its 4 floats in registers for all K steps and touches global memory
// once at each end: the paper's simulator kernel fusion (section 4). With S > 1 the row stays in
// global memory (cached in L1/L2 between steps): 4*S floats are too many registers.
// Device only: included by the .cu files; the CPU form of this loop is cpu_rollout.h.
#pragma once
#include "cartpole.cuh"
#include "rollout_args.h"

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
// int32_t elapsed) -> 0 or 1 picks each step's action from copy 0 of the state. The kernels pass
// RolloutArgs' arrays here one by one: as __restrict__ parameters of this (inlined) function they
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
    if (cfg.state_factor == 1) {
        float r[4] = {row[0], row[1], row[2], row[3]};  // in registers for all K steps
        for (int k = 0; k < cfg.num_steps; ++k) {
            flags = cp_env_step(r, 1, choose_action(r, ep, el), el, ep, (uint32_t)i,
                                k + 1 == cfg.num_steps ? final_row : nullptr, cfg, p);
            done += flags != 0;
        }
        row[0] = r[0];
        row[1] = r[1];
        row[2] = r[2];
        row[3] = r[3];
    } else {
        for (int k = 0; k < cfg.num_steps; ++k) {
            const float obs[4] = {row[0], row[1], row[2], row[3]};
            flags = cp_env_step(row, 1, choose_action(obs, ep, el), el, ep, (uint32_t)i,
                                k + 1 == cfg.num_steps ? final_row : nullptr, cfg, p);
            done += flags != 0;
        }
    }
    elapsed[i] = el;
    episode[i] = ep;
    flags_out[i] = (uint8_t)flags;
    cp_count_episodes(episodes_done, done);
}
