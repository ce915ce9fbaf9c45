// Where the chain's in-kernel collection writes its trajectory, and the normalization its policy
// sees: the second argument of chain_collect (chain_cpu.cpp, `const ChainTrajectoryArgs*` through
// ctypes) and of the chain_episodes_mlp_<n> kernels (chain_kernel.cu, by value beside ChainArgs;
// its arrays null there: nothing recorded).
// Kept apart from ChainArgs so that struct, shared by every entry point, stays as it is. Its Python
// twin is studylib.sims.chain.native.ChainTrajectoryArgs; the tests compare the layouts through
// chain_trajectory_layout() (chain_cpu.cpp) and the kernel's PTX parameter size.
//
// T = ChainArgs.num_steps steps of n environments under the Gaussian MLP policy, step-major:
// element (t, i) of a (T, n) array is at t * n + i, of a (T, n, 3N+3) array at (t * n + i) * (3N+3).
//   obs        the raw observation before the step (the policy saw it normalized, below)
//   actions    the sample mean + σ z, unclipped (the actuator gets it clipped to [-1, 1])
//   logp       log N(sample; mean, σ²) = −z²/2 − log σ − log(2π)/2 (studylib.train.chain.gaussian)
//   reward     the step's reward
//   flags      bit 0 terminated, bit 1 truncated
//   final_obs  the observation after the step's physics, before its same-step reset
// The policy's input is clip((obs − obs_shift) · obs_scale, ±obs_clip), the statistics fixed for
// the call (obs_shift null: the raw observation). Every array is written in full by every call.
#pragma once
#include "chain_args.h"

struct ChainTrajectoryArgs {
    float* obs;              // (T, n, 3N+3)
    float* actions;          // (T, n)
    float* logp;             // (T, n)
    float* reward;           // (T, n)
    uint8_t* flags;          // (T, n)
    float* final_obs;        // (T, n, 3N+3)
    const float* obs_shift;  // (3N+3,) the running mean, or null (no normalization)
    const float* obs_scale;  // (3N+3,) 1 / sqrt(var + eps), with obs_shift
    float obs_clip;          // the normalized observation's clip (with obs_shift)
    float log_std;           // log σ: ChainArgs.action_std is exp of it
};

static_assert(sizeof(ChainTrajectoryArgs) == 8 * 8 + 2 * 4, "ChainTrajectoryArgs must have no padding");

#define CH_HALF_LOG_2PI 0.9189385f  // log(2π) / 2 rounded to float32 (gaussian.HALF_LOG_2PI)

// The policy's input j from the raw observation o (the trainer's running_norm, float32 ops in the
// same order: (o − shift) · scale, then the clip).
CP_HD float ch_normalized(float o, const ChainTrajectoryArgs& t, int j) {
    return t.obs_shift ? fminf(fmaxf((o - t.obs_shift[j]) * t.obs_scale[j], -t.obs_clip), t.obs_clip) : o;
}

// log N(mean + σ z; mean, σ²) for the standard normal z the sample was drawn with.
CP_HD float ch_gaussian_logp(float z, float log_std) { return -0.5f * (z * z) - log_std - CH_HALF_LOG_2PI; }

// The collection's check: the episodes' (ch_check_episode_args) under the MLP policy, and every
// trajectory array (the normalization's two arrays both given or both null).
CP_HD int ch_check_collect_args(const ChainArgs& a, const ChainTrajectoryArgs& t) {
    if (a.policy != CH_POLICY_MLP) return CH_ERR_POLICY;
    const int check = ch_check_episode_args(a);
    if (check != CH_OK) return check;
    if (a.n > 0 && a.num_steps > 0 &&
        (!t.obs || !t.actions || !t.logp || !t.reward || !t.flags || !t.final_obs || !t.obs_shift != !t.obs_scale))
        return CH_ERR_NULL;
    return CH_OK;
}
