// The n-link cart-pole chain's dynamics (studylib/sims/chain.py), one source for the host and the
// device, float32: the mass-matrix method in absolute link angles, a Cholesky solve, MuJoCo's RK4
// with explicit joint damping, frame_skip mj_steps per environment step.
//
// Compiled by nvcc/NVRTC into the CUDA kernel (cuda/chain_kernel.cu), by the host C++ compiler
// into the CPU build (cuda/chain_cpu.cpp) and, through cuda/cuda_host.h, into the kernel's host
// build (cuda/chain_kernel_host.cpp). Read it beside studylib/sims/chain.py: the functions carry
// its names (ch_ prefixed), take their arguments in its order and do its operations in its order,
// each comment naming the Python function it mirrors. Where C differs from the Python:
//   * the number of links is a template parameter N (every array a fixed-size stack array, fully
//     unrolled: registers on the GPU, SIMD lanes on the CPU); the Python lists of columns are one
//     environment's scalars here, the batch being the GPU's threads or the CPU's SIMD lanes;
//   * Python folds constants as float64 (``_constants``, ``frac * h``, ``h / 6``, the constant
//     M_xx's 1 / sqrt): here Python computes them the same way and hands them over rounded once
//     to float32 (ChainParams below, studylib.native.chain.params_array), so nothing is folded
//     twice or in another precision;
//   * ``_rk4`` keeps all four stages' (v, a) in lists and combines them at the end,
//     x0 + h/6 (k0 + k3) + h/3 (k1 + k2): ch_rk4_step forms k1 + k2 as soon as k2 exists and drops the
//     stages it no longer needs (the same operands, the same additions in the same order; fewer
//     live registers, which decides whether n = 8 spills on a GPU);
//   * the order of operations is the Python's as written, but the compilers may contract a*b + c
//     into an FMA (nvcc by default, g++ on -march=native) and the CPU build's -ffast-math may
//     reassociate: the builds agree with the reference to float32 rounding, not bit for bit;
//   * the last RK4 stage's qpos (``_rk4``'s third result: where v5 reads the tip) is not kept:
//     this header steps the physics only (``physics_step``); the observation, reward and
//     termination (``env_step``) are not ported yet.
//
// Python -> C: _constants / ChainParams -> ChainParams<N> (ch_params_from_array), cholesky_solve ->
// ch_cholesky_solve, accelerations -> ch_accelerations, rk4_step / _rk4 -> ch_rk4_step,
// actuator_force -> ch_actuator_force, physics_step / _steps -> ch_physics_step (and ch_mj_step,
// its loop body, for the CPU's lane loop); an environment step's physics is frame_skip of them.
//
// The links instantiated: CH_FOR_EACH_LINKS below. To add n = 5, append X(5) there: the CPU build,
// the kernel (chain_rollout_5), its host build and Python (which asks the library for the list)
// all follow; tests/test_chain_native.py tests the n it lists itself and needs a register budget
// for the new kernel (REGISTER_BUDGET there).
#pragma once
#include "cartpole.cuh"  // CP_HD, CP_LDG, the NVRTC integer typedefs, cp_hash4 (the counter hash)

// cartpole.cuh's CP_HD, with inlining forced on the host too: the CPU build's lane loop
// (chain_cpu.cpp) vectorizes only if the whole mj_step is inlined into it, and GCC's heuristics
// leave a function of n = 8's size out of line.
#if defined(__CUDACC__)
#define CH_HD CP_HD
#else
#define CH_HD static inline __attribute__((always_inline))
#endif
// Every fixed-length loop below fully unrolled, for nvcc/NVRTC (`#pragma unroll`) and for GCC
// (`#pragma GCC unroll`; GCC ignores the former): the arrays' indices become constants, so they
// live in registers, and the CPU's lane loop holds straight-line code that GCC can vectorize.
#if defined(__CUDACC__)
#define CH_UNROLL _Pragma("unroll")
#else
#define CH_UNROLL _Pragma("GCC unroll 128")
#endif

// Every n the builds instantiate, as X(n) for a macro X.
#define CH_FOR_EACH_LINKS(X) X(1) X(2) X(3) X(4) X(6) X(8)

// Where an environment's controls come from (ChainArgs.policy).
#define CH_POLICY_CTRL 0  // ctrl[k * n + env]: the caller's control of env at step k
#define CH_POLICY_HASH 2  // ch_hash_ctrl(seed, env, first_step + k): simulation only, no input

// ---- the constants (studylib/sims/chain_model.py ChainParams and chain.py _constants) ----
// Primaries and derived constants, every one computed in Python (float64) and rounded once to
// float32; read from a flat float array (studylib.native.chain.params_array), in this order:
//   0 link_length L, 1 damping b, 2 gear, 3 timestep h, 4 gx, 5 gz (p.gravity[0], [2]),
//   6 m_total (p.total_mass), 7 gravity_x (m_total gx), 8 inv_sqrt_m_total (1 / sqrt(M_xx),
//   cholesky_solve's folded constant), 9 half_h (0.5 h, RK4_A's ½ row), 10 h6 (h / 6), 11 h3
//   (h / 3), 12 frame_skip (an integer, exact as a float), then beta[N], diag[N], l_beta[N]
//   (L beta[j], the products ``(L * beta[j])`` accelerations folds).
#define CH_NUM_SCALAR_PARAMS 13
#define CH_NUM_PARAM_FLOATS(N) (CH_NUM_SCALAR_PARAMS + 3 * (N))

template <int N>
struct ChainParams {
    float link_length, damping, gear, timestep, gx, gz;
    float m_total, gravity_x, inv_sqrt_m_total;  // derived (_constants; cholesky_solve's constant M_00)
    float half_h, h6, h3;                       // derived (_rk4's folded stage and RK4_B weights)
    int32_t frame_skip;
    float beta[N];    // m (c + L (n - 1 - j)): the mass every link from j up puts on link j's arm
    float diag[N];    // M_φjφj = m (c² + L² (n - 1 - j)) + I
    float l_beta[N];  // L beta[j]: the off-diagonal coefficients M'
};

template <int N>
CH_HD ChainParams<N> ch_params_from_array(const float* a) {
    ChainParams<N> p;
    p.link_length = CP_LDG(a + 0);
    p.damping = CP_LDG(a + 1);
    p.gear = CP_LDG(a + 2);
    p.timestep = CP_LDG(a + 3);
    p.gx = CP_LDG(a + 4);
    p.gz = CP_LDG(a + 5);
    p.m_total = CP_LDG(a + 6);
    p.gravity_x = CP_LDG(a + 7);
    p.inv_sqrt_m_total = CP_LDG(a + 8);
    p.half_h = CP_LDG(a + 9);
    p.h6 = CP_LDG(a + 10);
    p.h3 = CP_LDG(a + 11);
    p.frame_skip = (int32_t)CP_LDG(a + 12);
CH_UNROLL
    for (int j = 0; j < N; ++j) {
        p.beta[j] = CP_LDG(a + CH_NUM_SCALAR_PARAMS + j);
        p.diag[j] = CP_LDG(a + CH_NUM_SCALAR_PARAMS + N + j);
        p.l_beta[j] = CP_LDG(a + CH_NUM_SCALAR_PARAMS + 2 * N + j);
    }
    return p;
}

// ---- cholesky_solve: A z = b, A symmetric positive definite by its lower triangle ----
// M = N + 1 unknowns; A[i][j] for j <= i is read (and overwritten by the factor, in place: the
// Python's `low`); the constant A[0][0]'s 1 / sqrt comes in as inv0 ("a constant M_00 folds").
template <int M>
CH_HD void ch_cholesky_solve(float (&A)[M][M], const float (&b)[M], float inv0, float (&z)[M]) {
    float inv[M];  // 1 / L_jj: one division per column, multiplications after
CH_UNROLL
    for (int j = 0; j < M; ++j) {
        float s = A[j][j];
CH_UNROLL
        for (int k = 0; k < j; ++k) s = s - A[j][k] * A[j][k];
        inv[j] = j == 0 ? inv0 : 1.0f / sqrtf(s);
CH_UNROLL
        for (int i = j + 1; i < M; ++i) {
            float t = A[i][j];
CH_UNROLL
            for (int k = 0; k < j; ++k) t = t - A[i][k] * A[j][k];
            A[i][j] = t * inv[j];
        }
    }
    float y[M];
CH_UNROLL
    for (int i = 0; i < M; ++i) {
        float s = b[i];
CH_UNROLL
        for (int k = 0; k < i; ++k) s = s - A[i][k] * y[k];
        y[i] = s * inv[i];
    }
CH_UNROLL
    for (int i = M - 1; i >= 0; --i) {
        float s = y[i];
CH_UNROLL
        for (int k = i + 1; k < M; ++k) s = s - A[k][i] * z[k];
        z[i] = s * inv[i];
    }
}

// ---- accelerations: qacc at (qpos, qvel) under the slider's force, M(q) qacc = τ − c(q, v) ----
template <int N>
CH_HD void ch_accelerations(const float (&qpos)[N + 1], const float (&qvel)[N + 1], float force,
                            const ChainParams<N>& p, float (&qacc)[N + 1]) {
    const float b = p.damping;  // (L enters only as the folded products L beta[j]: p.l_beta)
    float phi[N], omega[N];
    phi[0] = qpos[1];
    omega[0] = qvel[1];
CH_UNROLL
    for (int k = 2; k <= N; ++k) {
        phi[k - 1] = phi[k - 2] + qpos[k];
        omega[k - 1] = omega[k - 2] + qvel[k];
    }
    float s[N], c[N], w[N], bs[N], bc[N];
CH_UNROLL
    for (int j = 0; j < N; ++j) {
        s[j] = sinf(phi[j]);
        c[j] = cosf(phi[j]);
    }
CH_UNROLL
    for (int j = 0; j < N; ++j) w[j] = omega[j] * omega[j];
CH_UNROLL
    for (int j = 0; j < N; ++j) {
        bs[j] = p.beta[j] * s[j];
        bc[j] = p.beta[j] * c[j];  // also M_xφj
    }
    // generalized forces in φ: gravity, then the damping torques −b θ̇ carried through P⁻ᵀ
    float f[N];
CH_UNROLL
    for (int j = 0; j < N; ++j) f[j] = p.gx * bc[j] - p.gz * bs[j];
CH_UNROLL
    for (int j = 0; j < N - 1; ++j) f[j] = f[j] + b * (qvel[j + 2] - qvel[j + 1]);
    f[N - 1] = f[N - 1] - b * qvel[N];
    float fx = p.gravity_x + force - b * qvel[0];
CH_UNROLL
    for (int j = 0; j < N; ++j) fx = fx + bs[j] * w[j];
    // M's lower triangle (index 0 the cart) and the Coriolis/centrifugal terms, pair by pair
    float A[N + 1][N + 1];
    A[0][0] = p.m_total;
CH_UNROLL
    for (int j = 0; j < N; ++j) A[j + 1][0] = bc[j];
CH_UNROLL
    for (int j = 0; j < N; ++j) {
        A[j + 1][j + 1] = p.diag[j];
CH_UNROLL
        for (int i = 0; i < j; ++i) {
            A[j + 1][i + 1] = p.l_beta[j] * (c[i] * c[j] + s[i] * s[j]);  // cos(φ_i − φ_j)
            const float t = p.l_beta[j] * (s[i] * c[j] - c[i] * s[j]);   // sin(φ_i − φ_j)
            f[i] = f[i] - t * w[j];
            f[j] = f[j] + t * w[i];
        }
    }
    float rhs[N + 1], a[N + 1];
    rhs[0] = fx;
CH_UNROLL
    for (int j = 0; j < N; ++j) rhs[j + 1] = f[j];
    ch_cholesky_solve<N + 1>(A, rhs, p.inv_sqrt_m_total, a);
    qacc[0] = a[0];
    qacc[1] = a[1];
CH_UNROLL
    for (int k = 2; k <= N; ++k) qacc[k] = a[k] - a[k - 1];  // θ̈ from φ̈
}

// ---- rk4_step / _rk4: one mj_step of p.timestep by MuJoCo's RK4 (mj_RungeKutta), in place ----
// Stage i at (q0 + frac h v_{i-1}, v0 + frac h a_{i-1}), frac = ½, ½, 1 (RK4_A's rows); then
// advance: x0 + h/6 (k0 + k3) + h/3 (k1 + k2) (RK4_B folded with h). k0's velocity is qvel itself.
// One stage's point, (q0 + frac_h v_prev, v0 + frac_h a_prev), into (q, v); v may be v_prev
// itself (each i reads v_prev[i] before it writes v[i]).
template <int N>
CH_HD void ch_stage_point(const float (&qpos)[N + 1], const float (&qvel)[N + 1], float frac_h,
                          const float (&v_prev)[N + 1], const float (&a_prev)[N + 1], float (&q)[N + 1],
                          float (&v)[N + 1]) {
CH_UNROLL
    for (int i = 0; i < N + 1; ++i) {
        q[i] = qpos[i] + frac_h * v_prev[i];
        v[i] = qvel[i] + frac_h * a_prev[i];
    }
}

template <int N>
CH_HD void ch_rk4_step(float (&qpos)[N + 1], float (&qvel)[N + 1], float force, const ChainParams<N>& p) {
    constexpr int N1 = N + 1;
    float a0[N1], v[N1], a[N1], sum_v[N1], sum_a[N1], q[N1];
    ch_accelerations<N>(qpos, qvel, force, p, a0);  // stage 0: (qpos, qvel)
    ch_stage_point<N>(qpos, qvel, p.half_h, qvel, a0, q, v);  // stage 1 (frac ½) from stage 0
    ch_accelerations<N>(q, v, force, p, a);
CH_UNROLL
    for (int i = 0; i < N1; ++i) {  // stage 1's (v, a) kept until stage 2 joins it in k1 + k2
        sum_v[i] = v[i];
        sum_a[i] = a[i];
    }
    ch_stage_point<N>(qpos, qvel, p.half_h, v, a, q, v);  // stage 2 (frac ½) from stage 1
    ch_accelerations<N>(q, v, force, p, a);
CH_UNROLL
    for (int i = 0; i < N1; ++i) {  // k1 + k2, as advance adds them
        sum_v[i] = sum_v[i] + v[i];
        sum_a[i] = sum_a[i] + a[i];
    }
    ch_stage_point<N>(qpos, qvel, p.timestep, v, a, q, v);  // stage 3 (frac 1) from stage 2
    ch_accelerations<N>(q, v, force, p, a);
    // advance(qpos, vs) and advance(qvel, acs): x0 + h6 (k0 + k3) + h3 (k1 + k2)
CH_UNROLL
    for (int i = 0; i < N1; ++i) {
        const float qn = qpos[i] + p.h6 * (qvel[i] + v[i]) + p.h3 * sum_v[i];
        const float vn = qvel[i] + p.h6 * (a0[i] + a[i]) + p.h3 * sum_a[i];
        qpos[i] = qn;
        qvel[i] = vn;
    }
}

// ---- actuator_force: gear × ctrl clamped to ctrlrange [−1, 1] (mj_fwdActuation) ----
template <int N>
CH_HD float ch_actuator_force(float ctrl, const ChainParams<N>& p) {
    return p.gear * fminf(fmaxf(ctrl, -1.0f), 1.0f);
}

// A row's qpos and qvel from memory (load) and back (store): the row is qpos (cart x, n hinge
// angles) then qvel, 2(N+1) floats `stride` apart (1 in global memory; W when a CPU block keeps W
// environments interleaved for SIMD).
template <int N>
CH_HD void ch_load_row(const float* state, int64_t stride, float (&qpos)[N + 1], float (&qvel)[N + 1]) {
CH_UNROLL
    for (int i = 0; i < N + 1; ++i) {
        qpos[i] = state[i * stride];
        qvel[i] = state[(N + 1 + i) * stride];
    }
}

template <int N>
CH_HD void ch_store_row(float* state, int64_t stride, const float (&qpos)[N + 1], const float (&qvel)[N + 1]) {
CH_UNROLL
    for (int i = 0; i < N + 1; ++i) {
        state[i * stride] = qpos[i];
        state[(N + 1 + i) * stride] = qvel[i];
    }
}

// ---- physics_step / _steps: `steps` mj_steps of one environment's state row with one control ----
template <int N>
CH_HD void ch_physics_step(float* state, int64_t stride, float ctrl, const ChainParams<N>& p, int steps) {
    float qpos[N + 1], qvel[N + 1];
    ch_load_row<N>(state, stride, qpos, qvel);
    const float force = ch_actuator_force<N>(ctrl, p);
    for (int k = 0; k < steps; ++k) ch_rk4_step<N>(qpos, qvel, force, p);
    ch_store_row<N>(state, stride, qpos, qvel);
}

// One mj_step of a row under an actuator force (ch_physics_step's loop body with its loads and
// stores): the CPU build's lane loop runs this once per mj_step, its frame_skip loop outside, so
// that the loop GCC vectorizes holds no loop of run-time length.
template <int N>
CH_HD void ch_mj_step(float* state, int64_t stride, float force, const ChainParams<N>& p) {
    float qpos[N + 1], qvel[N + 1];
    ch_load_row<N>(state, stride, qpos, qvel);
    ch_rk4_step<N>(qpos, qvel, force, p);
    ch_store_row<N>(state, stride, qpos, qvel);
}

// ---- the no-input control (policy "none"): uniform in [-1, 1) from a hash of (seed, env, step) ----
// (hash4(seed ^ CH_CTRL_SALT, env, 0, step) >> 8) · 2⁻²³ − 1: an exact float32 (a 24-bit integer
// scaled by a power of two, minus one), so Python reproduces it bit for bit (studylib.native.chain
// .hash_ctrl) and no compiler flag can change it.
#define CH_CTRL_SALT 0x6A09E667u
CH_HD float ch_hash_ctrl(uint32_t seed, uint32_t env, uint32_t step) {
    return (float)(cp_hash4(seed ^ CH_CTRL_SALT, env, 0u, step) >> 8) * (1.0f / 8388608.0f) - 1.0f;
}
