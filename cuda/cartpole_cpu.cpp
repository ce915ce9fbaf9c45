// CPU build of the CUDA kernel's logic (`cpp`): the same cartpole.cuh, compiled by the host
// compiler, driven by the block loop of cpu_rollout.h (OpenMP threads across blocks of
// environments, SIMD lanes within a block, K steps per call with the block in cache).
// Built automatically by studylib/native/build.py; called through ctypes by studylib/native/backends.py.
#include <stdint.h>

#include "cartpole.cuh"
#include "cpu_rollout.h"
#include "rollout_args.h"

// The rollout with W lanes per block (cp_cpu_rollout).
template <int W>
static long long cartpole_rollout_lanes(const RolloutArgs* a) {
    const CartPoleParams p = cp_args_params(*a);
    const int32_t* const actions = a->policy == CP_POLICY_ACTIONS ? a->actions : nullptr;
    const uint32_t seed = a->seed;
    const long long n = a->n;
    return cp_cpu_rollout<W>(*a, [&](const float*, long long first, const int32_t* el, const uint32_t* ep, float* force, int) {
        if (actions) {
            for (int l = 0; l < W; ++l)  // lanes past n push left; never written back
                force[l] = cp_force(first + l < n ? actions[first + l] : 0, p);
        } else {
#pragma omp simd
            for (int l = 0; l < W; ++l)
                force[l] = cp_force(cp_hash_action(seed, (uint32_t)(first + l), ep[l], (uint32_t)el[l]), p);
        }
    });
}

extern "C" {

// Steps every environment a->num_steps times; returns the number of episodes that ended.
// a->policy: CP_POLICY_ACTIONS (a->actions (n,) for every step; callers pass num_steps == 1) or
// CP_POLICY_HASH (the no-policy hashed actions). One environment runs in a block of one lane: a
// block of CP_CPU_LANES would step 15 idle lanes with it.
long long cartpole_rollout(const RolloutArgs* a) {
    return a->n == 1 ? cartpole_rollout_lanes<1>(a) : cartpole_rollout_lanes<CP_CPU_LANES>(a);
}

// Resets every environment to episode 0's draws (reads state, elapsed, episode, n, S, seed).
void cartpole_reset(const RolloutArgs* a) { cp_cpu_reset(*a); }

// Starts the next episode of the environments in a->reset_mask (reads state, elapsed, episode,
// reset_mask, n, S, seed).
void cartpole_restart(const RolloutArgs* a) { cp_cpu_restart(*a); }

}  // extern "C"
