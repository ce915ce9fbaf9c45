// The policy MLP 4 -> 64 -> 64 -> 2 (tanh; greedy argmax or a sampled action), one source for the
// host and the device.
//
// The forward pass the fused kernels run between simulation steps (cuda/fused_kernel.cu on the
// GPU, cuda/fused_cpu.cpp on the CPU): studylib/policy.py's mlp_logits, weight for weight.
// It is written once, as a template over the "lane" type T:
//   * CUDA: T = float. One thread is one environment; h1 (64 floats) lives in registers (every
//     loop is unrolled so that each index is a constant) and the weights are read from shared
//     memory, the same address across a warp (a broadcast).
//   * CPU: T = a vector of W floats, one per environment of a block (fused_cpu.cpp specializes
//     MlpLane for it). Each weight is broadcast from L1 against W environments at once, and the
//     second layer keeps JB neurons' accumulators in registers while h1 streams past once, so
//     every load of h1 feeds JB fused multiply-adds (register blocking, as a GEMM micro-kernel).
//
// Weights: one packed float array (studylib.native.pack_weights), each matrix row-major as
// x -> x @ w + b with w of shape (fan_in, fan_out), the layout of studylib.policy.MLPWeights.
#pragma once
#include "cartpole.cuh"  // CP_HD, the fixed-width integer types

#if defined(__CUDACC__)
#define MLP_HD __host__ __device__ __forceinline__
#define MLP_UNROLL _Pragma("unroll")
#else
#define MLP_HD inline
#define MLP_UNROLL _Pragma("GCC unroll 64")
#endif

#define MLP_IN 4
#define MLP_HIDDEN 64
#define MLP_OUT 2
#define MLP_OFF_W1 0                                      // (4, 64)
#define MLP_OFF_B1 (MLP_OFF_W1 + MLP_IN * MLP_HIDDEN)     // (64,)
#define MLP_OFF_W2 (MLP_OFF_B1 + MLP_HIDDEN)              // (64, 64)
#define MLP_OFF_B2 (MLP_OFF_W2 + MLP_HIDDEN * MLP_HIDDEN) // (64,)
#define MLP_OFF_W3 (MLP_OFF_B2 + MLP_HIDDEN)              // (64, 2)
#define MLP_OFF_B3 (MLP_OFF_W3 + MLP_HIDDEN * MLP_OUT)    // (2,)
#define MLP_NUM_PARAMS (MLP_OFF_B3 + MLP_OUT)             // 4610 floats, 18 KiB

// What the forward pass needs of its lane type beyond + and * (with float scalars): a splat of
// a scalar and a clamp. float here; the CPU's lane vector in fused_cpu.cpp.
template <class T>
struct MlpLane;

template <>
struct MlpLane<float> {
    static MLP_HD float splat(float v) { return v; }
    static MLP_HD float clamp(float x, float lo, float hi) { return fminf(fmaxf(x, lo), hi); }
};

// tanh as a rational minimax approximation: x * P(x^2) / Q(x^2), P of degree 4 and Q of degree 3
// in x^2 (a [9/6] rational), P(0) = Q(0) = 1 (exact slope at 0), on [-7.8, 7.8] and clamped
// outside, where tanh is within 3.4e-7 of +-1. Max abs error 4.9e-7 against tanh in float64 as
// evaluated in float32 with FMAs (tests/test_fused.py checks the compiled kernel's), relative
// error under 5e-7 near 0; well inside the 1e-4 logit margin the tests require. Its cost is what
// keeps the fused kernel below the FMA peak: the MLP's 128 tanh per sample add a third to the
// vector operations of its 4480 multiply-adds, so each operation counts. Here 4 + 3 FMAs, the
// clamp, the square, a multiply and one division (studylib.costs.MLP_TANH_OPERATIONS): two FMAs
// fewer than the [13/6] rational of Eigen's generic_fast_tanh_float used before (error 2.9e-7);
// the fused rollout at N = 2^16 went from 55.6% to 58% of the FMA ceiling on an AVX-512 Xeon, the
// MLP alone 7% faster on AVX2. Fitted by differential correction (one linear programme per step)
// on [0, 7.8] with P(7.8) / Q(7.8) held near 1 (what the clamp returns beyond). The same
// arithmetic on the GPU.
template <class T>
MLP_HD T mlp_tanh(T x) {
    const float bound = 7.8f;
    x = MlpLane<T>::clamp(x, -bound, bound);
    const T x2 = x * x;
    T p = x2 * -6.154872e-09f + 7.168875e-06f;
    p = p * x2 + 0.002697204f;
    p = p * x2 + 0.12713088f;
    p = p * x2 + 1.0f;
    T q = x2 * 0.00019685004f + 0.022853646f;
    q = q * x2 + 0.46046272f;
    q = q * x2 + 1.0f;
    return x * p / q;
}

// Greedy action from the two logits; ties go to action 0, as argmax in numpy, torch and jax.
CP_HD int mlp_greedy_action(float logit0, float logit1) { return logit1 > logit0 ? 1 : 0; }

// ---- sampling: the stochastic policy of in-kernel collection (fused_collect) ----
// The uniform of one draw, u in [0, 1) on a grid of 2^24 values, from the counter hash of
// cartpole.cuh keyed by (seed ^ MLP_SAMPLE_SALT, env, episode, step in episode): the episode and
// step counters advance with every step an environment takes, so every draw of a run has its own
// key (different in every call), the same seed gives the same draws, and a trajectory does not
// depend on how its steps are split into calls. The salt keeps the draws apart from the reset
// draws (seed ^ 0xA511E9B3) and the no-policy actions (seed). studylib.native.sample_uniforms
// reproduces them bit for bit.
#define MLP_SAMPLE_SALT 0x3C6EF372u
CP_HD float mlp_sample_uniform(uint32_t seed, uint32_t env, uint32_t episode, uint32_t elapsed) {
    return (float)(cp_hash4(seed ^ MLP_SAMPLE_SALT, env, episode, elapsed) >> 8) * (1.0f / 16777216.0f);
}

// An action drawn from softmax(logit0, logit1) with the uniform u: action 1 where
// u < p1 = sigmoid(logit1 - logit0) (studylib.train.collectors.sample_actions' rule), and logp, its
// log-probability, as log sigmoid(x) = min(x, 0) - log1p(exp(-|x|)) with x = +-(logit1 - logit0):
// exp of a non-positive number, so no overflow and no cancellation whatever the logits.
CP_HD int mlp_sample(float logit0, float logit1, float u, float& logp) {
    const float d = logit1 - logit0;
    const float e = expf(-fabsf(d));
    const float p1 = d >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    const int action = u < p1 ? 1 : 0;
    logp = fminf(action ? d : -d, 0.0f) - log1pf(e);
    return action;
}

// Forward pass of an MLP in -> 64 -> 64 -> OUT (tanh hidden layers, a linear last layer) on the
// packed weights w1 (in, 64), b1, w2 (64, 64), b2, w3 (64, OUT), b3 (the MLP_OFF_* layout for any
// input width): out[o] = h2 . w3[:, o] + b3[o]. IN: the input width as a constant (loops unrolled),
// or 0 for a width `in` known at run time (a plain loop; the n-link chain's generic build, whose
// observation has 3n + 3 floats). JB = neurons of layer 2 whose accumulators are kept in registers
// while h1 is read once (must divide 64). studylib.policy's MLP for every observation and action
// width; the CartPole's is mlp_forward below, the chain's Gaussian mean cuda/chain_cpu.cpp's and
// cuda/chain_kernel.cu's.
template <int IN, int OUT, int JB, class T>
MLP_HD void mlp_forward_sized(const T* obs, int in, const float* __restrict__ w, T* out) {
    static_assert(MLP_HIDDEN % JB == 0, "JB must divide the hidden width");
    if (IN > 0) in = IN;
    const int off_b1 = in * MLP_HIDDEN, off_w2 = off_b1 + MLP_HIDDEN, off_b2 = off_w2 + MLP_HIDDEN * MLP_HIDDEN;
    const int off_w3 = off_b2 + MLP_HIDDEN, off_b3 = off_w3 + MLP_HIDDEN * OUT;
    T h1[MLP_HIDDEN];
    if constexpr (IN > 0) {
        MLP_UNROLL
        for (int j = 0; j < MLP_HIDDEN; ++j) {  // layer 1: in -> 64, tanh
            T a = obs[0] * w[j] + w[off_b1 + j];
            MLP_UNROLL
            for (int i = 1; i < IN; ++i) a = a + obs[i] * w[i * MLP_HIDDEN + j];
            h1[j] = mlp_tanh(a);
        }
    } else {
        // A run-time width: the loop over inputs cannot be unrolled, so each neuron's sum would be
        // one chain of dependent multiply-adds (latency-bound: 3x layer 2's time at in = 27 on the
        // CPU). Instead L1B neurons' sums advance together, one input at a time (independent
        // chains, as layer 2's register blocks).
        constexpr int L1B = 16;
        MLP_UNROLL
        for (int j0 = 0; j0 < MLP_HIDDEN; j0 += L1B) {
            T acc[L1B];
            MLP_UNROLL
            for (int jj = 0; jj < L1B; ++jj) acc[jj] = obs[0] * w[j0 + jj] + w[off_b1 + j0 + jj];
            for (int i = 1; i < in; ++i) {
                const T x = obs[i];
                const float* __restrict__ row = w + i * MLP_HIDDEN + j0;
                MLP_UNROLL
                for (int jj = 0; jj < L1B; ++jj) acc[jj] = acc[jj] + x * row[jj];
            }
            MLP_UNROLL
            for (int jj = 0; jj < L1B; ++jj) h1[j0 + jj] = mlp_tanh(acc[jj]);
        }
    }
    T l[OUT];
    MLP_UNROLL
    for (int o = 0; o < OUT; ++o) l[o] = MlpLane<T>::splat(w[off_b3 + o]);
#if defined(__CUDACC__)
#pragma unroll 1
#endif
    for (int j0 = 0; j0 < MLP_HIDDEN; j0 += JB) {  // layer 2: 64 -> 64, JB neurons at a time
        T acc[JB];
        MLP_UNROLL
        for (int jj = 0; jj < JB; ++jj) acc[jj] = MlpLane<T>::splat(w[off_b2 + j0 + jj]);
        MLP_UNROLL
        for (int i = 0; i < MLP_HIDDEN; ++i) {
            const T h = h1[i];
            const float* __restrict__ row = w + off_w2 + i * MLP_HIDDEN + j0;
            MLP_UNROLL
            for (int jj = 0; jj < JB; ++jj) acc[jj] = acc[jj] + h * row[jj];
        }
        MLP_UNROLL
        for (int jj = 0; jj < JB; ++jj) {  // tanh, then layer 3 (64 -> OUT) accumulates at once
            const T h2 = mlp_tanh(acc[jj]);
            MLP_UNROLL
            for (int o = 0; o < OUT; ++o) l[o] = l[o] + h2 * w[off_w3 + (j0 + jj) * OUT + o];
        }
    }
    MLP_UNROLL
    for (int o = 0; o < OUT; ++o) out[o] = l[o];
}

// Forward pass: logits of obs (x, x_dot, theta, theta_dot), the CartPole's 4 -> 64 -> 64 -> 2.
// JB = neurons of layer 2 whose accumulators are kept in registers while h1 is read once (must
// divide 64).
template <int JB, class T>
MLP_HD void mlp_forward(const T obs[MLP_IN], const float* __restrict__ w, T& logit0, T& logit1) {
    T logits[MLP_OUT];
    mlp_forward_sized<MLP_IN, MLP_OUT, JB, T>(obs, MLP_IN, w, logits);
    logit0 = logits[0];
    logit1 = logits[1];
}
