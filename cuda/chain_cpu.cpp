// CPU build of the chain's dynamics (cuda/chain.cuh): N chains stepped K environment steps per
// call, OpenMP threads across blocks of environments, SIMD lanes within a block (as cpu_rollout.h
// does for CartPole: a block's states interleaved, buf[j * W + lane], stepped K times in L1 and
// written back once). Built by studylib/native/build.py (registered by studylib.native.chain),
// called through ctypes by studylib.native.chain.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "chain.cuh"
#include "chain_args.h"

constexpr int CH_CPU_LANES = 16;  // lanes per block: one AVX-512 or two AVX2 vectors of floats
// Below this many environment-steps one thread runs the call (waking the team costs microseconds).
constexpr long long CH_CPU_PARALLEL_MIN_WORK = 256;

// K environment steps of every environment, W lanes per block; the lane loop is one `omp simd`
// over ch_mj_step (frame_skip times a step), every array of the header a per-lane private array of fixed size.
template <int N, int W>
static void chain_rollout_lanes(const ChainArgs& args) {
    constexpr int ROW = 2 * (N + 1);
    const ChainParams<N> params = ch_params_from_array<N>(args.params);
    const long long n = args.n;
    const long long num_blocks = (n + W - 1) / W;
    const long long work = n * (long long)args.num_steps * (N + 1);
#pragma omp parallel if (work >= CH_CPU_PARALLEL_MIN_WORK)
    {
        const ChainParams<N> p = params;  // thread-local: the lane loop need not reload it
        const ChainArgs a = args;
        alignas(64) float buf[ROW * W];
        alignas(64) float force[W];
#pragma omp for schedule(static)
        for (long long b = 0; b < num_blocks; ++b) {
            const long long first = b * W;
            const int lanes = (int)(n - first < W ? n - first : W);
            memset(buf, 0, sizeof buf);  // lanes past n: a chain at rest, stepped, never written back
            for (int l = 0; l < lanes; ++l)
                for (int j = 0; j < ROW; ++j) buf[j * W + l] = a.state[(first + l) * ROW + j];
            for (int k = 0; k < a.num_steps; ++k) {  // ch_physics_step with its loops interchanged
                for (int l = 0; l < W; ++l)
                    force[l] = ch_actuator_force<N>(l < lanes ? ch_args_ctrl(a, first + l, k) : 0.0f, p);
                for (int sub = 0; sub < p.frame_skip; ++sub) {
#pragma omp simd
                    for (int l = 0; l < W; ++l) ch_mj_step<N>(buf + l, W, force[l], p);
                }
            }
            for (int l = 0; l < lanes; ++l)
                for (int j = 0; j < ROW; ++j) a.state[(first + l) * ROW + j] = buf[j * W + l];
        }
    }
}

// One environment at a time, no blocks and no SIMD: `mj_steps` mj_steps (chain.py's
// physics_step(steps=mj_steps)) of each environment with its control ctrl[env] (or the hashed
// control of step first_step); the tests' scalar reference for the block loop.
template <int N>
static void chain_physics_step_scalar(const ChainArgs& a, int mj_steps) {
    const ChainParams<N> p = ch_params_from_array<N>(a.params);
    const long long work = a.n * (long long)mj_steps * (N + 1);
#pragma omp parallel for schedule(static) if (work >= 5 * CH_CPU_PARALLEL_MIN_WORK)
    for (long long i = 0; i < a.n; ++i)
        ch_physics_step<N>(a.state + i * 2 * (N + 1), 1, ch_args_ctrl(a, i, 0), p, mj_steps);
}

extern "C" {

// Steps every environment a->num_steps environment steps (frame_skip mj_steps each); returns
// CH_OK or a CH_ERR_* code (nothing is touched then).
int chain_rollout(const ChainArgs* a) {
    if (!a) return CH_ERR_NULL;
    const int check = ch_check_args(*a);
    if (check != CH_OK || a->n == 0 || a->num_steps == 0) return check;
#define CH_DISPATCH(N) \
    if (a->links == N) { \
        if (a->n == 1) chain_rollout_lanes<N, 1>(*a); else chain_rollout_lanes<N, CH_CPU_LANES>(*a); \
        return CH_OK; \
    }
    CH_FOR_EACH_LINKS(CH_DISPATCH)
#undef CH_DISPATCH
    return CH_ERR_LINKS;
}

// `mj_steps` mj_steps (not environment steps) of every environment with control step 0's
// (a->num_steps is not read); CH_OK or a CH_ERR_* code.
int chain_physics_step(const ChainArgs* a, int mj_steps) {
    if (!a) return CH_ERR_NULL;
    ChainArgs one = *a;
    one.num_steps = mj_steps;  // checked as the step count
    const int check = ch_check_args(one);
    if (check != CH_OK || a->n == 0 || mj_steps == 0) return check;
#define CH_DISPATCH(N) \
    if (a->links == N) { \
        chain_physics_step_scalar<N>(*a, mj_steps); \
        return CH_OK; \
    }
    CH_FOR_EACH_LINKS(CH_DISPATCH)
#undef CH_DISPATCH
    return CH_ERR_LINKS;
}

// The instantiated N in increasing order into out[0 .. capacity); returns how many there are.
int chain_links(int* out, int capacity) {
    int count = 0;
#define CH_LIST(N) \
    if (count < capacity) out[count] = N; \
    ++count;
    CH_FOR_EACH_LINKS(CH_LIST)
#undef CH_LIST
    return count;
}

// Floats of the params array for N links (ch_params_from_array reads this many).
int chain_num_param_floats(int links) { return CH_NUM_PARAM_FLOATS(links); }

// ch_hash_ctrl, for Python's check that it reproduces the draws bit for bit.
float chain_hash_ctrl(unsigned int seed, unsigned int env, unsigned int step) { return ch_hash_ctrl(seed, env, step); }

const char* chain_error_message(int code) {
    switch (code) {
        case CH_OK: return "ok";
        case CH_ERR_LINKS: return "the number of links is not one this build instantiates (CH_FOR_EACH_LINKS in cuda/chain.cuh)";
        case CH_ERR_NEGATIVE_N: return "the number of environments is negative";
        case CH_ERR_NULL: return "a required array is null (state, params, or ctrl under the given-controls policy)";
        case CH_ERR_STEPS: return "the number of steps is negative";
        case CH_ERR_POLICY: return "unknown policy (CH_POLICY_CTRL or CH_POLICY_HASH)";
        default: return "unknown error code";
    }
}

// sizeof(ChainArgs), then each field's offset in declaration order; returns how many values.
int chain_args_layout(long long* out, int capacity) {
    const long long layout[] = {
        (long long)sizeof(ChainArgs),
        (long long)offsetof(ChainArgs, state), (long long)offsetof(ChainArgs, ctrl),
        (long long)offsetof(ChainArgs, params), (long long)offsetof(ChainArgs, n),
        (long long)offsetof(ChainArgs, links), (long long)offsetof(ChainArgs, num_steps),
        (long long)offsetof(ChainArgs, seed), (long long)offsetof(ChainArgs, first_step),
        (long long)offsetof(ChainArgs, policy), (long long)offsetof(ChainArgs, reserved),
    };
    const int count = (int)(sizeof layout / sizeof layout[0]);
    for (int i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}

}  // extern "C"
