// The host build of chain_kernel.cu (cuda_host.h): the kernels themselves, compiled by the C++
// compiler and launched over their grid on the CPU, for the tests (studylib.sims.chain.native:
// host_rollout, ChainNativeBackend(device="host-kernel")). Each launcher picks the kernel the
// arguments call for (the unrolled n, else _generic; the MLP kernel under CH_POLICY_MLP) and
// returns null, or the reason the launch failed.
#include "cuda_host.h"

#include "chain_kernel.cu"

// chain_rollout_<n>: physics only.
extern "C" const char* host_chain_rollout(unsigned int grid, unsigned int block, const ChainArgs* a) {
    if (!a || ch_check_args(*a) != CH_OK) return "invalid ChainArgs (chain_error_message says why)";
    const char* error = nullptr;
    const int build = ch_build_of(*a);
#define CH_LAUNCH(N) \
    if (build == N) cuda_host::launch(grid, block, [&] { chain_rollout_##N(*a); }, &error);
    CH_FOR_EACH_LINKS(CH_LAUNCH)
#undef CH_LAUNCH
    if (build == CH_GENERIC) cuda_host::launch(grid, block, [&] { chain_rollout_generic(*a); }, &error);
    return error;
}

// chain_episodes_<n> or chain_episodes_mlp_<n>; *done (if not null) gets the episodes that ended.
extern "C" const char* host_chain_episodes(unsigned int grid, unsigned int block, const ChainArgs* a,
                                           unsigned long long* done) {
    if (!a || ch_check_episode_args(*a) != CH_OK) return "invalid ChainArgs (chain_error_message says why)";
    unsigned long long count = 0;
    const char* error = nullptr;
    const int build = ch_build_of(*a);
    const bool mlp = a->policy == CH_POLICY_MLP;
    const ChainTrajectoryArgs none{};  // nothing recorded
#define CH_LAUNCH(N)                                                                                   \
    if (build == N)                                                                                    \
        cuda_host::launch(                                                                             \
            grid, block, [&] { mlp ? chain_episodes_mlp_##N(*a, none, &count) : chain_episodes_##N(*a, &count); }, \
            &error);
    CH_FOR_EACH_LINKS(CH_LAUNCH)
#undef CH_LAUNCH
    if (build == CH_GENERIC)
        cuda_host::launch(
            grid, block, [&] { mlp ? chain_episodes_mlp_generic(*a, none, &count) : chain_episodes_generic(*a, &count); },
            &error);
    if (done) *done = count;
    return error;
}

// chain_reset_generic: reset (a->reset_mask null) or restart.
extern "C" const char* host_chain_reset(unsigned int grid, unsigned int block, const ChainArgs* a) {
    if (!a) return "invalid ChainArgs";
    ChainArgs check = *a;
    check.num_steps = 0;
    check.policy = CH_POLICY_CTRL;
    if (ch_check_episode_args(check) != CH_OK) return "invalid ChainArgs (chain_error_message says why)";
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { chain_reset_generic(*a); }, &error);
    return error;
}

// chain_episodes_mlp_<n> recording its trajectory into *t; *done (if not null) gets the episodes
// that ended.
extern "C" const char* host_chain_collect(unsigned int grid, unsigned int block, const ChainArgs* a,
                                          const ChainTrajectoryArgs* t, unsigned long long* done) {
    if (!a || !t || ch_check_collect_args(*a, *t) != CH_OK)
        return "invalid ChainArgs or ChainTrajectoryArgs (chain_error_message says why)";
    unsigned long long count = 0;
    const char* error = nullptr;
    const int build = ch_build_of(*a);
#define CH_LAUNCH(N) \
    if (build == N) cuda_host::launch(grid, block, [&] { chain_episodes_mlp_##N(*a, *t, &count); }, &error);
    CH_FOR_EACH_LINKS(CH_LAUNCH)
#undef CH_LAUNCH
    if (build == CH_GENERIC) cuda_host::launch(grid, block, [&] { chain_episodes_mlp_generic(*a, *t, &count); }, &error);
    if (done) *done = count;
    return error;
}
