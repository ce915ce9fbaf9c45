// The one argument of every chain entry point, declared once for all three builds: chain_cpu.cpp
// and chain_kernel_host.cpp take `const ChainArgs*` (ctypes), chain_kernel.cu takes it by value
// (CuPy passes a size-one numpy array as the kernel parameter's bytes). Its Python twin is
// studylib.native.chain.ChainArgs; tests compare the layouts through chain_args_layout()
// (chain_cpu.cpp) and the kernel's PTX parameter size. 8-byte fields first: no padding.
#pragma once
#include "chain.cuh"

struct ChainArgs {
    float* state;         // (n, 2(N+1)) row-major: qpos (x, θ_1..θ_N), qvel; stepped in place
    const float* ctrl;    // (num_steps, n) step-major, for CH_POLICY_CTRL; else unused (may be null)
    const float* params;  // CH_NUM_PARAM_FLOATS(N) floats (studylib.native.chain.params_array)
    long long n;          // environments
    int32_t links;        // N: must be one CH_FOR_EACH_LINKS instantiates
    int32_t num_steps;    // K: environment steps (frame_skip mj_steps each) in this call
    uint32_t seed;        // keys ch_hash_ctrl (CH_POLICY_HASH)
    uint32_t first_step;  // the step index of this call's first step (ch_hash_ctrl's counter)
    int32_t policy;       // CH_POLICY_*
    int32_t reserved;     // 0 (keeps the size a multiple of 8 on every compiler)
};

static_assert(sizeof(ChainArgs) == 4 * 8 + 6 * 4, "ChainArgs must have no padding");

// The control of environment i at step k of the call.
CP_HD float ch_args_ctrl(const ChainArgs& a, long long i, int k) {
    return a.policy == CH_POLICY_CTRL ? CP_LDG(a.ctrl + (long long)k * a.n + i)
                                      : ch_hash_ctrl(a.seed, (uint32_t)i, a.first_step + (uint32_t)k);
}

// Error codes every entry point returns (0: done); the messages are chain_error_message's.
#define CH_OK 0
#define CH_ERR_LINKS 1       // links is not an instantiated N
#define CH_ERR_NEGATIVE_N 2  // n < 0
#define CH_ERR_NULL 3        // state or params null (n > 0), or ctrl null under CH_POLICY_CTRL
#define CH_ERR_STEPS 4       // num_steps < 0 (or mj_steps < 0)
#define CH_ERR_POLICY 5      // policy not CH_POLICY_CTRL or CH_POLICY_HASH

// Whether N is instantiated (CH_FOR_EACH_LINKS).
CP_HD bool ch_links_instantiated(int links) {
#define CH_IS_LINKS(N) if (links == N) return true;
    CH_FOR_EACH_LINKS(CH_IS_LINKS)
#undef CH_IS_LINKS
    return false;
}

// The arguments' check, shared by every entry point: CH_OK or the first CH_ERR_* that applies.
CP_HD int ch_check_args(const ChainArgs& a) {
    if (!ch_links_instantiated(a.links)) return CH_ERR_LINKS;
    if (a.n < 0) return CH_ERR_NEGATIVE_N;
    if (a.num_steps < 0) return CH_ERR_STEPS;
    if (a.policy != CH_POLICY_CTRL && a.policy != CH_POLICY_HASH) return CH_ERR_POLICY;
    if (a.n > 0 && a.num_steps > 0 && (!a.state || !a.params || (a.policy == CH_POLICY_CTRL && !a.ctrl)))
        return CH_ERR_NULL;
    return CH_OK;
}
