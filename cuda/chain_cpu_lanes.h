// The chain's block loops of one build N (cuda/chain.cuh's pieces on W SIMD lanes), included by
// chain_cpu.cpp, which instantiates them for every n and exposes them as the library's entry
// points: the physics only (chain_rollout_lanes, the scalar chain_physics_step_scalar for the
// tests) and the episodes (chain_episode_lanes: the controls, frame_skip mj_steps, termination,
// reward and same-step resets of a block, K steps in L1; the MLP policy fused on the block's
// lanes). Host only: never compiled by nvcc.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "chain.cuh"
#include "chain_args.h"
#include "chain_trajectory.h"
#include "mlp.cuh"
// Lanes per block: one vector register of floats, 16 on AVX-512 (a zmm), 8 elsewhere (a ymm). With
// 16 lanes on AVX2 every value took two ymm: the fused MLP spilled registers and the library took
// longer to compile. The lanes are independent environments: the width changes no result.
#ifdef __AVX512F__
constexpr int CH_CPU_LANES = 16;
#else
constexpr int CH_CPU_LANES = 8;
#endif
// Below this many environment-steps one thread runs the call (waking the team costs microseconds).
constexpr long long CH_CPU_PARALLEL_MIN_WORK = 256;

// The block's W environments as one GCC vector (one register): the lane type
// of mlp.cuh's forward pass, with the splat and clamp it asks of its lane types.
typedef float ChVec __attribute__((vector_size(CH_CPU_LANES * sizeof(float))));

template <>
struct MlpLane<ChVec> {
    static inline ChVec splat(float v) { return ChVec{} + v; }
    static inline ChVec clamp(ChVec x, float lo, float hi) {
        const ChVec vlo = ChVec{} + lo, vhi = ChVec{} + hi;
        const ChVec c = x < vlo ? vlo : x;
        return c > vhi ? vhi : c;
    }
};

// The physics' elementwise functions on a block's lanes (cuda/chain.cuh's ChMath): each lane's
// scalar function in a loop GCC vectorizes (ch_sincos is straight-line float code).
template <>
struct ChMath<ChVec> {
    static inline void sincos(ChVec x, ChVec& s, ChVec& c) {
        alignas(64) float xs[CH_CPU_LANES], ss[CH_CPU_LANES], cs[CH_CPU_LANES];
        memcpy(xs, &x, sizeof x);
#pragma omp simd
        for (int l = 0; l < CH_CPU_LANES; ++l) ch_sincos(xs[l], ss[l], cs[l]);
        memcpy(&s, ss, sizeof s);
        memcpy(&c, cs, sizeof c);
    }
    static inline ChVec inv_sqrt(ChVec s) {
        alignas(64) float v[CH_CPU_LANES];
        memcpy(v, &s, sizeof s);
#pragma omp simd
        for (int l = 0; l < CH_CPU_LANES; ++l) v[l] = ChMath<float>::inv_sqrt(v[l]);
        memcpy(&s, v, sizeof s);
        return s;
    }
};

// One mj_step of a block's W lanes (buf[j * W + l], W = CH_CPU_LANES): ch_mj_step with the lanes as
// the value type. The run-time-n build steps its lanes so because GCC does not vectorize a lane loop
// around loops of run-time length (it ran ch_mj_step lane by lane, about 16 times slower); the
// unrolled builds keep the lane loop, which GCC vectorizes whole.
template <int N>
CH_HD void ch_mj_step_block(float* buf, const float* force, const ChainParams<N>& p, float* seen) {
    const int n1 = p.n() + 1;
    ChVec* rows = (ChVec*)buf;  // row j of the block, its W lanes: one vector (buf is 64-byte aligned)
    ChRow<N, ChVec> qpos, qvel, q;
    for (int i = 0; i < n1; ++i) {
        qpos[i] = rows[i];
        qvel[i] = rows[n1 + i];
    }
    ChVec f;
    memcpy(&f, force, sizeof f);
    ch_rk4_step<N, ChVec>(qpos, qvel, f, p, q);
    for (int i = 0; i < n1; ++i) {
        rows[i] = qpos[i];
        rows[n1 + i] = qvel[i];
    }
    if (seen)
        for (int i = 0; i < n1; ++i) ((ChVec*)seen)[i] = q[i];
}

// frame_skip mj_steps of a block (its W lanes under their forces), `seen` as ch_mj_step's.
template <int N, int W>
CH_HD void ch_frame_skip_block(float* buf, const float* force, const ChainParams<N>& p, float* seen) {
    for (int sub = 0; sub < p.frame_skip; ++sub) {
        if constexpr (N == CH_GENERIC && W == CH_CPU_LANES) {
            ch_mj_step_block<N>(buf, force, p, seen);
        } else {
#pragma omp simd
            for (int l = 0; l < W; ++l) ch_mj_step<N>(buf + l, W, force[l], p, seen ? seen + l : nullptr);
        }
    }
}

// ---- physics only ----

// K environment steps of every environment, W lanes per block; the lane loop is one `omp simd`
// over ch_mj_step (frame_skip times a step), every array of the header a per-lane private array of fixed size.
template <int N, int W>
static void chain_rollout_lanes(const ChainArgs& args) {
    constexpr int CAP_ROW = 2 * (CH_CAP(N) + 1);
    const ChainParams<N> params = ch_params_from_array<N>(args.params);
    const int row = 2 * (params.n() + 1);
    const long long n = args.n;
    const long long num_blocks = (n + W - 1) / W;
    const long long work = n * (long long)args.num_steps * (params.n() + 1);
#pragma omp parallel if (work >= CH_CPU_PARALLEL_MIN_WORK)
    {
        const ChainParams<N> p = params;  // thread-local: the lane loop need not reload it
        const ChainArgs a = args;
        alignas(64) float buf[CAP_ROW * W];
        alignas(64) float force[W];
#pragma omp for schedule(static)
        for (long long b = 0; b < num_blocks; ++b) {
            const long long first = b * W;
            const int lanes = (int)(n - first < W ? n - first : W);
            memset(buf, 0, sizeof buf);  // lanes past n: a chain at rest, stepped, never written back
            for (int l = 0; l < lanes; ++l)
                for (int j = 0; j < row; ++j) buf[j * W + l] = a.state[(first + l) * row + j];
            for (int k = 0; k < a.num_steps; ++k) {  // ch_physics_step with its loops interchanged
                for (int l = 0; l < W; ++l)
                    force[l] = ch_actuator_force<N>(l < lanes ? ch_args_ctrl(a, first + l, k) : 0.0f, p);
                ch_frame_skip_block<N, W>(buf, force, p, nullptr);
            }
            for (int l = 0; l < lanes; ++l)
                for (int j = 0; j < row; ++j) a.state[(first + l) * row + j] = buf[j * W + l];
        }
    }
}

// One environment at a time, no blocks and no SIMD: `mj_steps` mj_steps (dynamics.physics_step(steps=mj_steps))
// of each environment with its control ctrl[env] (or the hashed control of step first_step); the
// tests' scalar reference for the block loop.
template <int N>
static void chain_physics_step_scalar(const ChainArgs& a, int mj_steps) {
    const ChainParams<N> p = ch_params_from_array<N>(a.params);
    const int row = 2 * (p.n() + 1);
    const long long work = a.n * (long long)mj_steps * (p.n() + 1);
#pragma omp parallel for schedule(static) if (work >= 5 * CH_CPU_PARALLEL_MIN_WORK)
    for (long long i = 0; i < a.n; ++i) ch_physics_step<N>(a.state + i * row, 1, ch_args_ctrl(a, i, 0), p, mj_steps);
}

// ---- episodes ----

// The Gaussian policy's mean for a block's W observations (obs[i] the W lanes' input i, `in` of
// them): mlp.cuh's forward pass on the lane vector, in -> 64 -> 64 -> 1. One instantiation for
// every n (the input width a run-time value): layer 1 is 64 in of the MLP's 64 (in + 65) + 65
// multiply-adds, the 64 x 64 layer 2 is the rest, the same at every n.
__attribute__((noinline)) static ChVec ch_mlp_mean(const ChVec* obs, int in, const float* __restrict__ w) {
    ChVec mean;
    mlp_forward_sized<0, 1, 8, ChVec>(obs, in, w, &mean);
    return mean;
}

// The policy's actions for the W lanes of a block (its state in buf, counters el/ep):
// clip(mean + action_std z, -1, 1), z = policy_noise(seed, env, episode, elapsed). With a
// trajectory `tr` (chain_collect), the policy sees the normalized observation, and the first
// `lanes` lanes' raw observations, samples and log-probabilities go to rows traj_row + l.
template <int N, int W>
static void ch_mlp_block(const float* buf, const ChainParams<N>& p, const ChainArgs& a, long long first,
                         const int32_t* el, const uint32_t* ep, float* action,
                         const ChainTrajectoryArgs* tr = nullptr, long long traj_row = 0, int lanes = 0) {
    static_assert(W == CH_CPU_LANES, "the MLP's lane vector is one block");
    constexpr int CAP_OBS = CH_OBS_SIZE(CH_CAP(N));
    const int in = CH_OBS_SIZE(p.n());
    alignas(64) ChVec obs[CAP_OBS];
#pragma omp simd
    for (int l = 0; l < W; ++l) ch_observation<N>(buf + l, W, p, (float*)obs + l, W);
    if (tr) {
        const float* raw = (const float*)obs;
        for (int l = 0; l < lanes; ++l)
            for (int j = 0; j < in; ++j) tr->obs[(traj_row + l) * in + j] = raw[j * W + l];
        if (tr->obs_shift) {  // ch_normalized on the lane vector
            for (int j = 0; j < in; ++j)
                obs[j] = MlpLane<ChVec>::clamp((obs[j] - tr->obs_shift[j]) * tr->obs_scale[j], -tr->obs_clip,
                                               tr->obs_clip);
        }
    }
    const ChVec mean = ch_mlp_mean(obs, in, a.weights);
    const float sd = a.action_std;
    alignas(64) float sample[W], logp[W];
    const float log_std = tr ? tr->log_std : 0.0f;
#pragma omp simd  // the noise's logf and sqrtf as vector calls (libmvec), not W scalar ones
    for (int l = 0; l < W; ++l) {
        const float z = ch_policy_noise(a.seed, (uint32_t)(first + l), ep[l], (uint32_t)el[l]);
        sample[l] = mean[l] + sd * z;
        logp[l] = ch_gaussian_logp(z, log_std);
        action[l] = fminf(fmaxf(sample[l], -1.0f), 1.0f);
    }
    if (tr) {
        for (int l = 0; l < lanes; ++l) {
            tr->actions[traj_row + l] = sample[l];
            tr->logp[traj_row + l] = logp[l];
        }
    }
}

// episode.advance, K times, for every environment: the block loop of cpu_rollout.h with the
// chain's pieces, lanes innermost (ch_env_step with its loops interchanged):
//   1. the controls of the step (the caller's, hashed, or the MLP's on the block's state);
//   2. frame_skip mj_steps, the last one also giving the last RK4 stage's tip;
//   3. on the call's last step, the observation into final_obs when asked (before any reset);
//   4. termination, reward and the counters (ch_env_finish), then the same-step resets of the
//      lanes whose episode ended (ch_reset_row of the next episode).
// With a trajectory `tr` (chain_collect, the MLP policy), every step's observation, sample,
// log-probability, pre-reset observation, reward and flags are written to it as well.
// Returns the number of episodes that ended.
template <int N, int W>
static long long chain_episode_lanes(const ChainArgs& args, const ChainTrajectoryArgs* tr = nullptr) {
    constexpr int CAP_ROW = 2 * (CH_CAP(N) + 1);
    const ChainParams<N> params = ch_params_from_array<N>(args.params);
    const int row = 2 * (params.n() + 1), obs_size = CH_OBS_SIZE(params.n());
    const long long n = args.n;
    const long long num_blocks = (n + W - 1) / W;
    const long long work = n * (long long)args.num_steps * (params.n() + 1);
    long long episodes_done = 0;
#pragma omp parallel reduction(+ : episodes_done) if (work >= CH_CPU_PARALLEL_MIN_WORK)
    {
        const ChainParams<N> p = params;
        const ChainArgs a = args;
        alignas(64) float buf[CAP_ROW * W];
        alignas(64) float seen[(CH_CAP(N) + 1) * W];  // the last RK4 stage's qpos, lanes interleaved
        alignas(64) float ctrl[W], force[W], tip_x[W], tip_y[W], reward[W];
        int32_t el[W];
        uint32_t ep[W];
        int fl[W];
#pragma omp for schedule(static)
        for (long long b = 0; b < num_blocks; ++b) {
            const long long first = b * W;
            const int lanes = (int)(n - first < W ? n - first : W);
            // Lanes past n (the last block only) start at rest, upright, and are stepped and reset
            // like the others; they are never written back or counted.
            memset(buf, 0, sizeof buf);
            memset(seen, 0, sizeof seen);
            for (int l = 0; l < W; ++l) {
                el[l] = l < lanes ? a.elapsed[first + l] : 0;
                ep[l] = l < lanes ? a.episode[first + l] : 0;
                fl[l] = 0;
                reward[l] = 0.0f;
            }
            for (int l = 0; l < lanes; ++l)
                for (int j = 0; j < row; ++j) buf[j * W + l] = a.state[(first + l) * row + j];
            for (int k = 0; k < a.num_steps; ++k) {
                const long long traj_row = (long long)k * n + first;  // lane 0's row of step k
                if (a.policy == CH_POLICY_MLP) {  // 1.
                    ch_mlp_block<N, W>(buf, p, a, first, el, ep, ctrl, tr, traj_row, lanes);
                } else if (a.policy == CH_POLICY_HASH) {
#pragma omp simd
                    for (int l = 0; l < W; ++l) ctrl[l] = ch_hash_ctrl(a.seed, (uint32_t)(first + l), ep[l], (uint32_t)el[l]);
                } else {
                    for (int l = 0; l < W; ++l) ctrl[l] = l < lanes ? a.ctrl[(long long)k * n + first + l] : 0.0f;
                }
                for (int l = 0; l < W; ++l) force[l] = ch_actuator_force<N>(ctrl[l], p);
                ch_frame_skip_block<N, W>(buf, force, p, seen);  // 2.
#pragma omp simd
                for (int l = 0; l < W; ++l) {
                    ChRow<N> q;
                    ch_for<N>(0, p.n() + 1, [&](int i) CH_LAMBDA { q[i] = seen[i * W + l]; });
                    ch_tip<N>(q, p, tip_x[l], tip_y[l]);
                }
                if (a.final_obs && k + 1 == a.num_steps) {  // 3.
                    for (int l = 0; l < lanes; ++l)
                        ch_observation<N>(buf + l, W, p, a.final_obs + (first + l) * obs_size, 1);
                }
                if (tr) {
                    for (int l = 0; l < lanes; ++l)
                        ch_observation<N>(buf + l, W, p, tr->final_obs + (traj_row + l) * obs_size, 1);
                }
#pragma omp simd
                for (int l = 0; l < W; ++l)  // 4.
                    fl[l] = ch_env_finish<N>(buf + l, W, tip_x[l], tip_y[l], el[l], ep[l], p, reward[l]);
                if (tr) {
                    for (int l = 0; l < lanes; ++l) {
                        tr->reward[traj_row + l] = reward[l];
                        tr->flags[traj_row + l] = (uint8_t)fl[l];
                    }
                }
                for (int l = 0; l < W; ++l) {
                    if (fl[l]) {
                        ch_reset_row<N>(buf + l, W, a.seed, (uint32_t)(first + l), ep[l], p);
                        episodes_done += l < lanes;
                    }
                }
            }
            for (int l = 0; l < lanes; ++l) {
                for (int j = 0; j < row; ++j) a.state[(first + l) * row + j] = buf[j * W + l];
                a.elapsed[first + l] = el[l];
                a.episode[first + l] = ep[l];
                if (a.num_steps > 0) {
                    a.flags_out[first + l] = (uint8_t)fl[l];
                    a.reward_out[first + l] = reward[l];
                }
            }
        }
    }
    return episodes_done;
}

// The policy's actions at the current states and counters into obs_out (n,): chain_episode_lanes'
// own block function (ch_mlp_block), without a step.
template <int N, int W>
static void chain_mlp_actions_lanes(const ChainArgs& a) {
    constexpr int CAP_ROW = 2 * (CH_CAP(N) + 1);
    const ChainParams<N> p = ch_params_from_array<N>(a.params);
    const int row = 2 * (p.n() + 1);
    const long long num_blocks = (a.n + W - 1) / W;
#pragma omp parallel for schedule(static)
    for (long long b = 0; b < num_blocks; ++b) {
        const long long first = b * W;
        const int lanes = (int)(a.n - first < W ? a.n - first : W);
        alignas(64) float buf[CAP_ROW * W] = {0};
        alignas(64) float action[W];
        int32_t el[W] = {0};
        uint32_t ep[W] = {0};
        for (int l = 0; l < lanes; ++l) {
            for (int j = 0; j < row; ++j) buf[j * W + l] = a.state[(first + l) * row + j];
            el[l] = a.elapsed[first + l];
            ep[l] = a.episode[first + l];
        }
        ch_mlp_block<N, W>(buf, p, a, first, el, ep, action);
        for (int l = 0; l < lanes; ++l) a.obs_out[first + l] = action[l];
    }
}

// Episode 0's first state of every environment, counters zero (reset: the draws of every build).
template <int N>
static void chain_reset_envs(const ChainArgs& a) {
    const ChainParams<N> p = ch_params_from_array<N>(a.params);
    const int row = 2 * (p.n() + 1);
#pragma omp parallel for schedule(static) if (a.n >= 4096)
    for (long long i = 0; i < a.n; ++i) {
        ch_reset_row<N>(a.state + i * row, 1, a.seed, (uint32_t)i, 0u, p);
        a.elapsed[i] = 0;
        a.episode[i] = 0;
    }
}

// The next episode of the environments in reset_mask: its first state, elapsed 0, episode + 1,
// and (final_obs given) its first observation into final_obs.
template <int N>
static void chain_restart_envs(const ChainArgs& a) {
    const ChainParams<N> p = ch_params_from_array<N>(a.params);
    const int row = 2 * (p.n() + 1), obs_size = CH_OBS_SIZE(p.n());
#pragma omp parallel for schedule(static) if (a.n >= 4096)
    for (long long i = 0; i < a.n; ++i) {
        if (!a.reset_mask[i]) continue;
        a.episode[i] = a.episode[i] + 1u;
        a.elapsed[i] = 0;
        ch_reset_row<N>(a.state + i * row, 1, a.seed, (uint32_t)i, a.episode[i], p);
        if (a.final_obs) ch_observation<N>(a.state + i * row, 1, p, a.final_obs + i * obs_size, 1);
    }
}

// The observation of every environment's current state into obs_out (n, 3n+3).
template <int N>
static void chain_observe_envs(const ChainArgs& a) {
    const ChainParams<N> p = ch_params_from_array<N>(a.params);
    const int row = 2 * (p.n() + 1), obs_size = CH_OBS_SIZE(p.n());
#pragma omp parallel for schedule(static) if (a.n >= 4096)
    for (long long i = 0; i < a.n; ++i) ch_observation<N>(a.state + i * row, 1, p, a.obs_out + i * obs_size, 1);
}
