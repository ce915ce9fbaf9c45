// CPU build of the fused kernel (cuda/fused_kernel.cu): policy inference and simulation in one
// call, K steps, from the same headers (cartpole.cuh, mlp.cuh) the GPU kernel compiles.
//
// The block loop of cpu_rollout.h (shared with cartpole_cpu.cpp), with the forces of each step
// chosen by the MLP on the W CartPoles (the observations): mlp_forward on a vector of W floats (below), so
// every weight is loaded once and broadcast against W environments, with the second layer
// register-blocked (the weights, 18 KiB, stay in L1 across all blocks and steps). Then the
// physics, termination and same-step resets, as in cpp.
// Nothing leaves the core between steps: no activations in memory, no Python, no framework.
// fused_collect is the same loop with the MLP as a stochastic policy (actions sampled from the
// softmax of its logits, mlp.cuh's mlp_sample) and every step's trajectory written
// (trajectory_args.h): how PPO collects with `fused` (studylib.train.collectors.FusedCollector).
// Built automatically by studylib/native/build.py; called through ctypes by studylib/native/backends.py.
#include <stddef.h>
#include <stdint.h>
#include <string.h>


#include "cartpole.cuh"
#include "cpu_rollout.h"
#include "mlp.cuh"
#include "rollout_args.h"
#include "trajectory_args.h"

namespace {
constexpr int W = CP_CPU_LANES;  // one AVX-512 register of floats (32 lanes, two registers,
                                // was 3x slower: GCC splits 128-byte vectors through memory)
constexpr int JB = 8;  // layer-2 neurons per register block: 8 accumulator registers
// The lane type of the MLP: GCC's vector extension, which the compiler keeps in registers and
// maps to AVX-512 (or AVX2) instructions. `#pragma omp simd` loops over lanes would express the
// same arithmetic, but GCC keeps the JB accumulators of the register block in memory then,
// which bounds the MLP by stores instead of FMAs.
typedef float Lanes __attribute__((vector_size(W * sizeof(float))));

inline Lanes load_lanes(const float* p) {
    Lanes v;
    memcpy(&v, p, sizeof v);
    return v;
}
}  // namespace

template <>
struct MlpLane<Lanes> {
    static inline Lanes splat(float v) { return Lanes{} + v; }
    static inline Lanes clamp(Lanes x, float lo, float hi) {
        const Lanes vlo = splat(lo), vhi = splat(hi);
        x = x < vlo ? vlo : x;  // vmaxps / vminps
        return x > vhi ? vhi : x;
    }
};

namespace {
// The MLP's two logits of the W observations in a block's buffer (its 4 x W floats).
inline void block_logits(const float* bp, const float* weights, float logits[2][W]) {
    const Lanes obs[MLP_IN] = {load_lanes(bp), load_lanes(bp + W), load_lanes(bp + 2 * W), load_lanes(bp + 3 * W)};
    Lanes l0, l1;
    mlp_forward<JB>(obs, weights, l0, l1);
    memcpy(logits[0], &l0, sizeof l0);
    memcpy(logits[1], &l1, sizeof l1);
}
}  // namespace

extern "C" {

// Steps every environment a->num_steps times; returns the number of episodes that ended.
// a->policy: CP_POLICY_MLP (greedy MLP on a->weights, every step), CP_POLICY_HASH (counter-hash
// actions) or CP_POLICY_ACTIONS (a->actions (n,) for every step; callers pass num_steps == 1).
long long fused_rollout(const RolloutArgs* a) {
    const CartPoleParams p = cp_args_params(*a);
    const int32_t policy = a->policy;
    const int32_t* const actions = a->actions;
    const float* const weights = a->weights;
    const uint32_t seed = a->seed;
    const long long n = a->n;
    return cp_cpu_rollout(
        *a, [&](const float* bp, long long first, const int32_t* el, const uint32_t* ep, float* force, int) {
            if (policy == CP_POLICY_MLP) {  // inference on the CartPole (the observation), in registers
                alignas(64) float logits[2][W];
                block_logits(bp, weights, logits);
#pragma omp simd
                for (int l = 0; l < W; ++l) force[l] = cp_force(mlp_greedy_action(logits[0][l], logits[1][l]), p);
            } else if (policy == CP_POLICY_HASH) {
#pragma omp simd
                for (int l = 0; l < W; ++l)
                    force[l] = cp_force(cp_hash_action(seed, (uint32_t)(first + l), ep[l], (uint32_t)el[l]), p);
            } else {
                for (int l = 0; l < W; ++l)  // lanes past n push left; never written back
                    force[l] = cp_force(first + l < n ? actions[first + l] : 0, p);
            }
        });
}

// Runs a->num_steps (T) steps of every environment with the MLP on a->weights as a stochastic
// policy, each action sampled from the softmax of its two logits (mlp_sample, with the counter
// hash's uniform mlp_sample_uniform), and writes the trajectory into *t (trajectory_args.h);
// returns the number of episodes that ended. a->policy and a->actions are not read, and
// a->final_obs neither: t->final_obs holds every step's. a->flags_out gets the last step's flags.
//
// cp_cpu_rollout's block loop with every step recorded: obs before the MLP and the action and its
// log-probability after it (in choose_forces), final_obs and the flags between termination and
// the same-step resets (in record). The state stays in the block's buffer for all T steps; what
// goes to memory is the trajectory itself, 41 bytes per environment-step.
long long fused_collect(const RolloutArgs* a, const TrajectoryArgs* t) {
    const CartPoleParams p = cp_args_params(*a);
    const TrajectoryArgs traj = *t;
    const float* const weights = a->weights;
    const uint32_t seed = a->seed;
    const long long n = a->n;
    auto at = [n](int k, long long first) { return (long long)k * n + first; };  // element (k, first) of (T, n)
    auto lanes_of = [n](long long first) { return (int)(n - first < W ? n - first : W); };
    return cp_cpu_rollout(
        *a,
        [&](const float* bp, long long first, const int32_t* el, const uint32_t* ep, float* force, int k) {
            const long long i = at(k, first);
            const int lanes = lanes_of(first);
            for (int l = 0; l < lanes; ++l)
                for (int j = 0; j < 4; ++j) traj.obs[(i + l) * 4 + j] = bp[j * W + l];
            alignas(64) float logits[2][W];
            block_logits(bp, weights, logits);
            for (int l = 0; l < W; ++l) {
                float logp;
                const float u = mlp_sample_uniform(seed, (uint32_t)(first + l), ep[l], (uint32_t)el[l]);
                const int32_t action = mlp_sample(logits[0][l], logits[1][l], u, logp);
                force[l] = cp_force(action, p);
                if (l < lanes) {
                    traj.actions[i + l] = action;
                    traj.logp[i + l] = logp;
                }
            }
        },
        [&](int k, const float* bp, long long first, int lanes, const int* fl) {
            const long long i = at(k, first);
            for (int l = 0; l < lanes; ++l) {  // the CartPole before the resets
                for (int j = 0; j < 4; ++j) traj.final_obs[(i + l) * 4 + j] = bp[j * W + l];
                traj.flags[i + l] = (uint8_t)fl[l];
            }
        });
}

// The layout of TrajectoryArgs as this compiler sees it: sizeof, then each field's offset in
// declaration order (as rollout_args_layout); studylib.native checks its ctypes twin against it.
int trajectory_args_layout(long long* out, int capacity) {
    const long long layout[] = {
        (long long)sizeof(TrajectoryArgs),       (long long)offsetof(TrajectoryArgs, obs),
        (long long)offsetof(TrajectoryArgs, actions), (long long)offsetof(TrajectoryArgs, logp),
        (long long)offsetof(TrajectoryArgs, flags), (long long)offsetof(TrajectoryArgs, final_obs),
    };
    const int count = (int)(sizeof layout / sizeof layout[0]);
    for (int i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}

// Reset every environment to episode 0's draws: the draws of cartpole_reset and of the kernels.
void fused_reset(const RolloutArgs* a) { cp_cpu_reset(*a); }

// Start the next episode of the environments in a->reset_mask: the draws of cartpole_restart.
void fused_restart(const RolloutArgs* a) { cp_cpu_restart(*a); }

// Logits of the MLP for n observations (n, 4) -> (n, 2): the fused kernel's forward pass on its
// own, for tests against studylib.policy.reference_actions.
void fused_mlp_logits(const float* obs, float* logits, const float* weights, long long n) {
#pragma omp parallel for schedule(static)
    for (long long first = 0; first < n; first += W) {
        const int lanes = (int)(n - first < W ? n - first : W);
        alignas(64) float in[MLP_IN][W] = {{0}};
        alignas(64) float out[2][W];
        for (int l = 0; l < lanes; ++l)
            for (int i = 0; i < MLP_IN; ++i) in[i][l] = obs[(first + l) * MLP_IN + i];
        const Lanes o[MLP_IN] = {load_lanes(in[0]), load_lanes(in[1]), load_lanes(in[2]), load_lanes(in[3])};
        Lanes l0, l1;
        mlp_forward<JB>(o, weights, l0, l1);
        memcpy(out[0], &l0, sizeof l0);
        memcpy(out[1], &l1, sizeof l1);
        for (int l = 0; l < lanes; ++l) {
            logits[(first + l) * 2] = out[0][l];
            logits[(first + l) * 2 + 1] = out[1][l];
        }
    }
}

}  // extern "C"
