// CPU build of the CUDA kernel's logic: the same cartpole.cuh, compiled by the host compiler.
//
// Environments are split into blocks of W lanes across OpenMP threads (the CPU's "thread blocks").
// A block's rows are copied into a small interleaved buffer (lane-contiguous, so the SIMD lanes of
// one core step W environments at once), stepped K times while the buffer stays in L1/L2, and
// written back once: the CPU form of the kernel fusion the paper does on the GPU. K = 1 per call
// is the unfused form (one pass over memory per step). Built automatically by studylib/native.py.
#include <stdint.h>
#include <string.h>

#include <vector>

#include "cartpole.cuh"

namespace {
constexpr int W = 16;  // lanes per block: two AVX-512 or four AVX2 vectors of floats
}

extern "C" {

// Steps every environment `num_steps` times; returns the number of episodes that ended.
// `actions` (n,) is used for every step when given (callers pass it with num_steps == 1);
// nullptr means the no-policy hashed actions.
long long cartpole_rollout(float* state, int32_t* elapsed, uint32_t* episode,
                           const int32_t* actions, uint8_t* flags_out, const float* param_floats,
                           int32_t max_episode_steps, long long n, int32_t state_factor,
                           int32_t compute_factor, int32_t num_steps, uint32_t seed) {
    const CartPoleParams p = cp_params_from_array(param_floats, max_episode_steps);
    const RolloutConfig cfg = {state_factor, compute_factor, num_steps, seed};
    const float dt = cp_substep_dt(cfg, p);
    const int64_t row_len = 4 * (int64_t)state_factor;
    const long long num_blocks = (n + W - 1) / W;
    long long episodes_done = 0;
#pragma omp parallel reduction(+ : episodes_done)
    {
        // Thread-local copies: with the shared originals GCC cannot vectorize the lane loops
        // ("latch block not empty") and falls back to scalar sinf/cosf.
        const CartPoleParams tp = p;
        const RolloutConfig tcfg = cfg;
        const float tdt = dt;
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
            for (int l = 0; l < lanes; ++l) {
                const float* row = state + (first + l) * row_len;
                for (int64_t j = 0; j < row_len; ++j) buf[j * W + l] = row[j];
                el[l] = elapsed[first + l];
                ep[l] = episode[first + l];
                if (actions) act[l] = actions[first + l];
            }
            float* bp = buf.data();
            for (int k = 0; k < num_steps; ++k) {
                // cp_env_step with the loops interchanged: lanes innermost, so they vectorize.
#pragma omp simd
                for (int l = 0; l < W; ++l)
                    force[l] = cp_force(actions ? act[l]
                                                : cp_hash_action(seed, (uint32_t)(first + l), ep[l],
                                                                 (uint32_t)el[l]),
                                        tp);
                for (int s = 0; s < state_factor; ++s) {  // cp_copy_step, lanes innermost
                    float* c = bp + 4 * (int64_t)s * W;
                    for (int sub = 0; sub < compute_factor; ++sub) {
#pragma omp simd
                        for (int l = 0; l < W; ++l)
                            cp_physics(c[l], c[W + l], c[2 * W + l], c[3 * W + l], force[l], tdt, tp);
                    }
                }
#pragma omp simd
                for (int l = 0; l < W; ++l) fl[l] = cp_env_finish(bp[l], bp[2 * W + l], el[l], ep[l], tp);
                // The other half: same-step resets of the (few) lanes whose episode ended.
                for (int l = 0; l < lanes; ++l) {
                    if (fl[l]) {
                        cp_reset_row(bp + l, W, (uint32_t)(first + l), ep[l], tcfg);
                        ++episodes_done;
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

// Reset every environment to episode 0's draws (the same draws the CUDA kernel makes).
void cartpole_reset(float* state, int32_t* elapsed, uint32_t* episode, long long n,
                    int32_t state_factor, uint32_t seed) {
    const RolloutConfig cfg = {state_factor, 1, 0, seed};
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; ++i) {
        cp_reset_row(state + i * 4 * (int64_t)state_factor, 1, (uint32_t)i, 0u, cfg);
        elapsed[i] = 0;
        episode[i] = 0;
    }
}

}  // extern "C"
