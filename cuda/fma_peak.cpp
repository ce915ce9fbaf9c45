// Peak FP32 multiply-add throughput of this CPU: the compute ceiling of the roofline
// (studylib/harness/roofline.py), measured independently of any CartPole code.
//
// Every OpenMP thread runs ACC independent chains acc = acc * a + b on SIMD vectors of W floats
// (GCC's vector extension, mapped to AVX-512 / AVX2 FMAs by -march=native). ACC chains hide
// the FMA latency (4 cycles x 2 ports = 8 in flight), so the loop is bound by FMA issue, not
// by latency. No memory is touched inside the loop. Flops = 2 * W * ACC * iterations * threads.
// Built automatically by studylib/native/build.py.
#include <omp.h>
#include <stdint.h>
#include <string.h>

namespace {
#if defined(__AVX512F__)
constexpr int W = 16;
#else
constexpr int W = 8;
#endif
constexpr int ACC = 16;  // independent accumulators per thread (AVX-512 has 32 vector registers)
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
#pragma GCC unroll 16
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

}  // extern "C"
