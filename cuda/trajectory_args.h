// Where an in-kernel collection writes its trajectory: the second argument of fused_collect
// (fused_cpu.cpp takes `const TrajectoryArgs*` through ctypes, fused_kernel.cu takes it by value
// beside RolloutArgs). Kept apart from RolloutArgs so that struct, shared by every entry point,
// stays as it is. Its Python twin is studylib.native.TrajectoryArgs; tests compare the layouts
// through trajectory_args_layout() (fused_cpu.cpp) and the kernel's PTX parameter size.
//
// T = RolloutArgs.num_steps steps of n environments, step-major: element (t, i) of a (T, n)
// array is at t * n + i, of a (T, n, 4) array at (t * n + i) * 4. Step t of environment i:
//   obs        the CartPole before the step (what the policy saw)
//   actions    the action sampled from softmax(logits) (mlp_sample, mlp.cuh)
//   logp       log pi(action | obs): the log-probability of that action under the same logits
//   flags      bit 0 terminated, bit 1 truncated (the step's cp_env_finish)
//   final_obs  the CartPole after the step's physics, before its same-step reset: the terminal
//              observation where the episode ended, the next obs (t + 1) elsewhere
// Every array is written in full by every call (nothing is left from an earlier call).
#pragma once
#include "cartpole.cuh"  // the fixed-width integer types

struct TrajectoryArgs {
    float* obs;        // (T, n, 4)
    int32_t* actions;  // (T, n) 0 or 1
    float* logp;       // (T, n)
    uint8_t* flags;    // (T, n)
    float* final_obs;  // (T, n, 4)
};

static_assert(sizeof(TrajectoryArgs) == 5 * 8, "TrajectoryArgs must have no padding");
