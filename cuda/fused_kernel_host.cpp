// The host build of fused_kernel.cu (cuda_host.h): the kernel itself, compiled by the C++
// compiler and launched over its grid on the CPU, for the tests (studylib/native/kernel_host.py).
// Each launcher runs one entry point as a CUDA launch of `grid` blocks of `block` threads; it
// returns null, or the reason the launch failed.
#include "cuda_host.h"

#include "fused_kernel.cu"

extern "C" {

const char* host_fused_rollout(unsigned int grid, unsigned int block, const RolloutArgs* a) {
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { fused_rollout(*a); }, &error);
    return error;
}

const char* host_fused_rollout_no_mlp(unsigned int grid, unsigned int block, const RolloutArgs* a) {
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { fused_rollout_no_mlp(*a); }, &error);
    return error;
}

const char* host_fused_reset(unsigned int grid, unsigned int block, const RolloutArgs* a) {
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { fused_reset(*a); }, &error);
    return error;
}

const char* host_fused_restart(unsigned int grid, unsigned int block, const RolloutArgs* a) {
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { fused_restart(*a); }, &error);
    return error;
}

const char* host_fused_collect(unsigned int grid, unsigned int block, const RolloutArgs* a, const TrajectoryArgs* t) {
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { fused_collect(*a, *t); }, &error);
    return error;
}

const char* host_fused_mlp_logits(unsigned int grid, unsigned int block, const float* obs, float* logits,
                                  const float* weights, long long n) {
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { fused_mlp_logits(obs, logits, weights, n); }, &error);
    return error;
}

}  // extern "C"
