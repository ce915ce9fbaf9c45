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
// loops GCC vectorizes whole, and the run-time-n build (N = CH_GENERIC) for the rest, whose physics
// takes a block's lanes as its value type (chain_cpu_lanes.h: ch_mj_step_block), since GCC does not
// vectorize a lane loop around loops of run-time length.
#include <stddef.h>

#include "chain_cpu_lanes.h"

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
    chain_rollout_lanes<N, CH_CPU_LANES>,  // one environment: its block's lanes cost one vector's time
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
