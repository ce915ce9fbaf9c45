// The n-link chain's episode step (studylib/sims/chain/episode.py and studylib/sims/rules.py), one
// source for the host and the device: v5's termination, reward and observation, truncation and the
// counters, the hashed reset draws, no-policy controls and policy noise (bit for bit the Python's
// uniforms), and one environment step with its same-step reset. The physics it steps is chain.cuh's.
// Included by chain_args.h, which every chain build includes.
#pragma once
#include "chain.cuh"

// ---- the episode: v5's termination, reward and observation, and the counters ----
// is_terminated: the tip's height at or below n L / 1.2.
template <int N>
CH_HD bool ch_is_terminated(float y, const ChainParams<N>& p) {
    return y <= p.term_height;
}

// reward: the alive bonus while healthy, minus 0.01 x² + (y − 2 n L / 1.2)², minus
// 1e-3 θ̇_1² + 5e-3 Σ_{k≥2} θ̇_k² of the new state's velocities (a row `stride` apart: qvel[k] is
// row[(n + 1 + k) stride]). The coefficients are v5's, typed in as dynamics.reward types them.
template <int N>
CH_HD float ch_reward(float x, float y, const float* row, int64_t stride, bool terminated, const ChainParams<N>& p) {
    const int n1 = p.n() + 1;
    const float dy = y - p.target_height;
    const float dist = 0.01f * (x * x) + dy * dy;
    const float v1 = row[(n1 + 1) * stride];
    float vel = 1e-3f * (v1 * v1);
    ch_for<N>(2, n1, [&](int k) CH_LAMBDA {
        const float vk = row[(n1 + k) * stride];
        vel = vel + 5e-3f * (vk * vk);
    });
    return (terminated ? 0.0f : p.healthy_reward) - dist - vel;
}

// observation: x, sin θ_1..n, cos θ_1..n, clip(qvel, ±10), 0 (3n + 3 floats) of a state row
// (`stride` apart) into obs (`ostride` apart).
#define CH_OBS_SIZE(n) (3 * (n) + 3)
template <int N>
CH_HD void ch_observation(const float* row, int64_t stride, const ChainParams<N>& p, float* obs, int64_t ostride) {
    const int n = p.n(), n1 = n + 1;
    obs[0] = row[0];
    ch_for<N>(1, n1, [&](int k) CH_LAMBDA {
        const float angle = row[k * stride];
        float sa, ca;
        ch_sincos(angle, sa, ca);
        obs[k * ostride] = sa;
        obs[(n + k) * ostride] = ca;
    });
    ch_for<N>(0, n1, [&](int i) CH_LAMBDA {
        obs[(2 * n + 1 + i) * ostride] = fminf(fmaxf(row[(n1 + i) * stride], -10.0f), 10.0f);
    });
    obs[(3 * n + 2) * ostride] = 0.0f;
}

// episodes.end_of_step: elapsed + 1, truncated at max_episode_steps, and the counters of a
// same-step reset (elapsed 0, episode + 1 where done). Returns bit 0 terminated, bit 1 truncated.
CH_HD int ch_end_of_step(bool terminated, int32_t& elapsed, uint32_t& episode, int32_t max_episode_steps) {
    const int32_t next = elapsed + 1;
    const bool truncated = next >= max_episode_steps;
    const bool done = terminated | truncated;  // bitwise: no branch, so the CPU's lane loop vectorizes
    elapsed = done ? 0 : next;
    episode = episode + (uint32_t)done;
    return (int)terminated | ((int)truncated << 1);
}

// ---- the hashed draws (episode.py), keyed by (seed ^ salt, env, episode, component or step) ----
#define CH_RESET_SALT 0x3C6EF372u    // episode.RESET_SALT
#define CH_CTRL_SALT 0x6A09E667u     // episode.CONTROL_SALT
#define CH_NOISE_SALT_1 0xBB67AE85u  // episode.NOISE_SALTS
#define CH_NOISE_SALT_2 0xA54FF53Au
#define CH_RESET_NOISE 0.1f          // episode.RESET_NOISE
#define CH_TWO_PI 6.2831855f         // 2π rounded to float32, as numpy rounds (2.0 * math.pi) * u2's constant

// reset_uniform: (2 b + 1) 2⁻²⁴ for b the top 23 bits of the hash: exact in float32, in (0, 1).
CH_HD float ch_uniform(uint32_t salt, uint32_t seed, uint32_t env, uint32_t episode, uint32_t component) {
    return ((float)(cp_hash4(seed ^ salt, env, episode, component) >> 9) * 2.0f + 1.0f) * (1.0f / 16777216.0f);
}

// normal: Box–Muller, sqrt(−2 ln u1) cos(2π u2).
CH_HD float ch_normal(float u1, float u2) {
    float s, c;
    ch_sincos(CH_TWO_PI * u2, s, c);
    return sqrtf(-2.0f * logf(u1)) * c;
}

// hash_controls: the no-policy control, (hash4(seed ^ CH_CTRL_SALT, env, episode, elapsed) >> 8)
// 2⁻²³ − 1, uniform in [-1, 1): an exact float32 (a 24-bit integer scaled by a power of two,
// minus one), so no compiler flag can change it. The physics-only rollout (chain_rollout) keys it
// (seed, env, 0, step): the same bits as before the episodes existed.
CH_HD float ch_hash_ctrl(uint32_t seed, uint32_t env, uint32_t episode, uint32_t elapsed) {
    return (float)(cp_hash4(seed ^ CH_CTRL_SALT, env, episode, elapsed) >> 8) * (1.0f / 8388608.0f) - 1.0f;
}

// policy_noise: the Gaussian policy's standard normal at (episode, step in episode).
CH_HD float ch_policy_noise(uint32_t seed, uint32_t env, uint32_t episode, uint32_t elapsed) {
    return ch_normal(ch_uniform(CH_NOISE_SALT_1, seed, env, episode, elapsed),
                     ch_uniform(CH_NOISE_SALT_2, seed, env, episode, elapsed));
}

// reset_states: episode `episode`'s first state of env `env` into a row (`stride` apart): qpos
// 0.1 (2 u_c − 1) for components c = 0 .. n, qvel_i 0.1 normal(u_{n+1+2i}, u_{n+2+2i}). 2 u − 1
// is formed from the integer, (2 b + 1 − 2²³) 2⁻²³: the same exact float32 as numpy's 2.0 * u − 1.0.
template <int N>
CH_HD void ch_reset_row(float* row, int64_t stride, uint32_t seed, uint32_t env, uint32_t episode,
                        const ChainParams<N>& p) {
    const int n1 = p.n() + 1;
    ch_for<N>(0, n1, [&](int c) CH_LAMBDA {
        const int32_t b = (int32_t)(cp_hash4(seed ^ CH_RESET_SALT, env, episode, (uint32_t)c) >> 9);
        row[c * stride] = CH_RESET_NOISE * ((float)(2 * b + 1 - 8388608) * (1.0f / 8388608.0f));
    });
    ch_for<N>(0, n1, [&](int i) CH_LAMBDA {
        const uint32_t c = (uint32_t)(n1 + 2 * i);
        row[(n1 + i) * stride] = CH_RESET_NOISE * ch_normal(ch_uniform(CH_RESET_SALT, seed, env, episode, c),
                                                            ch_uniform(CH_RESET_SALT, seed, env, episode, c + 1));
    });
}

// After the physics of a step (the new state in `row`, the last stage's tip (x, y)): termination,
// reward and the counters (ch_end_of_step); the caller resets the row where the flags say done.
template <int N>
CH_HD int ch_env_finish(const float* row, int64_t stride, float x, float y, int32_t& elapsed, uint32_t& episode,
                        const ChainParams<N>& p, float& reward) {
    const bool terminated = ch_is_terminated<N>(y, p);
    reward = ch_reward<N>(x, y, row, stride, terminated, p);
    return ch_end_of_step(terminated, elapsed, episode, p.max_episode_steps);
}

// ---- advance: one environment step of one environment with a same-step reset ----
// ctrl (clipped by the actuator), frame_skip mj_steps, the tip of the last RK4 stage, termination,
// reward, truncation, the counters; final_obs (3n + 3 floats, or null) gets the observation of the
// new state before any reset; where the episode ended the row becomes the next episode's first
// state (ch_reset_row of the incremented episode). Returns the flags (bit 0 terminated, bit 1
// truncated). The CUDA kernel runs this per thread; the CPU build the same pieces, lanes innermost.
template <int N>
CH_HD int ch_env_step(float* row, int64_t stride, float ctrl, int32_t& elapsed, uint32_t& episode, uint32_t env,
                      uint32_t seed, const ChainParams<N>& p, float& reward, float* final_obs) {
    ChRow<N> qpos, qvel;
    ch_load_row<N>(row, stride, p, qpos, qvel);
    const float force = ch_actuator_force<N>(ctrl, p);
    ChRow<N> seen;  // the last RK4 stage's qpos, where v5 reads the tip
    seen[0] = qpos[0];
    for (int sub = 0; sub < p.frame_skip; ++sub) ch_rk4_step<N>(qpos, qvel, force, p, seen);
    float x, y;
    ch_tip<N>(seen, p, x, y);
    ch_store_row<N>(row, stride, p, qpos, qvel);
    if (final_obs) ch_observation<N>(row, stride, p, final_obs, 1);
    const int flags = ch_env_finish<N>(row, stride, x, y, elapsed, episode, p, reward);
    if (flags) ch_reset_row<N>(row, stride, seed, env, episode, p);
    return flags;
}
