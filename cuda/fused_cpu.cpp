// CPU build of the fused kernel (cuda/fused_kernel.cu): policy inference and simulation in one
// call, K steps, from the same headers (cartpole.cuh, mlp.cuh) the GPU kernel compiles.
//
// The structure of cartpole_cpu.cpp: environments in blocks of W lanes across OpenMP threads, a
// block's rows copied into a lane-interleaved buffer (buf[j * W + lane]) that stays in L1 for all
// K steps and is written back once. Each step of a block:
//   1. the MLP on copy 0 of the W states: mlp_forward on a vector of W floats (below), so every
//      weight is loaded once and broadcast against W environments, with the second layer
//      register-blocked (the weights, 18 KiB, stay in L1 across all blocks and steps);
//   2. the physics of all S copies, C sub-steps: cp_physics in `#pragma omp simd` loops over the
//      lanes (vectorized with glibc's vector sinf/cosf, see studylib/native.py's flags);
//   3. termination/truncation (cp_env_finish) and the same-step resets (cp_reset_row).
// Nothing leaves the core between steps: no activations in memory, no Python, no framework.
// Built automatically by studylib/native.py.
#include <stdint.h>
#include <string.h>

#include <vector>

#include "cartpole.cuh"
#include "mlp.cuh"

namespace {
constexpr int W = 16;  // lanes per block: one AVX-512 register of floats (32 lanes, two
                      // registers, was 3x slower: GCC splits 128-byte vectors through memory)
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

extern "C" {

int fused_lanes() { return W; }

// Steps every environment `num_steps` times; returns the number of episodes that ended.
// policy: FUSED_POLICY_MLP (greedy MLP on `weights`, every step), FUSED_POLICY_HASH (counter-hash
// actions) or FUSED_POLICY_ACTIONS (`actions` (n,) for every step; callers pass num_steps == 1).
long long fused_rollout(float* state, int32_t* elapsed, uint32_t* episode, const int32_t* actions,
                        uint8_t* flags_out, const float* param_floats, const float* weights,
                        int32_t max_episode_steps, long long n, int32_t state_factor,
                        int32_t compute_factor, int32_t num_steps, uint32_t seed, int32_t policy) {
    const CartPoleParams p = cp_params_from_array(param_floats, max_episode_steps);
    const RolloutConfig cfg = {state_factor, compute_factor, num_steps, seed};
    const float dt = cp_substep_dt(cfg, p);
    const int64_t row_len = 4 * (int64_t)state_factor;
    const long long num_blocks = (n + W - 1) / W;
    long long episodes_done = 0;
#pragma omp parallel reduction(+ : episodes_done)
    {
        // Thread-local copies: the compiler cannot prove that stores into the buffer leave the
        // shared ones unchanged, and reloading them inside the lane loops blocks vectorization.
        const CartPoleParams pl = p;
        const float dtl = dt;
        std::vector<float> buf(row_len * W);  // buf[j * W + lane]
#pragma omp for schedule(static)
        for (long long b = 0; b < num_blocks; ++b) {
            const long long first = b * W;
            const int lanes = (int)(n - first < W ? n - first : W);
            int32_t el[W] = {0};
            uint32_t ep[W] = {0};
            int32_t act[W] = {0};
            int fl[W] = {0};
            float force[W];
            alignas(64) float logits[2][W];
            // Lanes past n (the last block only) start from zeros and are reset like the others,
            // so they stay finite; they are never written back.
            memset(buf.data(), 0, buf.size() * sizeof(float));
            for (int l = 0; l < lanes; ++l) {
                const float* row = state + (first + l) * row_len;
                for (int64_t j = 0; j < row_len; ++j) buf[j * W + l] = row[j];
                el[l] = elapsed[first + l];
                ep[l] = episode[first + l];
                if (policy == FUSED_POLICY_ACTIONS) act[l] = actions[first + l];
            }
            float* bp = buf.data();
            for (int k = 0; k < num_steps; ++k) {
                if (policy == FUSED_POLICY_MLP) {  // 1. inference on copy 0 (the observation)
                    const Lanes obs[MLP_IN] = {load_lanes(bp), load_lanes(bp + W), load_lanes(bp + 2 * W),
                                               load_lanes(bp + 3 * W)};
                    Lanes l0, l1;
                    mlp_forward<JB>(obs, weights, l0, l1);
                    memcpy(logits[0], &l0, sizeof l0);
                    memcpy(logits[1], &l1, sizeof l1);
#pragma omp simd
                    for (int l = 0; l < W; ++l) force[l] = cp_force(mlp_greedy_action(logits[0][l], logits[1][l]), p);
                } else if (policy == FUSED_POLICY_HASH) {
#pragma omp simd
                    for (int l = 0; l < W; ++l)
                        force[l] = cp_force(cp_hash_action(seed, (uint32_t)(first + l), ep[l], (uint32_t)el[l]), p);
                } else {
#pragma omp simd
                    for (int l = 0; l < W; ++l) force[l] = cp_force(act[l], p);
                }
                for (int s = 0; s < state_factor; ++s) {  // 2. physics: cp_copy_step, lanes innermost
                    float* c = bp + 4 * (int64_t)s * W;
                    for (int sub = 0; sub < compute_factor; ++sub) {
#pragma omp simd
                        for (int l = 0; l < W; ++l)
                            cp_physics(c[l], c[W + l], c[2 * W + l], c[3 * W + l], force[l], dtl, pl);
                    }
                }
#pragma omp simd
                for (int l = 0; l < W; ++l) fl[l] = cp_env_finish(bp[l], bp[2 * W + l], el[l], ep[l], p);
                for (int l = 0; l < W; ++l) {  // 3. same-step resets of the lanes whose episode ended
                    if (fl[l]) {
                        cp_reset_row(bp + l, W, (uint32_t)(first + l), ep[l], cfg);
                        episodes_done += l < lanes;
                    }
                }
            }
            for (int l = 0; l < lanes; ++l) {
                float* row = state + (first + l) * row_len;
                for (int64_t j = 0; j < row_len; ++j) row[j] = buf[j * W + l];
                elapsed[first + l] = el[l];
                episode[first + l] = ep[l];
                flags_out[first + l] = (uint8_t)fl[l];
            }
        }
    }
    return episodes_done;
}

// Reset every environment to episode 0's draws: the draws of cartpole_reset and of the kernels.
void fused_reset(float* state, int32_t* elapsed, uint32_t* episode, long long n,
                 int32_t state_factor, uint32_t seed) {
    const RolloutConfig cfg = {state_factor, 1, 0, seed};
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; ++i) {
        cp_reset_row(state + i * 4 * (int64_t)state_factor, 1, (uint32_t)i, 0u, cfg);
        elapsed[i] = 0;
        episode[i] = 0;
    }
}

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
