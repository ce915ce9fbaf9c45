// The one argument of every rollout, reset and restart entry point, declared once for all four
// builds: cartpole_cpu.cpp and fused_cpu.cpp take `const RolloutArgs*` (ctypes),
// cartpole_kernel.cu and fused_kernel.cu take it by value (CuPy passes a size-one numpy array as
// the kernel parameter's bytes). Its Python twin is studylib.native.RolloutArgs (a
// ctypes.Structure); tests compare the two layouts through rollout_args_layout() (cpu_rollout.h)
// and the kernels' PTX parameter size.
//
// Field order: the 8-byte fields first, then the 4-byte ones, so no padding anywhere; the
// static_assert below checks that on every compiler that includes this header (g++, nvcc, NVRTC).
#pragma once
#include "cartpole.cuh"  // the fixed-width integer types, CartPoleParams, RolloutConfig

// Where a step's actions come from (the `policy` field).
#define CP_POLICY_ACTIONS 0  // the caller's `actions` (n,), for every step (callers pass num_steps == 1)
#define CP_POLICY_MLP 1      // the fused MLP on the CartPole (observation), every step (fused builds only)
#define CP_POLICY_HASH 2     // the counter-hash actions of cartpole.cuh ("none")

struct RolloutArgs {
    float* state;                        // (n, 4*S) row-major: the CartPole, then 4*(S-1) carried floats
    int32_t* elapsed;                    // (n,) steps into the current episode
    uint32_t* episode;                   // (n,) episodes started, keys the reset draws
    const int32_t* actions;              // (n,) for CP_POLICY_ACTIONS, else unused (may be null)
    uint8_t* flags_out;                  // (n,) bit 0 terminated, bit 1 truncated, of the last step
    float* final_obs;                    // (n, 4) or null: the CartPole at the end of the last step, before its reset
    const float* params;                 // CP_NUM_PARAM_FLOATS (studylib.native.params_array)
    const float* weights;                // MLP_NUM_PARAMS (fused builds; null for cartpole)
    unsigned long long* episodes_done;   // (1,) += episodes finished (kernels; the CPU builds return it)
    const uint8_t* reset_mask;           // (n,) 0/1 (a bool array) for the *_restart entry points
    long long n;                         // environments
    int32_t max_episode_steps;
    int32_t state_factor;                // S: state row of 4*S floats (cartpole.cuh)
    int32_t compute_factor;              // C: Euler sub-steps of tau/C per step
    int32_t num_steps;                   // K: steps fused into this call
    uint32_t seed;                       // seeds the reset draws and the hashed actions
    int32_t policy;                      // CP_POLICY_*
};

static_assert(sizeof(RolloutArgs) == 10 * 8 + 8 + 6 * 4, "RolloutArgs must have no padding");

CP_HD CartPoleParams cp_args_params(const RolloutArgs& a) {
    return cp_params_from_array(a.params, a.max_episode_steps);
}

CP_HD RolloutConfig cp_args_config(const RolloutArgs& a) {
    return RolloutConfig{a.state_factor, a.compute_factor, a.num_steps, a.seed};
}

// Environment i back to episode 0's draws with its counters at 0: every *_reset entry point.
CP_HD void cp_args_reset_env(const RolloutArgs& a, long long i) {
    cp_reset_row(a.state + i * 4 * (int64_t)a.state_factor, (uint32_t)i, 0u, cp_args_config(a));
    a.elapsed[i] = 0;
    a.episode[i] = 0;
}

// Environment i starts its next episode if a.reset_mask[i] is set: every *_restart entry point.
// The episode counter moves on (the new draws are keyed by it, so they differ from every earlier
// episode's), the step counter goes to 0, and the new first observation replaces the last step's
// final observation when a.final_obs is given (the episode that ended there is over). An
// unmasked environment is left as it is, and so are the carried floats of a masked one (as in a
// same-step reset).
CP_HD void cp_args_restart_env(const RolloutArgs& a, long long i) {
    if (!CP_LDG(a.reset_mask + i)) return;
    const uint32_t episode = a.episode[i] + 1u;
    float* row = a.state + i * 4 * (int64_t)a.state_factor;
    cp_reset_cartpole(row, 1, (uint32_t)i, episode, a.seed);
    a.elapsed[i] = 0;
    a.episode[i] = episode;
    if (a.final_obs)
        for (int j = 0; j < 4; ++j) a.final_obs[i * 4 + j] = row[j];
}
