// The one argument of every chain entry point, declared once for all three builds: chain_cpu.cpp
// and chain_kernel_host.cpp take `const ChainArgs*` (ctypes), chain_kernel.cu takes it by value
// (CuPy passes a size-one numpy array as the kernel parameter's bytes). Its Python twin is
// studylib.sims.chain.native.ChainArgs; tests compare the layouts through chain_args_layout()
// (chain_cpu.cpp) and the kernel's PTX parameter size. 8-byte fields first: no padding.
//
// Two families of entry points read it:
//   * physics only (chain_rollout, chain_physics_step; chain_rollout_<n> kernels): state, ctrl,
//     params, n, links, num_steps, seed, first_step, policy (CTRL or HASH: ch_hash_ctrl keyed
//     (seed, env, 0, first_step + k)); the episode fields are not read;
//   * episodes (chain_episodes, chain_reset, chain_restart, chain_observe, chain_mlp_actions;
//     chain_episodes_<n> kernels): also elapsed, episode, flags_out, reward_out, final_obs (null: not
//     recorded), weights and action_std (CH_POLICY_MLP), reset_mask (chain_restart), obs_out
//     (chain_observe, chain_mlp_actions).
#pragma once
#include "chain_episode.cuh"  // and through it chain.cuh

struct ChainArgs {
    float* state;          // (n, 2(N+1)) row-major: qpos (x, θ_1..θ_N), qvel; stepped in place
    const float* ctrl;     // (num_steps, n) step-major, for CH_POLICY_CTRL; else unused (may be null)
    const float* params;   // CH_NUM_PARAM_FLOATS(N) floats (studylib.sims.chain.native.params_array)
    long long n;           // environments
    int32_t* elapsed;      // (n,) steps into the current episode (episodes)
    uint32_t* episode;     // (n,) episodes started (episodes)
    uint8_t* flags_out;    // (n,) the last step's flags: bit 0 terminated, bit 1 truncated (episodes)
    float* reward_out;     // (n,) the last step's reward (episodes)
    float* final_obs;      // (n, 3N+3): the last step's observation before any reset, or null
    const float* weights;  // the MLP (CH_POLICY_MLP): w1, b1, w2, b2, w3, b3 as cuda/mlp.cuh packs them
    const uint8_t* reset_mask;  // (n,) chain_restart: which environments start their next episode
    float* obs_out;        // (n, 3N+3) chain_observe's observations; (n,) chain_mlp_actions' actions
    int32_t links;         // N: 1 .. CH_MAX_LINKS
    int32_t num_steps;     // K: environment steps (frame_skip mj_steps each) in this call
    uint32_t seed;         // keys the hashed draws (controls, resets, the policy's noise)
    uint32_t first_step;   // physics only: the step index of this call's first step (ch_hash_ctrl's counter)
    int32_t policy;        // CH_POLICY_*
    float action_std;      // CH_POLICY_MLP: exp(log_std), the Gaussian policy's standard deviation
    int32_t generic;       // 1: the run-time-n build at every n (tests compare it with the unrolled one)
    int32_t reserved;      // 0 (keeps the size a multiple of 8 on every compiler)
};

static_assert(sizeof(ChainArgs) == 12 * 8 + 8 * 4, "ChainArgs must have no padding");

// The control of environment i at step k of a physics-only call.
CP_HD float ch_args_ctrl(const ChainArgs& a, long long i, int k) {
    return a.policy == CH_POLICY_CTRL ? CP_LDG(a.ctrl + (long long)k * a.n + i)
                                      : ch_hash_ctrl(a.seed, (uint32_t)i, 0u, a.first_step + (uint32_t)k);
}

// Error codes every entry point returns (0: done); the messages are chain_error_message's.
#define CH_OK 0
#define CH_ERR_LINKS 1       // links is not in 1 .. CH_MAX_LINKS
#define CH_ERR_NEGATIVE_N 2  // n < 0
#define CH_ERR_NULL 3        // state or params null (n > 0), ctrl null under CH_POLICY_CTRL, an episode array null
#define CH_ERR_STEPS 4       // num_steps < 0 (or mj_steps < 0)
#define CH_ERR_POLICY 5      // policy not one the entry point takes

// Whether the build steps n links (every n from 1 to CH_MAX_LINKS: the unrolled ones, the rest generic).
CP_HD bool ch_links_supported(int links) { return links >= 1 && links <= CH_MAX_LINKS; }

// Whether n is one of CH_FOR_EACH_LINKS (unrolled); the others take the run-time-n build.
CP_HD bool ch_links_unrolled(int links) {
#define CH_IS_LINKS(N) if (links == N) return true;
    CH_FOR_EACH_LINKS(CH_IS_LINKS)
#undef CH_IS_LINKS
    return false;
}

// The N-build that steps these arguments: links itself if unrolled (and not a->generic), else CH_GENERIC.
CP_HD int ch_build_of(const ChainArgs& a) { return !a.generic && ch_links_unrolled(a.links) ? a.links : CH_GENERIC; }

// The physics-only check (chain_rollout, chain_physics_step): CH_OK or the first CH_ERR_* that applies.
CP_HD int ch_check_args(const ChainArgs& a) {
    if (!ch_links_supported(a.links)) return CH_ERR_LINKS;
    if (a.n < 0) return CH_ERR_NEGATIVE_N;
    if (a.num_steps < 0) return CH_ERR_STEPS;
    if (a.policy != CH_POLICY_CTRL && a.policy != CH_POLICY_HASH) return CH_ERR_POLICY;
    if (a.n > 0 && a.num_steps > 0 && (!a.state || !a.params || (a.policy == CH_POLICY_CTRL && !a.ctrl)))
        return CH_ERR_NULL;
    return CH_OK;
}

// The episodes' check (chain_episodes; with num_steps 0 and policy CTRL, the reset and restart
// entries'): the physics-only one, the MLP policy allowed (its weights required), and the counters.
CP_HD int ch_check_episode_args(const ChainArgs& a) {
    if (!ch_links_supported(a.links)) return CH_ERR_LINKS;
    if (a.n < 0) return CH_ERR_NEGATIVE_N;
    if (a.num_steps < 0) return CH_ERR_STEPS;
    if (a.policy != CH_POLICY_CTRL && a.policy != CH_POLICY_HASH && a.policy != CH_POLICY_MLP) return CH_ERR_POLICY;
    if (a.n > 0 && (!a.state || !a.params || !a.elapsed || !a.episode)) return CH_ERR_NULL;
    if (a.n > 0 && a.num_steps > 0 &&
        (!a.flags_out || !a.reward_out || (a.policy == CH_POLICY_CTRL && !a.ctrl) ||
         (a.policy == CH_POLICY_MLP && !a.weights)))
        return CH_ERR_NULL;
    return CH_OK;
}
