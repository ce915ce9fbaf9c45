// CPU build of the CUDA kernel's logic (`cpp`): the same cartpole.cuh, compiled by the host
// compiler, driven by the block loop of cpu_rollout.h (OpenMP threads across blocks of
// environments, SIMD lanes within a block, K steps per call with the block in cache).
// Built automatically by studylib/native.py.
#include <stdint.h>

#include "cartpole.cuh"
#include "cpu_rollout.h"

extern "C" {

// Steps every environment `num_steps` times; returns the number of episodes that ended.
// `actions` (n,) is used for every step when given (callers pass it with num_steps == 1);
// nullptr means the no-policy hashed actions.
long long cartpole_rollout(float* state, int32_t* elapsed, uint32_t* episode,
                           const int32_t* actions, uint8_t* flags_out, const float* param_floats,
                           int32_t max_episode_steps, long long n, int32_t state_factor,
                           int32_t compute_factor, int32_t num_steps, uint32_t seed) {
    const CartPoleParams p = cp_params_from_array(param_floats, max_episode_steps);
    const RolloutConfig cfg = {state_factor, compute_factor, num_steps, seed};
    constexpr int W = CP_CPU_LANES;
    return cp_cpu_rollout(state, elapsed, episode, flags_out, p, cfg, n,
                          [&](const float*, long long first, const int32_t* el, const uint32_t* ep, float* force) {
                              if (actions) {
                                  for (int l = 0; l < W; ++l)  // lanes past n push left; never written back
                                      force[l] = cp_force(first + l < n ? actions[first + l] : 0, p);
                              } else {
#pragma omp simd
                                  for (int l = 0; l < W; ++l)
                                      force[l] = cp_force(cp_hash_action(seed, (uint32_t)(first + l), ep[l],
                                                                         (uint32_t)el[l]), p);
                              }
                          });
}

void cartpole_reset(float* state, int32_t* elapsed, uint32_t* episode, long long n,
                    int32_t state_factor, uint32_t seed) {
    cp_cpu_reset(state, elapsed, episode, n, state_factor, seed);
}

}  // extern "C"
