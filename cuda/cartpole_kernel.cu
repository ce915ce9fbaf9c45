// CUDA kernel: K CartPole steps per launch, one thread per environment.
//
// The dynamics come from cartpole.cuh, the same header the CPU build (cartpole_cpu.cpp) compiles,
// so the CPU build runs this kernel's logic on machines without a GPU. With S == 1 a thread keeps
// its 4 floats in registers for all K steps and touches global memory once at each end: that is
// the paper's simulator kernel fusion (section 4). With S > 1 the row stays in global memory
// (cached in L1/L2 between steps): 4*S floats are too many registers.
// Launched through CuPy (studylib/cuda_env.py); compiled here with `nvcc -ptx` to check it.
#include "cartpole.cuh"

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
    int32_t el = elapsed[i];
    uint32_t ep = episode[i];
    float* row = state + i * 4 * (long long)state_factor;
    unsigned int done = 0;
    int flags = 0;
    if (state_factor == 1) {
        float r[4] = {row[0], row[1], row[2], row[3]};  // in registers for all K steps
        for (int k = 0; k < num_steps; ++k) {
            const int a = actions ? actions[i] : cp_hash_action(seed, (uint32_t)i, ep, (uint32_t)el);
            flags = cp_env_step(r, 1, a, el, ep, (uint32_t)i, cfg, p);
            done += flags != 0;
        }
        row[0] = r[0];
        row[1] = r[1];
        row[2] = r[2];
        row[3] = r[3];
    } else {
        for (int k = 0; k < num_steps; ++k) {
            const int a = actions ? actions[i] : cp_hash_action(seed, (uint32_t)i, ep, (uint32_t)el);
            flags = cp_env_step(row, 1, a, el, ep, (uint32_t)i, cfg, p);
            done += flags != 0;
        }
    }
    elapsed[i] = el;
    episode[i] = ep;
    flags_out[i] = (uint8_t)flags;
    if (done) atomicAdd(episodes_done, (unsigned long long)done);
}

// Reset every environment to episode 0's draws (the same draws the CPU build makes).
extern "C" __global__ void cartpole_reset(float* __restrict__ state, int32_t* __restrict__ elapsed,
                                          uint32_t* __restrict__ episode, long long n,
                                          int32_t state_factor, uint32_t seed) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const RolloutConfig cfg = {state_factor, 1, 0, seed};
    cp_reset_row(state + i * 4 * (long long)state_factor, 1, (uint32_t)i, 0u, cfg);
    elapsed[i] = 0;
    episode[i] = 0;
}
