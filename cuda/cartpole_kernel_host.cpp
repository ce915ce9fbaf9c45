// The host build of cartpole_kernel.cu (cuda_host.h): the kernel itself, compiled by the C++
// compiler and launched over its grid on the CPU, for the tests (studylib/native/kernel_host.py).
// Each launcher runs one entry point as a CUDA launch of `grid` blocks of `block` threads; it
// returns null, or the reason the launch failed.
#include "cuda_host.h"

#include "cartpole_kernel.cu"

extern "C" {

const char* host_cartpole_rollout(unsigned int grid, unsigned int block, const RolloutArgs* a) {
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { cartpole_rollout(*a); }, &error);
    return error;
}

const char* host_cartpole_reset(unsigned int grid, unsigned int block, const RolloutArgs* a) {
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { cartpole_reset(*a); }, &error);
    return error;
}

const char* host_cartpole_restart(unsigned int grid, unsigned int block, const RolloutArgs* a) {
    const char* error = nullptr;
    cuda_host::launch(grid, block, [&] { cartpole_restart(*a); }, &error);
    return error;
}

}  // extern "C"
