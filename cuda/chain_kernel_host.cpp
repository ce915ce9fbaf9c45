// The host build of chain_kernel.cu (cuda_host.h): the kernel itself, compiled by the C++ compiler
// and launched over its grid on the CPU, for the tests (studylib.native.chain.host_rollout).
// host_chain_rollout(grid, block, args) launches chain_rollout_<args->links>; it returns null, or
// the reason the launch failed.
#include "cuda_host.h"

#include "chain_kernel.cu"

extern "C" const char* host_chain_rollout(unsigned int grid, unsigned int block, const ChainArgs* a) {
    if (!a || ch_check_args(*a) != CH_OK) return "invalid ChainArgs (chain_error_message says why)";
    const char* error = nullptr;
#define CH_LAUNCH(N) \
    if (a->links == N) cuda_host::launch(grid, block, [&] { chain_rollout_##N(*a); }, &error);
    CH_FOR_EACH_LINKS(CH_LAUNCH)
#undef CH_LAUNCH
    return error;
}
