// A host build of the CUDA kernels: just enough of CUDA's execution model for the C++ compiler to
// build cartpole_kernel.cu and fused_kernel.cu for the CPU and run them there, so the GPU-only
// code (cp_thread_rollout, the kernels' entry points, load_weights_shared, the warp-level episode
// count) executes in every test run on machines without a GPU. A test instrument, not a fast
// path: the CPU twins (cartpole_cpu.cpp, fused_cpu.cpp) are the fast CPU builds.
//
// Include it before a .cu file in a host translation unit (cartpole_kernel_host.cpp,
// fused_kernel_host.cpp); studylib/native/build.py builds those like the CPU twins and
// studylib/native/kernel_host.py drives them. What it maps:
//   __global__ / __device__ / __forceinline__  plain (inline) functions
//   __shared__                                 static storage, NaN-filled at every block's start
//   blockIdx, blockDim, threadIdx, gridDim     set by cuda_host::launch for the running thread
//   __syncthreads()                            a barrier over the block's threads (below)
//   __activemask(), __reduce_add_sync()        warp collectives over the lanes still running
//   atomicAdd                                  a plain add (the launch is serial)
// cuda_host::launch runs the grid's blocks one after the other; within a block every CUDA thread
// is a fiber (ucontext) on its own stack, run until it reaches a barrier, a warp collective or its
// end, so a block advances phase by phase: every thread finishes the phase before __syncthreads()
// before any thread starts the next one, as on the GPU. A warp collective waits until every lane
// of the warp that has not returned is at one (the warp fully converged, which the GPU may but need
// not do: the kernels must be, and are, correct either way). A thread that returns before a
// barrier the others reach is the GPU's undefined behaviour; here the launch fails with an error.
// One-dimensional grids and blocks only (x), the kernels' launch shape; a warp is 32 consecutive x.
#pragma once
#if defined(__CUDACC__)
#error "cuda_host.h is the host build of the kernels: compile with the host C++ compiler, not nvcc"
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <functional>
#include <memory>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// Every __shared__ array goes to one ELF section, which the linker brackets with
// __start_/__stop_ symbols: each block starts with that memory filled with NaNs, as a GPU block's
// shared memory starts with whatever was there, so a read before the block's own writes and its
// barrier shows up in the results instead of finding the previous block's data.
#define __shared__ static __attribute__((section("cuda_host_shared")))
extern "C" char __start_cuda_host_shared[] __attribute__((weak, visibility("hidden")));  // null without a __shared__ array
extern "C" char __stop_cuda_host_shared[] __attribute__((weak, visibility("hidden")));

struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};

// The running CUDA thread's coordinates: external linkage, so the compiler rereads them after
// every call that may switch fibers (the scheduler sets them before it resumes a thread).
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace cuda_host {

constexpr int kWarpSize = 32;
constexpr size_t kStackBytes = 256 * 1024;  // per CUDA thread; the kernels need a few KiB

enum class Wait { kRunning, kBarrier, kWarp, kDone };

struct Thread {
    ucontext_t context;
    Wait wait = Wait::kRunning;
    bool asks_mask = false;        // at __activemask() (else at __reduce_add_sync)
    unsigned int warp_mask = 0;    // the mask a __reduce_add_sync names
    unsigned int warp_value = 0;   // what the thread brings to a warp collective
    unsigned int warp_result = 0;  // what the collective gives it back
};

struct Block {
    ucontext_t scheduler;
    std::vector<Thread> threads;
    int current = -1;
    bool failed = false;
    const char* error = nullptr;
    std::function<void()> kernel;
};

inline Block*& block() {
    static Block* b = nullptr;
    return b;
}

// Back to the scheduler until the collective this thread waits at is released.
inline void suspend(Wait wait) {
    Block& b = *block();
    Thread& t = b.threads[b.current];
    t.wait = wait;
    swapcontext(&t.context, &b.scheduler);
}

inline void thread_entry() {
    block()->kernel();
    Block& b = *block();
    b.threads[b.current].wait = Wait::kDone;
    // the uc_link of the context returns to the scheduler
}

// Release a warp collective: when every lane of warp w that has not returned waits at one, each
// gets mask (the lanes there: __activemask) or the sum of their values (__reduce_add_sync, whose
// mask must name exactly those lanes). Returns whether it released them; a mismatch fails the block.
inline bool release_warp(Block& b, int w) {
    const int first = w * kWarpSize;
    const int last = first + kWarpSize < (int)b.threads.size() ? first + kWarpSize : (int)b.threads.size();
    unsigned int mask = 0, sum = 0;
    for (int i = first; i < last; ++i) {
        const Wait s = b.threads[i].wait;
        if (s == Wait::kRunning || s == Wait::kBarrier) return false;
        if (s == Wait::kWarp) {
            mask |= 1u << (i - first);
            sum += b.threads[i].warp_value;
        }
    }
    if (!mask) return false;
    for (int i = first; i < last; ++i) {
        Thread& t = b.threads[i];
        if (t.wait != Wait::kWarp) continue;
        if (t.asks_mask != b.threads[first + __builtin_ctz(mask)].asks_mask || (!t.asks_mask && t.warp_mask != mask)) {
            b.failed = true;
            b.error = "a warp collective's mask is not the set of lanes that reach it";
            return false;
        }
        t.warp_result = t.asks_mask ? mask : sum;
        t.wait = Wait::kRunning;
    }
    return true;
}

// Run kernel() as a grid of grid_dim blocks of block_dim threads; false (and *error) if a block
// could not finish (a barrier some thread never reached). Serial: one block, one fiber at a time.
inline bool launch(unsigned int grid_dim, unsigned int block_dim, std::function<void()> kernel, const char** error) {
    Block b;
    b.kernel = std::move(kernel);
    b.threads.resize(block_dim);
    std::unique_ptr<char[]> stacks(new char[(size_t)block_dim * kStackBytes]);  // untouched until used
    block() = &b;
    gridDim.x = grid_dim;
    blockDim.x = block_dim;
    for (unsigned int bx = 0; bx < grid_dim && !b.failed; ++bx) {
        blockIdx.x = bx;
        if (__start_cuda_host_shared)
            memset(__start_cuda_host_shared, 0xFF, (size_t)(__stop_cuda_host_shared - __start_cuda_host_shared));
        for (unsigned int tx = 0; tx < block_dim; ++tx) {
            Thread& t = b.threads[tx];
            t = Thread{};
            getcontext(&t.context);
            t.context.uc_stack.ss_sp = stacks.get() + (size_t)tx * kStackBytes;
            t.context.uc_stack.ss_size = kStackBytes;
            t.context.uc_link = &b.scheduler;
            makecontext(&t.context, thread_entry, 0);
        }
        for (;;) {  // one phase per pass: run every runnable thread until it waits or ends
            bool ran = false;
            for (unsigned int tx = 0; tx < block_dim; ++tx) {
                if (b.threads[tx].wait != Wait::kRunning) continue;
                b.current = (int)tx;
                threadIdx.x = tx;
                swapcontext(&b.scheduler, &b.threads[tx].context);
                ran = true;
            }
            bool released = false;
            for (int w = 0; w * kWarpSize < (int)block_dim; ++w) released |= release_warp(b, w);
            if (b.failed) break;
            if (released || ran) continue;
            int done = 0, at_barrier = 0;
            for (const Thread& t : b.threads) {
                done += t.wait == Wait::kDone;
                at_barrier += t.wait == Wait::kBarrier;
            }
            if (done == (int)block_dim) break;
            if (at_barrier + done == (int)block_dim && done == 0) {
                for (Thread& t : b.threads) t.wait = Wait::kRunning;  // __syncthreads: all arrived
                continue;
            }
            b.failed = true;
            b.error = done ? "a thread returned before a __syncthreads() the others reached"
                           : "the block's threads wait at different collectives";
            break;
        }
    }
    block() = nullptr;
    if (b.failed && error) *error = b.error;
    return !b.failed;
}

}  // namespace cuda_host

inline void __syncthreads() { cuda_host::suspend(cuda_host::Wait::kBarrier); }

inline unsigned int __activemask() {
    cuda_host::Block& b = *cuda_host::block();
    b.threads[b.current].asks_mask = true;
    cuda_host::suspend(cuda_host::Wait::kWarp);
    return b.threads[b.current].warp_result;
}

// The sum over the lanes in `mask`, which must be exactly the lanes that reach it together.
inline unsigned int __reduce_add_sync(unsigned int mask, unsigned int value) {
    cuda_host::Block& b = *cuda_host::block();
    cuda_host::Thread& t = b.threads[b.current];
    t.asks_mask = false;
    t.warp_mask = mask;
    t.warp_value = value;
    cuda_host::suspend(cuda_host::Wait::kWarp);
    return b.threads[b.current].warp_result;
}

inline int __ffs(unsigned int x) { return __builtin_ffs((int)x); }

inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
    const unsigned long long old = *address;
    *address = old + value;
    return old;
}
