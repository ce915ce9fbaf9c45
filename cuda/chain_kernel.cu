// CUDA kernel: K environment steps of the n-link chain per launch, one thread per environment,
// its 2(N+1) floats in registers for all K steps (read and written once per launch). One entry
// point per instantiated N (CH_FOR_EACH_LINKS in chain.cuh): chain_rollout_1, chain_rollout_2, ...
// The dynamics are chain.cuh's, the same header the CPU build (chain_cpu.cpp) compiles; the
// argument is one ChainArgs by value (chain_args.h). Compiled here by NVRTC with CuPy's options
// (tests/test_chain_native.py) and, through cuda_host.h, by the host compiler for the tests
// (chain_kernel_host.cpp).
#include "chain.cuh"
#include "chain_args.h"

// The per-thread loop of every chain_rollout_N: K environment steps of frame_skip mj_steps each
// (chain.py's _steps, ch_physics_step's loop), the state in registers throughout.
template <int N>
__device__ __forceinline__ void ch_thread_rollout(const ChainArgs& a, long long i) {
    constexpr int N1 = N + 1;
    const ChainParams<N> p = ch_params_from_array<N>(a.params);
    float* row = a.state + i * 2 * N1;
    float qpos[N1], qvel[N1];
CH_UNROLL
    for (int j = 0; j < N1; ++j) {
        qpos[j] = row[j];
        qvel[j] = row[N1 + j];
    }
    for (int k = 0; k < a.num_steps; ++k) {
        const float force = ch_actuator_force<N>(ch_args_ctrl(a, i, k), p);
        for (int sub = 0; sub < p.frame_skip; ++sub) ch_rk4_step<N>(qpos, qvel, force, p);
    }
CH_UNROLL
    for (int j = 0; j < N1; ++j) {
        row[j] = qpos[j];
        row[N1 + j] = qvel[j];
    }
}

// The launcher checks the arguments (studylib.native.chain does, before any launch): a kernel
// given bad ones returns without touching memory.
#define CH_KERNEL(N)                                                      \
    extern "C" __global__ void chain_rollout_##N(const ChainArgs a) {     \
        const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; \
        if (a.links != N || ch_check_args(a) != CH_OK || i >= a.n) return; \
        ch_thread_rollout<N>(a, i);                                       \
    }
CH_FOR_EACH_LINKS(CH_KERNEL)
#undef CH_KERNEL
