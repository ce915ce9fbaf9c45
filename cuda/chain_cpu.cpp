// CPU build of the n-link chain (cuda/chain.cuh): N chains stepped K environment steps per call,
// OpenMP threads across blocks of environments, SIMD lanes within a block (as cpu_rollout.h does
// for CartPole: a block's states interleaved, buf[j * W + lane], stepped K times in L1 and written
// back once). Built by studylib/native/build.py (registered by studylib.sims.chain.native), called
// through ctypes by studylib.sims.chain.native.
//
// Two families of entry points (chain_args.h):
//   * physics only: chain_rollout (K environment steps, the caller's or the hashed controls) and
//     chain_physics_step (mj_steps, one environment at a time: the tests' scalar path);
//   * episodes (episode.py's advance, K steps fused in one call): chain_episodes with the
//     caller's controls (CH_POLICY_CTRL, K = 1 for a step), the hashed ones (CH_POLICY_HASH) or
//     the Gaussian MLP policy fused into the loop (CH_POLICY_MLP: obs (3n+3) -> 64 -> 64 -> 1,
//     tanh, cuda/mlp.cuh's mlp_forward_sized on a lane type of W floats: the block's W
//     environments through the MLP together, the weights broadcast from L1); chain_reset,
//     chain_restart, chain_observe and chain_mlp_actions (the policy's actions at the current
//     state: the fused loop's own block function, for the tests).
// Every n from 1 to CH_MAX_LINKS: the unrolled builds N = 1 .. 8 (CH_FOR_EACH_LINKS), whose lane
// loops GCC vectorizes whole, and the run-time-n build (N = CH_GENERIC) for the rest, whose lane
// loops run lane by lane (loops of run-time length inside do not vectorize across lanes).
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "chain.cuh"
#include "chain_args.h"
#include "chain_trajectory.h"
#include "mlp.cuh"

constexpr int CH_CPU_LANES = 16;  // lanes per block: one AVX-512 or two AVX2 vectors of floats
// Below this many environment-steps one thread runs the call (waking the team costs microseconds).
constexpr long long CH_CPU_PARALLEL_MIN_WORK = 256;

// The block's W environments as one GCC vector (one zmm on AVX-512, two ymm on AVX2): the lane type
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
                for (int sub = 0; sub < p.frame_skip; ++sub) {
#pragma omp simd
                    for (int l = 0; l < W; ++l) ch_mj_step<N>(buf + l, W, force[l], p);
                }
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
                for (int sub = 0; sub < p.frame_skip; ++sub) {  // 2.
#pragma omp simd
                    for (int l = 0; l < W; ++l) ch_mj_step<N>(buf + l, W, force[l], p, seen + l);
                }
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

// ---- the builds, compiled in parts ----
// The library compiles as STUDYLIB_PARTS translation units at once (studylib/native/build.py:
// NativeLibrary.parts; the unrolled builds make most of a compile of over half a minute on one
// core): part STUDYLIB_PART instantiates the builds N with ch_part_of(N) == STUDYLIB_PART and
// registers them in ch_builds when the library loads; part 0 also holds the extern "C" entry
// points. Compiled with no -D, the file is the whole library.
#ifndef STUDYLIB_PARTS
#define STUDYLIB_PARTS 1
#define STUDYLIB_PART 0
#endif
static_assert(CH_GENERIC == 0, "ch_builds is indexed by N, the run-time-n build at 0");

// One build's functions (N fixed), called by the entry points after their checks.
struct ChBuild {
    void (*rollout)(const ChainArgs&);
    void (*physics_step)(const ChainArgs&, int);
    long long (*episodes)(const ChainArgs&, const ChainTrajectoryArgs*);
    void (*reset)(const ChainArgs&);
    void (*restart)(const ChainArgs&);
    void (*observe)(const ChainArgs&);
    void (*mlp_actions)(const ChainArgs&);
};

// ch_builds[N]: build N's functions, every N registered by its part once the library is loaded.
extern const ChBuild* ch_builds[CH_MAX_UNROLLED + 1];
#if STUDYLIB_PART == 0
const ChBuild* ch_builds[CH_MAX_UNROLLED + 1] = {};
#endif

// The part that compiles build N: the builds dealt largest first, each to the part with the least
// so far (the compile of build n costs about n times that of n = 1; the run-time-n build's, with
// the entry points, about 3 times: measured with g++ 12 -O2, the library's flags).
constexpr int ch_build_cost(int n) { return n == CH_GENERIC ? 3 : n; }
constexpr int ch_part_of(int n) {
    int load[STUDYLIB_PARTS] = {};
    int part_of_build[CH_MAX_UNROLLED + 1] = {};
    bool dealt[CH_MAX_UNROLLED + 1] = {};
    for (int round = 0; round <= CH_MAX_UNROLLED; ++round) {
        int next = -1;
        for (int b = 0; b <= CH_MAX_UNROLLED; ++b)
            if (!dealt[b] && (next < 0 || ch_build_cost(b) > ch_build_cost(next))) next = b;
        int least = 0;
        for (int q = 1; q < STUDYLIB_PARTS; ++q)
            if (load[q] < load[least]) least = q;
        dealt[next] = true;
        part_of_build[next] = least;
        load[least] += ch_build_cost(next);
    }
    return part_of_build[n];
}

template <int N>
static const ChBuild ch_build_functions = {
    chain_rollout_lanes<N, CH_CPU_LANES>,  // one environment: 16 lanes cost one vector's time
    chain_physics_step_scalar<N>,
    chain_episode_lanes<N, CH_CPU_LANES>,
    chain_reset_envs<N>,
    chain_restart_envs<N>,
    chain_observe_envs<N>,
    chain_mlp_actions_lanes<N, CH_CPU_LANES>,
};

template <int N>
static int ch_register() {
    if constexpr (ch_part_of(N) == STUDYLIB_PART) ch_builds[N] = &ch_build_functions<N>;
    return 0;
}
#define CH_REGISTER(N) +ch_register<N>()
static const int ch_registered = ch_register<CH_GENERIC>() CH_FOR_EACH_LINKS(CH_REGISTER);
#undef CH_REGISTER

#if STUDYLIB_PART == 0
// The build that steps these arguments (ch_build_of: links itself if unrolled, else the run-time-n build).
static const ChBuild& ch_build(const ChainArgs& a) { return *ch_builds[ch_build_of(a)]; }

// The episode arguments' check of a call that steps nothing (reset, restart, the MLP's actions):
// ch_check_episode_args on a copy with no steps and ``policy``; CH_ERR_NULL for no arguments.
static int ch_check_call(const ChainArgs* a, int policy) {
    if (!a) return CH_ERR_NULL;
    ChainArgs check = *a;
    check.num_steps = 0;
    check.policy = policy;
    return ch_check_episode_args(check);
}

// A layout entry's output: the first `capacity` of `count` values into out; returns count (the
// caller sees a field it lacks as a longer list).
static int ch_report_layout(const long long* layout, int count, long long* out, int capacity) {
    for (int i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}

extern "C" {

// Steps every environment a->num_steps environment steps (frame_skip mj_steps each), physics
// only; returns CH_OK or a CH_ERR_* code (nothing is touched then).
int chain_rollout(const ChainArgs* a) {
    if (!a) return CH_ERR_NULL;
    const int check = ch_check_args(*a);
    if (check != CH_OK || a->n == 0 || a->num_steps == 0) return check;
    ch_build(*a).rollout(*a);
    return CH_OK;
}

// `mj_steps` mj_steps (not environment steps) of every environment with control step 0's
// (a->num_steps is not read); CH_OK or a CH_ERR_* code.
int chain_physics_step(const ChainArgs* a, int mj_steps) {
    if (!a) return CH_ERR_NULL;
    ChainArgs one = *a;
    one.num_steps = mj_steps;  // checked as the step count
    const int check = ch_check_args(one);
    if (check != CH_OK || a->n == 0 || mj_steps == 0) return check;
    ch_build(*a).physics_step(*a, mj_steps);
    return CH_OK;
}

// episode.advance a->num_steps times for every environment (policy CTRL, HASH or MLP), the state
// and counters in place, the last step's flags and rewards (and observations, final_obs given)
// written; returns the number of episodes that ended, or -(CH_ERR_* code) (nothing touched then).
long long chain_episodes(const ChainArgs* a) {
    if (!a) return -CH_ERR_NULL;
    const int check = ch_check_episode_args(*a);
    if (check != CH_OK) return -check;
    if (a->n == 0) return 0;
    return ch_build(*a).episodes(*a, nullptr);
}

// chain_episodes under the MLP policy, every step recorded into *t (chain_trajectory.h): the
// trajectory a PPO update learns from, T = a->num_steps steps in one call. Returns the number of
// episodes that ended, or -(CH_ERR_* code) (nothing touched then).
long long chain_collect(const ChainArgs* a, const ChainTrajectoryArgs* t) {
    if (!a || !t) return -CH_ERR_NULL;
    const int check = ch_check_collect_args(*a, *t);
    if (check != CH_OK) return -check;
    if (a->n == 0) return 0;
    return ch_build(*a).episodes(*a, t);
}

// Every environment to episode 0's first state (the draws of a->seed), elapsed and episode 0.
int chain_reset(const ChainArgs* a) {
    const int code = ch_check_call(a, CH_POLICY_CTRL);
    if (code != CH_OK || a->n == 0) return code;
    ch_build(*a).reset(*a);
    return CH_OK;
}

// The environments in a->reset_mask to their next episode's first state (episode + 1, elapsed 0);
// their first observation into a->final_obs when it is given.
int chain_restart(const ChainArgs* a) {
    const int code = ch_check_call(a, CH_POLICY_CTRL);
    if (code != CH_OK || a->n == 0) return code;
    if (!a->reset_mask) return CH_ERR_NULL;
    ch_build(*a).restart(*a);
    return CH_OK;
}

// The observation (3n + 3 floats) of every environment's state into a->obs_out.
int chain_observe(const ChainArgs* a) {
    if (!a) return CH_ERR_NULL;
    if (!ch_links_supported(a->links)) return CH_ERR_LINKS;
    if (a->n < 0) return CH_ERR_NEGATIVE_N;
    if (a->n > 0 && (!a->state || !a->params || !a->obs_out)) return CH_ERR_NULL;
    if (a->n == 0) return CH_OK;
    ch_build(*a).observe(*a);
    return CH_OK;
}

// The MLP policy's action (clip(mean + action_std z, -1, 1)) at every environment's state and
// counters into a->obs_out (n,): the fused rollout's block function alone, for the tests.
int chain_mlp_actions(const ChainArgs* a) {
    const int code = ch_check_call(a, CH_POLICY_MLP);
    if (code != CH_OK || a->n == 0) return code;
    if (!a->weights || !a->obs_out) return CH_ERR_NULL;
    ch_build(*a).mlp_actions(*a);
    return CH_OK;
}

// The unrolled N (CH_FOR_EACH_LINKS) in increasing order into out[0 .. capacity); returns how many
// there are. Every other n up to chain_max_links() takes the run-time-n build.
int chain_links(int* out, int capacity) {
    int count = 0;
#define CH_LIST(N) \
    if (count < capacity) out[count] = N; \
    ++count;
    CH_FOR_EACH_LINKS(CH_LIST)
#undef CH_LIST
    return count;
}

int chain_max_links(void) { return CH_MAX_LINKS; }

// Floats of the params array for n links (ch_params_from_array reads this many).
int chain_num_param_floats(int links) { return CH_NUM_PARAM_FLOATS(links); }

// The hashed draws, for Python's check that it reproduces them bit for bit (or to float32
// rounding: the normals).
float chain_hash_ctrl(unsigned int seed, unsigned int env, unsigned int episode, unsigned int elapsed) {
    return ch_hash_ctrl(seed, env, episode, elapsed);
}
float chain_uniform(unsigned int salt, unsigned int seed, unsigned int env, unsigned int episode, unsigned int component) {
    return ch_uniform(salt, seed, env, episode, component);
}
float chain_policy_noise(unsigned int seed, unsigned int env, unsigned int episode, unsigned int elapsed) {
    return ch_policy_noise(seed, env, episode, elapsed);
}

const char* chain_error_message(int code) {
    switch (code) {
        case CH_OK: return "ok";
        case CH_ERR_LINKS: return "the number of links is not one this build steps (1 to CH_MAX_LINKS = 32, cuda/chain.cuh)";
        case CH_ERR_NEGATIVE_N: return "the number of environments is negative";
        case CH_ERR_NULL: return "a required array is null (state, params, ctrl under the given-controls policy, "
                                 "weights under the MLP policy, or an episode array)";
        case CH_ERR_STEPS: return "the number of steps is negative";
        case CH_ERR_POLICY: return "unknown policy (CH_POLICY_CTRL, CH_POLICY_HASH, or CH_POLICY_MLP for episodes)";
        default: return "unknown error code";
    }
}

// sizeof(ChainArgs), then each field's offset in declaration order; returns how many values.
int chain_args_layout(long long* out, int capacity) {
    const long long layout[] = {
        (long long)sizeof(ChainArgs),
        (long long)offsetof(ChainArgs, state), (long long)offsetof(ChainArgs, ctrl),
        (long long)offsetof(ChainArgs, params), (long long)offsetof(ChainArgs, n),
        (long long)offsetof(ChainArgs, elapsed), (long long)offsetof(ChainArgs, episode),
        (long long)offsetof(ChainArgs, flags_out), (long long)offsetof(ChainArgs, reward_out),
        (long long)offsetof(ChainArgs, final_obs), (long long)offsetof(ChainArgs, weights),
        (long long)offsetof(ChainArgs, reset_mask), (long long)offsetof(ChainArgs, obs_out),
        (long long)offsetof(ChainArgs, links), (long long)offsetof(ChainArgs, num_steps),
        (long long)offsetof(ChainArgs, seed), (long long)offsetof(ChainArgs, first_step),
        (long long)offsetof(ChainArgs, policy), (long long)offsetof(ChainArgs, action_std),
        (long long)offsetof(ChainArgs, generic), (long long)offsetof(ChainArgs, reserved),
    };
    return ch_report_layout(layout, (int)(sizeof layout / sizeof layout[0]), out, capacity);
}

// sizeof(ChainTrajectoryArgs), then each field's offset in declaration order; returns how many values.
int chain_trajectory_layout(long long* out, int capacity) {
    const long long layout[] = {
        (long long)sizeof(ChainTrajectoryArgs),
        (long long)offsetof(ChainTrajectoryArgs, obs), (long long)offsetof(ChainTrajectoryArgs, actions),
        (long long)offsetof(ChainTrajectoryArgs, logp), (long long)offsetof(ChainTrajectoryArgs, reward),
        (long long)offsetof(ChainTrajectoryArgs, flags), (long long)offsetof(ChainTrajectoryArgs, final_obs),
        (long long)offsetof(ChainTrajectoryArgs, obs_shift), (long long)offsetof(ChainTrajectoryArgs, obs_scale),
        (long long)offsetof(ChainTrajectoryArgs, obs_clip), (long long)offsetof(ChainTrajectoryArgs, log_std),
    };
    return ch_report_layout(layout, (int)(sizeof layout / sizeof layout[0]), out, capacity);
}

}  // extern "C"

#endif  // STUDYLIB_PART == 0
