// CPU build of the fused kernel (cuda/fused_kernel.cu): policy inference and simulation in one
// call, K steps, from the same headers (cartpole.cuh, mlp.cuh) the GPU kernel compiles.
//
// Design. The block loop of cpu_rollout.h (shared with cartpole_cpu.cpp, `cpp`): per block and
// step, the MLP on the block's CartPoles (their observations) chooses the forces, then the physics,
// termination and same-step resets of cartpole.cuh. Nothing leaves the core between steps: the
// block's state, its activations and the weights (18 KiB) stay in L1; no Python, no framework.
// The MLP runs as a GEMM micro-kernel (mlp_tile), lanes over environments: E SIMD vectors of them
// (a Tile<E>) go through the whole MLP together; layer 2 (64 x 64, 90% of the flops) JB neurons at
// a time, E x JB accumulators in registers while k runs over the 64 inputs, each weight broadcast
// once (vbroadcastss) to feed E FMAs. The tile fills the ISA's register file without a spill
// (tests/test_flops.py reads the inner loop's disassembly):
//   AVX-512  32 zmm  VL = 16  E = 3  JB = 8   blocks of 48 environments
//   AVX/AVX2 16 ymm  VL = 8   E = 3  JB = 4   blocks of 24 environments
// Smaller calls, and the policies without the MLP, take blocks of CP_CPU_LANES (16), as cpp does.
// The weights are read where studylib.native.pack_weights puts them (w2 row-major, fan_in x
// fan_out: the JB weights of one k contiguous, the order the tile reads them).
// Each lane computes mlp.cuh's mlp_forward<JB> for one environment: the same operations in the same
// order (k ascending, one FMA per term, a correctly rounded division in mlp_tanh), so the logits do
// not depend on the tile, the block or the vector width, and agree with the CUDA kernel's host
// build to float rounding. What keeps the kernel below the FMA peak is the tanh (128 per sample
// beside 4480 FMAs; studylib.costs.fma_port_bound); the measurements, and the variants tried and
// not kept, are benchmarks/fused_fma_share.py's.
//
// fused_collect is the same loop with the MLP as a stochastic policy (actions sampled from the
// softmax of its logits, mlp.cuh's mlp_sample) and every step's trajectory written
// (trajectory_args.h): how PPO collects with `fused` (studylib.train.collectors.FusedCollector).
// Built automatically by studylib/native/build.py; called through ctypes by studylib/native/backends.py.
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__AVX512DQ__)
#include <immintrin.h>
#endif

#include "cartpole.cuh"
#include "cpu_rollout.h"
#include "mlp.cuh"
#include "rollout_args.h"
#include "trajectory_args.h"

namespace {
// The SIMD width (floats per vector register) and the MLP's register tiles, per ISA (above). A
// tile's accumulators (E x JB vectors), its E vectors of h1[k] and the broadcast weight must fit
// the vector register file, or the inner loop spills.
#if defined(__AVX512F__)
constexpr int VL = 16, WIDE_E = 3, WIDE_JB = 8, NARROW_JB = 16;  // narrow: E = 1, 16 + 1 + 1 zmm
#elif defined(__AVX__)
constexpr int VL = 8, WIDE_E = 3, WIDE_JB = 4, NARROW_JB = 4;  // narrow: E = 2, 8 + 2 + 1 ymm
#elif defined(__aarch64__)
constexpr int VL = 4, WIDE_E = 3, WIDE_JB = 8, NARROW_JB = 4;  // NEON, 32 registers; narrow: E = 4
#else
constexpr int VL = 4, WIDE_E = 3, WIDE_JB = 4, NARROW_JB = 2;  // SSE and the rest, 16 registers assumed
#endif
#if defined(FUSED_TILE_E) && defined(FUSED_TILE_JB)  // another wide tile (for measurements)
constexpr int TILE_E = FUSED_TILE_E, TILE_JB = FUSED_TILE_JB;
#else
constexpr int TILE_E = WIDE_E, TILE_JB = WIDE_JB;
#endif
constexpr int NARROW_E = CP_CPU_LANES / VL;  // the narrow blocks: CP_CPU_LANES environments, as cpp
static_assert(NARROW_E * VL == CP_CPU_LANES, "the narrow block is cpp's block of CP_CPU_LANES lanes");

// One SIMD register of floats: GCC's vector extension, which maps to AVX-512 / AVX2 / NEON.
typedef float Vec __attribute__((vector_size(VL * sizeof(float))));

inline Vec load_vec(const float* p) {
    Vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

// E vectors of environments: the lane type of mlp.cuh's mlp_tanh (MlpLane below) and of the
// micro-kernel, done vector by vector; inlined, a Tile lives in registers. An operation with a
// float scalar broadcasts the scalar once for the E vectors.
template <int E>
struct Tile {
    Vec v[E];
};

#define TILE_ALWAYS __attribute__((always_inline)) inline
#define TILE_EACH _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e)

template <int E>
TILE_ALWAYS Tile<E> operator+(Tile<E> a, const Tile<E>& b) {
    TILE_EACH a.v[e] = a.v[e] + b.v[e];
    return a;
}
template <int E>
TILE_ALWAYS Tile<E> operator*(Tile<E> a, const Tile<E>& b) {
    TILE_EACH a.v[e] = a.v[e] * b.v[e];
    return a;
}
// The quotient correctly rounded, as the GPU's div.rn and the host's divss. Under -ffast-math GCC
// turns a vector division into vrcp14ps and a Newton step (6 uops on the FMA ports, and ~1 ulp
// off); vdivps is 3 uops and the rest in the divider, beside the FMAs: as fast here, and exact.
inline Vec div_vec(Vec a, Vec b) {
#if defined(__AVX__)
    Vec q;
    asm("vdivps %2, %1, %0" : "=v"(q) : "v"(a), "v"(b));
    return q;
#else
    return a / b;
#endif
}
template <int E>
TILE_ALWAYS Tile<E> operator/(Tile<E> a, const Tile<E>& b) {
    TILE_EACH a.v[e] = div_vec(a.v[e], b.v[e]);
    return a;
}
template <int E>
TILE_ALWAYS Tile<E> operator*(Tile<E> a, float s) {
    const Vec sv = Vec{} + s;
    TILE_EACH a.v[e] = a.v[e] * sv;
    return a;
}
template <int E>
TILE_ALWAYS Tile<E> operator+(Tile<E> a, float s) {
    const Vec sv = Vec{} + s;
    TILE_EACH a.v[e] = a.v[e] + sv;
    return a;
}
}  // namespace

template <int E>
struct MlpLane<Tile<E>> {
    static TILE_ALWAYS Tile<E> splat(float s) {
        Tile<E> t;
        TILE_EACH t.v[e] = Vec{} + s;
        return t;
    }
    static TILE_ALWAYS Tile<E> clamp(Tile<E> x, float lo, float hi) {
#if defined(__AVX512DQ__)
        if (lo == -hi) {  // mlp_tanh's clamp: sign(x) * min(|x|, hi), one vrangeps for vmaxps + vminps
            const __m512 vhi = _mm512_set1_ps(hi);
            TILE_EACH x.v[e] = (Vec)_mm512_range_ps((__m512)x.v[e], vhi, 0x2);  // min |.|, sign of x
            return x;
        }
#endif
        const Vec vlo = Vec{} + lo, vhi = Vec{} + hi;
        TILE_EACH {
            Vec c = x.v[e] < vlo ? vlo : x.v[e];  // vmaxps / vminps
            x.v[e] = c > vhi ? vhi : c;
        }
        return x;
    }
};

#if defined(FUSED_TANH_CLAMP_ONLY)
namespace {
// A diagnostic build only (benchmarks/fused_fma_share.py): the MLP's tanh replaced by its clamp to
// [-1, 1], one operation instead of mlp.cuh's eleven, to measure what the tanh costs the kernel.
// Its logits are wrong; the library is never built with it.
template <int E>
TILE_ALWAYS Tile<E> mlp_tanh(Tile<E> x) {
    return MlpLane<Tile<E>>::clamp(x, -1.0f, 1.0f);
}
}  // namespace
#endif

namespace {
// Neuron j of layer 1 on the E vectors of environments: tanh(obs . w1[:, j] + b1[j]).
template <int E>
TILE_ALWAYS Tile<E> layer1_neuron(const Tile<E>* obs, const float* __restrict__ w, int j) {
    Tile<E> a = obs[0] * w[MLP_OFF_W1 + j] + w[MLP_OFF_B1 + j];
#pragma GCC unroll 4
    for (int i = 1; i < MLP_IN; ++i) a = a + obs[i] * w[MLP_OFF_W1 + i * MLP_HIDDEN + j];
    return mlp_tanh(a);
}

// Neuron j of layer 2 from its sum `a`: its tanh, and its terms of layer 3 added to l0 and l1.
template <int E>
TILE_ALWAYS void layer3_terms(const Tile<E>& a, const float* __restrict__ w, int j, Tile<E>& l0, Tile<E>& l1) {
    const Tile<E> h2 = mlp_tanh(a);
    l0 = l0 + h2 * w[MLP_OFF_W3 + j * MLP_OUT];
    l1 = l1 + h2 * w[MLP_OFF_W3 + j * MLP_OUT + 1];
}

// Layer 2 for the tile of JB neurons j0 .. j0 + JB - 1 and E x VL environments: E x JB
// accumulators in registers while k runs over the 64 inputs; at each k the E vectors of h1[k] are
// loaded once and each weight w2[k][j0 + jj] is broadcast once and feeds E FMAs. Then the tile's
// tanh and its terms of layer 3, in neuron order.
template <int E, int JB>
TILE_ALWAYS void layer2_tile(const Tile<E>* __restrict__ h1, const float* __restrict__ w, int j0, Tile<E>& l0,
                             Tile<E>& l1) {
    Vec acc[JB][E];
#pragma GCC unroll 32
    for (int jj = 0; jj < JB; ++jj) TILE_EACH acc[jj][e] = Vec{} + w[MLP_OFF_B2 + j0 + jj];
    const float* __restrict__ row = w + MLP_OFF_W2 + j0;
#pragma GCC unroll 4
    for (int k = 0; k < MLP_HIDDEN; ++k, row += MLP_HIDDEN) {
        Vec h[E];
        TILE_EACH h[e] = h1[k].v[e];
#pragma GCC unroll 32
        for (int jj = 0; jj < JB; ++jj) {
            const Vec wk = Vec{} + row[jj];
            TILE_EACH acc[jj][e] = acc[jj][e] + h[e] * wk;
        }
    }
#pragma GCC unroll 32
    for (int jj = 0; jj < JB; ++jj) {
        Tile<E> a;
        TILE_EACH a.v[e] = acc[jj][e];
        layer3_terms(a, w, j0 + jj, l0, l1);
    }
}

// The MLP's logits of a Tile of observations (above): layer 1 neuron by neuron (two in flight),
// h1 (64 x E vectors) into L1, then layer 2 tile by tile.
template <int E, int JB>
__attribute__((flatten)) void mlp_tile(const Tile<E> obs[MLP_IN], const float* __restrict__ w, Tile<E>& logit0,
                                       Tile<E>& logit1) {
    static_assert(MLP_HIDDEN % JB == 0, "JB must divide the hidden width");
    alignas(64) Tile<E> h1[MLP_HIDDEN];
#pragma GCC unroll 2
    for (int j = 0; j < MLP_HIDDEN; ++j) h1[j] = layer1_neuron(obs, w, j);
    Tile<E> l0 = MlpLane<Tile<E>>::splat(w[MLP_OFF_B3]);
    Tile<E> l1 = MlpLane<Tile<E>>::splat(w[MLP_OFF_B3 + 1]);
#pragma GCC unroll 1
    for (int j0 = 0; j0 < MLP_HIDDEN; j0 += JB) layer2_tile<E, JB>(h1, w, j0, l0, l1);
    logit0 = l0;
    logit1 = l1;
}

// The MLP's two logits of the W = E * VL observations in a block's buffer (its 4 x W floats,
// buf[j * W + lane]) into out0[W] and out1[W].
template <int E, int JB>
inline void block_logits(const float* bp, const float* weights, float* out0, float* out1) {
    constexpr int W = E * VL;
    Tile<E> obs[MLP_IN];
    for (int i = 0; i < MLP_IN; ++i) TILE_EACH obs[i].v[e] = load_vec(bp + i * W + e * VL);
    Tile<E> l0, l1;
    mlp_tile<E, JB>(obs, weights, l0, l1);
    TILE_EACH {
        memcpy(out0 + e * VL, &l0.v[e], sizeof(Vec));
        memcpy(out1 + e * VL, &l1.v[e], sizeof(Vec));
    }
}

// fused_rollout on blocks of E * VL environments, the MLP on Tile<E> with JB neurons a register block.
template <int E, int JB>
long long rollout(const RolloutArgs* a) {
    constexpr int W = E * VL;
    const CartPoleParams p = cp_args_params(*a);
    const int32_t policy = a->policy;
    const int32_t* const actions = a->actions;
    const float* const weights = a->weights;
    const uint32_t seed = a->seed;
    const long long n = a->n;
    return cp_cpu_rollout<W>(
        *a, [&](const float* bp, long long first, const int32_t* el, const uint32_t* ep, float* force, int) {
            if (policy == CP_POLICY_MLP) {  // inference on the CartPole (the observation), in registers
                alignas(64) float logits[2][W];
                block_logits<E, JB>(bp, weights, logits[0], logits[1]);
#pragma omp simd
                for (int l = 0; l < W; ++l) force[l] = cp_force(mlp_greedy_action(logits[0][l], logits[1][l]), p);
            } else if (policy == CP_POLICY_HASH) {
#pragma omp simd
                for (int l = 0; l < W; ++l)
                    force[l] = cp_force(cp_hash_action(seed, (uint32_t)(first + l), ep[l], (uint32_t)el[l]), p);
            } else {
                for (int l = 0; l < W; ++l)  // lanes past n push left; never written back
                    force[l] = cp_force(first + l < n ? actions[first + l] : 0, p);
            }
        });
}

// fused_collect on blocks of E * VL environments (see fused_collect below).
template <int E, int JB>
long long collect(const RolloutArgs* a, const TrajectoryArgs* t) {
    constexpr int W = E * VL;
    const CartPoleParams p = cp_args_params(*a);
    const TrajectoryArgs traj = *t;
    const float* const weights = a->weights;
    const uint32_t seed = a->seed;
    const long long n = a->n;
    auto at = [n](int k, long long first) { return (long long)k * n + first; };  // element (k, first) of (T, n)
    auto lanes_of = [n](long long first) { return (int)(n - first < W ? n - first : W); };
    return cp_cpu_rollout<W>(
        *a,
        [&](const float* bp, long long first, const int32_t* el, const uint32_t* ep, float* force, int k) {
            const long long i = at(k, first);
            const int lanes = lanes_of(first);
            for (int l = 0; l < lanes; ++l)
                for (int j = 0; j < 4; ++j) traj.obs[(i + l) * 4 + j] = bp[j * W + l];
            alignas(64) float logits[2][W];
            block_logits<E, JB>(bp, weights, logits[0], logits[1]);
            for (int l = 0; l < W; ++l) {
                float logp;
                const float u = mlp_sample_uniform(seed, (uint32_t)(first + l), ep[l], (uint32_t)el[l]);
                const int32_t action = mlp_sample(logits[0][l], logits[1][l], u, logp);
                force[l] = cp_force(action, p);
                if (l < lanes) {
                    traj.actions[i + l] = action;
                    traj.logp[i + l] = logp;
                }
            }
        },
        [&](int k, const float* bp, long long first, int lanes, const int* fl) {
            const long long i = at(k, first);
            for (int l = 0; l < lanes; ++l) {  // the CartPole before the resets
                for (int j = 0; j < 4; ++j) traj.final_obs[(i + l) * 4 + j] = bp[j * W + l];
                traj.flags[i + l] = (uint8_t)fl[l];
            }
        });
}

// fused_mlp_logits on blocks of E * VL observations.
template <int E, int JB>
void mlp_logits(const float* obs, float* logits, const float* weights, long long n) {
    constexpr int W = E * VL;
#pragma omp parallel for schedule(static)
    for (long long first = 0; first < n; first += W) {
        const int lanes = (int)(n - first < W ? n - first : W);
        alignas(64) float in[MLP_IN * W] = {0};
        alignas(64) float out[2][W];
        for (int l = 0; l < lanes; ++l)
            for (int i = 0; i < MLP_IN; ++i) in[i * W + l] = obs[(first + l) * MLP_IN + i];
        block_logits<E, JB>(in, weights, out[0], out[1]);
        for (int l = 0; l < lanes; ++l) {
            logits[(first + l) * 2] = out[0][l];
            logits[(first + l) * 2 + 1] = out[1][l];
        }
    }
}

// The wide tile's blocks for calls of at least 4 of them (fewer, narrow blocks waste fewer lanes in
// the last block and split better across threads; per lane the two run at about the same speed).
inline bool wide(long long n) { return n >= 4LL * TILE_E * VL; }
}  // namespace

extern "C" {

// Steps every environment a->num_steps times; returns the number of episodes that ended.
// a->policy: CP_POLICY_MLP (greedy MLP on a->weights, every step), CP_POLICY_HASH (counter-hash
// actions) or CP_POLICY_ACTIONS (a->actions (n,) for every step; callers pass num_steps == 1).
long long fused_rollout(const RolloutArgs* a) {
    if (a->policy == CP_POLICY_MLP && wide(a->n)) return rollout<TILE_E, TILE_JB>(a);
    return rollout<NARROW_E, NARROW_JB>(a);
}

// Runs a->num_steps (T) steps of every environment with the MLP on a->weights as a stochastic
// policy, each action sampled from the softmax of its two logits (mlp_sample, with the counter
// hash's uniform mlp_sample_uniform), and writes the trajectory into *t (trajectory_args.h);
// returns the number of episodes that ended. a->policy and a->actions are not read, and
// a->final_obs neither: t->final_obs holds every step's. a->flags_out gets the last step's flags.
//
// cp_cpu_rollout's block loop with every step recorded: obs before the MLP and the action and its
// log-probability after it (in choose_forces), final_obs and the flags between termination and
// the same-step resets (in record). The state stays in the block's buffer for all T steps; what
// goes to memory is the trajectory itself, 41 bytes per environment-step.
long long fused_collect(const RolloutArgs* a, const TrajectoryArgs* t) {
    return wide(a->n) ? collect<TILE_E, TILE_JB>(a, t) : collect<NARROW_E, NARROW_JB>(a, t);
}

// The layout of TrajectoryArgs as this compiler sees it: sizeof, then each field's offset in
// declaration order (as rollout_args_layout); studylib.native checks its ctypes twin against it.
int trajectory_args_layout(long long* out, int capacity) {
    const long long layout[] = {
        (long long)sizeof(TrajectoryArgs),       (long long)offsetof(TrajectoryArgs, obs),
        (long long)offsetof(TrajectoryArgs, actions), (long long)offsetof(TrajectoryArgs, logp),
        (long long)offsetof(TrajectoryArgs, flags), (long long)offsetof(TrajectoryArgs, final_obs),
    };
    const int count = (int)(sizeof layout / sizeof layout[0]);
    for (int i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}

// Reset every environment to episode 0's draws: the draws of cartpole_reset and of the kernels.
void fused_reset(const RolloutArgs* a) { cp_cpu_reset(*a); }

// Start the next episode of the environments in a->reset_mask: the draws of cartpole_restart.
void fused_restart(const RolloutArgs* a) { cp_cpu_restart(*a); }

// Logits of the MLP for n observations (n, 4) -> (n, 2): the fused kernel's forward pass on its
// own, for tests against studylib.policy.reference_actions.
void fused_mlp_logits(const float* obs, float* logits, const float* weights, long long n) {
    if (wide(n))
        mlp_logits<TILE_E, TILE_JB>(obs, logits, weights, n);
    else
        mlp_logits<NARROW_E, NARROW_JB>(obs, logits, weights, n);
}

}  // extern "C"
