// The CUDA kernels' shared per-thread loop (cartpole_kernel.cu for `cuda`, fused_kernel.cu for
// `fused`): one thread per environment, K steps per launch, built from cartpole.cuh's cp_env_step.
// With S == 1 a thread keeps its 4 floats in registers for all K steps and touches global memory
// once at each end: the paper's simulator kernel fusion (section 4). With S > 1 the row stays in
// global memory (cached in L1/L2 between steps): 4*S floats are too many registers.
// Device only: included by the .cu files; the CPU form of this loop is cpu_rollout.h.
#pragma once
#include "cartpole.cuh"
#include "rollout_args.h"

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
    if (done) atomicAdd(episodes_done, (unsigned long long)done);
}

// Reset environment i to episode 0's draws (the same draws the CPU builds make).
__device__ __forceinline__ void cp_thread_reset(const RolloutArgs& a, long long i) {
    const RolloutConfig cfg = cp_args_config(a);
    cp_reset_row(a.state + i * 4 * (long long)cfg.state_factor, 1, (uint32_t)i, 0u, cfg);
    a.elapsed[i] = 0;
    a.episode[i] = 0;
}
