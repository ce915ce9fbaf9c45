// The CPU drivers' shared loop (cartpole_cpu.cpp for `cpp`, fused_cpu.cpp for `fused`): the CPU
// form of a kernel launch over environments, built from cartpole.cuh's pieces.
//
// Environments are split into blocks of CP_CPU_LANES lanes across OpenMP threads (the CPU's
// "thread blocks"). A block's CartPoles are copied into a small interleaved buffer (buf[j * W +
// lane]: lane-contiguous, so one core's SIMD lanes step W environments at once) and their rows'
// carried floats (state factor S > 1, cartpole.cuh) are read and written once in place
// (cp_carry); the CartPoles are stepped K times while the buffer stays in L1 and written back
// once: the CPU form of the paper's kernel fusion. K = 1 per call is the unfused form (one pass
// over all 4*S floats of every row per step). Each step of a block is cp_env_step with its loops
// interchanged (lanes innermost, so they vectorize):
//   1. choose_forces fills force[W] (hashed actions, given actions, or the fused MLP);
//   2. the physics, C sub-steps (cp_physics);
//   3. on the call's last step, the CartPole into final_obs when it is given (before any reset);
//   4. termination/truncation and the counters (cp_env_finish), then the same-step resets of the
//      few lanes whose episode ended (cp_reset_cartpole).
// Host only: included by the *_cpu.cpp files, never by nvcc.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>


#include "cartpole.cuh"
#include "rollout_args.h"

constexpr int CP_CPU_LANES = 16;  // lanes per block: one AVX-512 or two AVX2 vectors of floats
// Below this many environment-steps per call one thread runs it: waking the OpenMP team costs
// microseconds, more than the whole call at small N (N = 1 to 64, where CPU training steps).
constexpr long long CP_CPU_PARALLEL_MIN_WORK = 8192;

// What a rollout records of each step besides its last step's final_obs and flags: nothing. The
// empty call compiles away, so cpp's and fused's rollouts run the loop as it was measured.
struct CpNoRecord {
    inline void operator()(int, const float*, long long, int, const int*) const {}
};

// Steps every environment args.num_steps times; returns the number of episodes that ended
// (args.episodes_done is not used here). choose_forces(const float* buf, long long first,
// const int32_t* el, const uint32_t* ep, float* force, int k) is called once per step k of a
// block, before the physics; record(int k, const float* buf, long long first, int lanes,
// const int* flags) after termination is known and before the same-step resets (buf still holds
// the step's end state): fused_collect writes its trajectory there.
// W: lanes per block (CP_CPU_LANES; 1 runs each environment alone, no idle lanes, for N = 1).
template <int W = CP_CPU_LANES, class ChooseForces, class Record = CpNoRecord>
long long cp_cpu_rollout(const RolloutArgs& args, ChooseForces choose_forces, Record record = Record{}) {
    float* const state = args.state;
    int32_t* const elapsed = args.elapsed;
    uint32_t* const episode = args.episode;
    uint8_t* const flags_out = args.flags_out;
    float* const final_obs = args.final_obs;
    const long long n = args.n;
    const CartPoleParams params = cp_args_params(args);
    const RolloutConfig config = cp_args_config(args);
    const int64_t row_len = 4 * (int64_t)config.state_factor;
    const uint32_t carry_mask = cp_carry_mask(config.num_steps);
    const long long num_blocks = (n + W - 1) / W;
    long long episodes_done = 0;
    // Work: the steps, and the state factor's carried floats passed over once (as many float4s).
    const long long work = n * ((long long)config.num_steps + config.state_factor - 1);
#pragma omp parallel reduction(+ : episodes_done) if (work >= CP_CPU_PARALLEL_MIN_WORK)
    {
        // Thread-local copies: with the shared originals GCC cannot prove that stores into the
        // buffer leave them unchanged, reloads them in the lane loops and does not vectorize.
        const CartPoleParams p = params;
        const RolloutConfig cfg = config;
        const float dt = cp_substep_dt(cfg, p);
        alignas(64) float buf[4 * W];
#pragma omp for schedule(static)
        for (long long b = 0; b < num_blocks; ++b) {
            const long long first = b * W;
            const int lanes = (int)(n - first < W ? n - first : W);
            int32_t el[W] = {0};
            uint32_t ep[W] = {0};
            int fl[W] = {0};
            float force[W];
            // Lanes past n (the last block only) start from zeros and are stepped and reset like
            // the others, so they stay finite; they are never written back or counted.
            memset(buf, 0, sizeof buf);
            for (int l = 0; l < lanes; ++l) {
                float* row = state + (first + l) * row_len;
                for (int j = 0; j < 4; ++j) buf[j * W + l] = row[j];
                cp_carry(row, cfg.state_factor, carry_mask);  // the carried floats: one pass per call
                el[l] = elapsed[first + l];
                ep[l] = episode[first + l];
            }
            float* bp = buf;
            for (int k = 0; k < cfg.num_steps; ++k) {
                choose_forces(bp, first, el, ep, force, k);  // 1.
                for (int sub = 0; sub < cfg.compute_factor; ++sub) {  // 2. cp_cartpole_step, lanes innermost
#pragma omp simd
                    for (int l = 0; l < W; ++l)
                        cp_physics(bp[l], bp[W + l], bp[2 * W + l], bp[3 * W + l], force[l], dt, p);
                }
                if (final_obs && k + 1 == cfg.num_steps) {  // 3.
                    for (int l = 0; l < lanes; ++l)
                        for (int j = 0; j < 4; ++j) final_obs[(first + l) * 4 + j] = bp[j * W + l];
                }
#pragma omp simd
                for (int l = 0; l < W; ++l) fl[l] = cp_env_finish(bp[l], bp[2 * W + l], el[l], ep[l], p);
                record(k, bp, first, lanes, fl);
                for (int l = 0; l < W; ++l) {  // 4. same-step resets of the lanes whose episode ended
                    if (fl[l]) {
                        cp_reset_cartpole(bp + l, W, (uint32_t)(first + l), ep[l], cfg.seed);
                        episodes_done += l < lanes;
                    }
                }
            }
            for (int l = 0; l < lanes; ++l) {
                float* row = state + (first + l) * row_len;
                for (int j = 0; j < 4; ++j) row[j] = buf[j * W + l];
                elapsed[first + l] = el[l];
                episode[first + l] = ep[l];
                flags_out[first + l] = (uint8_t)fl[l];
            }
        }
    }
    return episodes_done;
}

// Reset every environment to episode 0's draws (the same draws the CUDA kernels make).
inline void cp_cpu_reset(const RolloutArgs& args) {
#pragma omp parallel for schedule(static) if (args.n >= CP_CPU_PARALLEL_MIN_WORK)
    for (long long i = 0; i < args.n; ++i) cp_args_reset_env(args, i);
}

// Start the next episode of the environments whose args.reset_mask is set (cp_args_restart_env).
inline void cp_cpu_restart(const RolloutArgs& args) {
#pragma omp parallel for schedule(static) if (args.n >= CP_CPU_PARALLEL_MIN_WORK)
    for (long long i = 0; i < args.n; ++i) cp_args_restart_env(args, i);
}

// The layout of RolloutArgs as this compiler sees it: sizeof, then the offset of each field in
// declaration order, into out[0 .. capacity); returns how many values there are (the caller sees
// a field it lacks as a longer list). studylib.native checks its ctypes twin against it.
// Defined here, once per library: each *_cpu.cpp is one library.
extern "C" int rollout_args_layout(long long* out, int capacity) {
    const long long layout[] = {
        (long long)sizeof(RolloutArgs),
        (long long)offsetof(RolloutArgs, state), (long long)offsetof(RolloutArgs, elapsed),
        (long long)offsetof(RolloutArgs, episode), (long long)offsetof(RolloutArgs, actions),
        (long long)offsetof(RolloutArgs, flags_out), (long long)offsetof(RolloutArgs, final_obs),
        (long long)offsetof(RolloutArgs, params), (long long)offsetof(RolloutArgs, weights),
        (long long)offsetof(RolloutArgs, episodes_done), (long long)offsetof(RolloutArgs, reset_mask),
        (long long)offsetof(RolloutArgs, n),
        (long long)offsetof(RolloutArgs, max_episode_steps), (long long)offsetof(RolloutArgs, state_factor),
        (long long)offsetof(RolloutArgs, compute_factor), (long long)offsetof(RolloutArgs, num_steps),
        (long long)offsetof(RolloutArgs, seed), (long long)offsetof(RolloutArgs, policy),
    };
    const int count = (int)(sizeof layout / sizeof layout[0]);
    for (int i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}
