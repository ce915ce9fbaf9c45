// Peak FP32 multiply-add throughput of this CPU: the compute ceiling of the roofline
// (studylib/harness/roofline.py), measured independently of any CartPole code.
//
// Every OpenMP thread runs ACC independent chains acc = acc * a + b on SIMD vectors of W floats
// (GCC's vector extension, mapped to AVX-512 / AVX2 / NEON FMAs by -march=native). No memory is
// touched inside the loop. Flops = 2 * W * ACC * iterations * threads.
//
// How many accumulators (ACC): enough independent chains to hide the FMA latency, few enough that
// every chain and both constants stay in vector registers. A peak-rate core keeps latency x ports
// FMAs in flight: 4 cycles x 2 FMA ports = 8 chains at least (a little more covers 5-cycle FMAs
// and the loop's own overhead). The loop holds ACC accumulators plus the two constant vectors a
// and b, so ACC + 2 must not exceed the vector register file, or the compiler spills: some chains
// then go through the stack every iteration (a store, a reload and store-forwarding latency on
// the chain), and the "ceiling" measures the spills instead: 16 chains + 2 constants on AVX2's 16
// ymm registers ran at ~0.57x a spill-free loop on a Zen 3 host, ~0.8x on Sapphire Rapids. So ACC
// is 3/4 of the register file, leaving room for a, b and the compiler's temporaries:
//   AVX-512         32 zmm      W = 16  ACC = 24
//   AVX / AVX2      16 ymm      W = 8   ACC = 12
//   SSE (x86-64)    16 xmm      W = 4   ACC = 12  (AVX-less x86: no FMA, a multiply and an add)
//   aarch64 NEON    32 v        W = 4   ACC = 24
//   32-bit ARM NEON 16 q        W = 4   ACC = 12
//   anything else   assumed 16  W = 4   ACC = 12
// (32-bit x86 has only 8 vector registers: ACC = 6.) tests/test_fma_peak.py checks from the
// disassembly that the hot loop touches no stack with the AVX2 and the native register file.
// Built automatically by studylib/native/build.py.
#include <omp.h>
#include <stdint.h>
#include <string.h>

namespace {
#if defined(__AVX512F__)
constexpr int W = 16, VECTOR_REGISTERS = 32;
#elif defined(__AVX__)
constexpr int W = 8, VECTOR_REGISTERS = 16;
#elif defined(__SSE__)
constexpr int W = 4, VECTOR_REGISTERS = 16;
#elif defined(__aarch64__) && defined(__ARM_NEON)
constexpr int W = 4, VECTOR_REGISTERS = 32;
#elif defined(__ARM_NEON)
constexpr int W = 4, VECTOR_REGISTERS = 16;
#else
constexpr int W = 4, VECTOR_REGISTERS = 16;  // a guess: most SIMD ISAs have at least 16
#endif
#if defined(__i386__)
constexpr int REGISTERS = 8;  // x86 without the 64-bit mode's extra registers
#else
constexpr int REGISTERS = VECTOR_REGISTERS;
#endif
constexpr int ACC = REGISTERS * 3 / 4;  // independent accumulators per thread (see above)
static_assert(ACC + 2 <= REGISTERS, "the accumulators and the two constants must fit the register file");
static_assert(ACC <= 32, "the inner loop's unroll pragma below must cover every accumulator");
typedef float Lanes __attribute__((vector_size(W * sizeof(float))));
}  // namespace

extern "C" {

// Flops one call of fma_peak(iterations) performs (for the caller's flops/s).
double fma_peak_flops(long long iterations) {
    return 2.0 * W * ACC * (double)iterations * omp_get_max_threads();
}

// Runs the chains; returns a value derived from every accumulator so that none is dead code.
float fma_peak(long long iterations) {
    float total = 0.0f;
#pragma omp parallel reduction(+ : total)
    {
        Lanes acc[ACC];
        const Lanes a = Lanes{} + 0.999999f, b = Lanes{} + 1e-7f;
        for (int j = 0; j < ACC; ++j) acc[j] = Lanes{} + (float)(j + omp_get_thread_num());
        for (long long i = 0; i < iterations; ++i) {
            // Fully unrolled (32 >= ACC), so that acc[] lives in registers, not in memory.
#pragma GCC unroll 32
            for (int j = 0; j < ACC; ++j) acc[j] = acc[j] * a + b;
        }
        float lanes[W];
        for (int j = 0; j < ACC; ++j) {
            memcpy(lanes, &acc[j], sizeof lanes);
            for (int l = 0; l < W; ++l) total += lanes[l];
        }
    }
    return total;
}

// The accumulator count and SIMD width this build chose (for tests and reports).
int fma_peak_accumulators(void) { return ACC; }
int fma_peak_width(void) { return W; }

}  // extern "C"
