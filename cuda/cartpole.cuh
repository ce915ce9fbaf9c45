// CartPole-v1 dynamics and episode logic, one source for the host and the device.
//
// Compiled by nvcc into the CUDA kernel (cuda/cartpole_kernel.cu) and by the host C++ compiler
// into the multi-core CPU build (cuda/cartpole_cpu.cpp), so the CPU build exercises exactly the
// logic the kernel runs. The physics mirrors studylib/sims/cartpole.py (and gymnasium's
// CartPoleEnv.step) line for line; the counter hash mirrors studylib/episodes.py bit for bit.
//
// Layout: an environment's state is one row of 4*S floats: [0 .. 3] the CartPole (x, x_dot,
// theta, theta_dot), [4 .. 4S) the 4*(S-1) carried floats of the paper's state factor S (section
// 4.2: "The state factor S increases the cartpole state size by a factor of S×, resulting in S×
// as many global memory loads and stores"; Fig 9: "state factor S increases memory bandwidth
// requirements by S×"). The arithmetic is one CartPole's (x C) for every S; the carried floats
// are memory traffic only: every step flips their sign (cp_carry), so an unfused step reads and
// writes all 4*S floats and a K-step call reads and writes them once, flipping them (K & 1)
// times. A sign flip is exact, is no arithmetic, and depends on K at run time, so no compiler can
// fold or drop the loads and stores. `stride` is the distance between consecutive floats of the
// CartPole (1 in global memory; W when a CPU block keeps W CartPoles interleaved for SIMD).
#pragma once
#if defined(__CUDACC_RTC__)  // NVRTC (CuPy's default compiler) ships no <stdint.h>
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
#else
#include <stdint.h>
#include <string.h>
#endif

#if defined(__CUDACC__)
#define CP_HD __host__ __device__ __forceinline__
#else
#define CP_HD static inline
#include <math.h>
#endif

// A load of read-only data through the GPU's read-only (non-coherent) cache. The kernels' arrays
// arrive inside one struct (rollout_args.h), whose pointer fields carry no `const __restrict__`
// kernel-parameter promise from which the compiler would pick these loads itself.
#if defined(__CUDA_ARCH__)
#define CP_LDG(ptr) __ldg(ptr)
#else
#define CP_LDG(ptr) (*(ptr))
#endif

// Primaries and derived constants; filled from studylib.dynamics.CartPoleParams so the numbers
// are typed in one place only (Python), and the derived ones are computed there from primaries.
struct CartPoleParams {
    float gravity;
    float masscart;
    float masspole;
    float total_mass;       // masspole + masscart (derived)
    float length;           // half the pole's length
    float polemass_length;  // masspole * length (derived)
    float force_mag;
    float tau;
    float x_threshold;
    float theta_threshold;  // radians
    int32_t max_episode_steps;
};

// The float fields above, in order, as passed from Python (studylib.native.params_array, the
// array RolloutArgs.params points at): a plain float array, so this struct's layout (and a change
// to it) stays inside C++.
#define CP_NUM_PARAM_FLOATS 10
CP_HD CartPoleParams cp_params_from_array(const float* a, int32_t max_episode_steps) {
    CartPoleParams p;
    p.gravity = CP_LDG(a + 0);
    p.masscart = CP_LDG(a + 1);
    p.masspole = CP_LDG(a + 2);
    p.total_mass = CP_LDG(a + 3);
    p.length = CP_LDG(a + 4);
    p.polemass_length = CP_LDG(a + 5);
    p.force_mag = CP_LDG(a + 6);
    p.tau = CP_LDG(a + 7);
    p.x_threshold = CP_LDG(a + 8);
    p.theta_threshold = CP_LDG(a + 9);
    p.max_episode_steps = max_episode_steps;
    return p;
}

// The knobs of one rollout call that the per-step pieces below need (from RolloutArgs).
struct RolloutConfig {
    int32_t state_factor;    // S: the state row is 4*S floats, the CartPole's 4 and 4*(S-1) carried
    int32_t compute_factor;  // C: Euler sub-steps of tau/C per step
    int32_t num_steps;       // K: steps fused into this call
    uint32_t seed;           // seeds the reset draws and the no-policy actions
};

// ---- counter-based hash (lowbias32 by C. Wellons), identical to studylib/episodes.py ----
CP_HD uint32_t cp_mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

CP_HD uint32_t cp_hash4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    return cp_mix32(a * 0x9E3779B1u + b * 0x85EBCA77u + c * 0xC2B2AE3Du + d * 0x27D4EB2Fu);
}

// "No policy" action: a cheap hash of (seed, env, episode, step-in-episode); nothing leaves the device.
CP_HD int cp_hash_action(uint32_t seed, uint32_t env, uint32_t episode, uint32_t elapsed) {
    return (int)(cp_hash4(seed, env, episode, elapsed) >> 31);
}

// Reset draw for float `component` of env `env` at the start of episode `episode`: uniform in
// [-0.05, 0.05) on a grid of 2^24 values. One float multiply of an exact integer, so no compiler
// contraction or reassociation (-ffast-math) can change the bits: Python reproduces them exactly.
CP_HD float cp_reset_value(uint32_t seed, uint32_t env, uint32_t episode, uint32_t component) {
    const int32_t centered = (int32_t)(cp_hash4(seed ^ 0xA511E9B3u, env, episode, component) >> 8) - 8388608;
    return (float)centered * (0.1f / 16777216.0f);
}

// ---- physics: one explicit-Euler step of length dt (gymnasium CartPoleEnv.step) ----
CP_HD void cp_physics(float& x, float& x_dot, float& theta, float& theta_dot, float force,
                      float dt, const CartPoleParams& p) {
    float costheta = cosf(theta);
    float sintheta = sinf(theta);
    float temp = (force + p.polemass_length * (theta_dot * theta_dot) * sintheta) / p.total_mass;
    float thetaacc = (p.gravity * sintheta - costheta * temp) /
                     (p.length * (4.0f / 3.0f - p.masspole * (costheta * costheta) / p.total_mass));
    float xacc = temp - p.polemass_length * thetaacc * costheta / p.total_mass;
    x = x + dt * x_dot;
    x_dot = x_dot + dt * xacc;
    theta = theta + dt * theta_dot;
    theta_dot = theta_dot + dt * thetaacc;
}

// Strict inequalities, as CartPole-v1.
CP_HD bool cp_terminated(float x, float theta, const CartPoleParams& p) {
    // Bitwise | (not ||): no branches, so the CPU build vectorizes it.
    return (x < -p.x_threshold) | (x > p.x_threshold) | (theta < -p.theta_threshold) |
           (theta > p.theta_threshold);
}

// Fill all 4*S floats of a row (in global memory) with the reset draws of episode `episode`: the
// CartPole and the carried floats; every *_reset entry point (episode 0).
CP_HD void cp_reset_row(float* row, uint32_t env, uint32_t episode, const RolloutConfig& cfg) {
    for (int j = 0; j < 4 * cfg.state_factor; ++j) row[j] = cp_reset_value(cfg.seed, env, episode, (uint32_t)j);
}

// The CartPole's 4 floats (components 0..3 of cp_reset_row's draws) for episode `episode`: the
// same-step reset and the restarts. The carried floats are not the CartPole's: a new episode
// leaves them as they are, so its cost does not grow with S.
CP_HD void cp_reset_cartpole(float* c, int64_t stride, uint32_t env, uint32_t episode, uint32_t seed) {
    for (int j = 0; j < 4; ++j) c[(int64_t)j * stride] = cp_reset_value(seed, env, episode, (uint32_t)j);
}

// ---- the carried floats of the state factor S ----
// The sign-bit mask of `num_steps` steps: each step flips the sign of every carried float once.
CP_HD uint32_t cp_carry_mask(int32_t num_steps) { return (uint32_t)(num_steps & 1) << 31; }

CP_HD float cp_flip_sign(float v, uint32_t mask) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(__float_as_uint(v) ^ mask);
#else
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits ^= mask;
    memcpy(&v, &bits, sizeof v);
    return v;
#endif
}

// The 4*(S-1) carried floats of a row in global memory (row[4 .. 4S)) read once and written once,
// their signs flipped by `mask` (cp_carry_mask of the steps this call takes).
CP_HD void cp_carry(float* row, int32_t state_factor, uint32_t mask) {
    const int64_t end = 4 * (int64_t)state_factor;
    for (int64_t j = 4; j < end; ++j) row[j] = cp_flip_sign(row[j], mask);
}

// The compute factor C splits each step into C Euler sub-steps of tau/C (C = 1: CartPole-v1).
CP_HD float cp_substep_dt(const RolloutConfig& cfg, const CartPoleParams& p) {
    return p.tau / (float)cfg.compute_factor;
}

// Physics of the CartPole `c`: C sub-steps of tau/C under one force.
CP_HD void cp_cartpole_step(float* c, int64_t stride, float force, const RolloutConfig& cfg, const CartPoleParams& p) {
    const float dt = cp_substep_dt(cfg, p);
    float x = c[0], x_dot = c[stride], theta = c[2 * stride], theta_dot = c[3 * stride];
    for (int k = 0; k < cfg.compute_factor; ++k) cp_physics(x, x_dot, theta, theta_dot, force, dt, p);
    c[0] = x;
    c[stride] = x_dot;
    c[2 * stride] = theta;
    c[3 * stride] = theta_dot;
}

CP_HD float cp_force(int action, const CartPoleParams& p) {
    return action == 1 ? p.force_mag : -p.force_mag;
}

// Episode bookkeeping after the physics of a step, from the CartPole's new x and theta: termination,
// truncation at max_episode_steps, and the counters. If the episode ended the caller resets the
// CartPole (cp_reset_cartpole) in the same step. Returns bit 0 = terminated, bit 1 = truncated.
CP_HD int cp_env_finish(float x, float theta, int32_t& elapsed, uint32_t& episode,
                        const CartPoleParams& p) {
    const bool terminated = cp_terminated(x, theta, p);
    const bool truncated = elapsed + 1 >= p.max_episode_steps;
    const bool done = terminated | truncated;
    elapsed = done ? 0 : elapsed + 1;
    episode = done ? episode + 1 : episode;
    return (int)terminated | ((int)truncated << 1);
}

// One CartPole step with CartPole-v1 semantics and a same-step autoreset, on the CartPole `c`
// (its 4 floats; the caller carries the other 4*(S-1) with cp_carry): the CUDA kernel calls this
// per thread; the CPU build calls the same pieces with its loops interchanged (lanes innermost)
// so that they vectorize. `final_obs` (4 floats, or null) receives the CartPole after the physics
// and before the reset: the terminal observation of an ended episode.
CP_HD int cp_env_step(float* c, int64_t stride, int action, int32_t& elapsed, uint32_t& episode,
                      uint32_t env, float* final_obs, const RolloutConfig& cfg, const CartPoleParams& p) {
    cp_cartpole_step(c, stride, cp_force(action, p), cfg, p);
    if (final_obs)
        for (int j = 0; j < 4; ++j) final_obs[j] = c[j * stride];
    const int flags = cp_env_finish(c[0], c[2 * stride], elapsed, episode, p);
    if (flags) cp_reset_cartpole(c, stride, env, episode, cfg.seed);
    return flags;
}
