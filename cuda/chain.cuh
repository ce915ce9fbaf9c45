// The n-link cart-pole chain (studylib/sims/chain/): its dynamics (dynamics.py; its episode step,
// episode.py's, is cuda/chain_episode.cuh, which includes this header), one source for the host
// and the device, float32: the mass-matrix method in
// absolute link angles, a Cholesky solve, MuJoCo's RK4 with explicit joint damping, frame_skip
// mj_steps per environment step.
//
// Compiled by nvcc/NVRTC into the CUDA kernel (cuda/chain_kernel.cu), by the host C++ compiler
// into the CPU build (cuda/chain_cpu.cpp) and, through cuda/cuda_host.h, into the kernel's host
// build (cuda/chain_kernel_host.cpp). Read it beside studylib/sims/chain/dynamics.py and
// episode.py: the functions carry their names (ch_ prefixed), take their arguments in their order
// and do their operations in their order, each comment naming the Python function it mirrors.
// Where C differs from the Python:
//   * the number of links is a template parameter N. N = 1 .. CH_MAX_UNROLLED (CH_FOR_EACH_LINKS):
//     every array a fixed-size stack array and every loop fully unrolled (registers on the GPU,
//     SIMD lanes on the CPU). N = 0 (CH_GENERIC) is the run-time-n build of the same code for every
//     other n up to CH_MAX_LINKS: arrays sized for CH_MAX_LINKS + 1, loops of run-time length
//     (ch_for below: one loop body, unrolled only where its trip count is a constant). The Python
//     lists of columns are one environment's scalars here, the batch being the GPU's threads or
//     the CPU's SIMD lanes;
//   * Python folds constants as float64 (``_constants``, ``frac * h``, ``h / 6``, the constant
//     M_xx's 1 / sqrt, n L / 1.2, ...): here Python computes them the same way and hands them over
//     rounded once to float32 (ChainParams below, studylib.sims.chain.native.params_array), so
//     nothing is folded twice or in another precision;
//   * ``_rk4`` keeps all four stages' (v, a) in lists and combines them at the end,
//     x0 + h/6 (k0 + k3) + h/3 (k1 + k2): ch_rk4_step forms k1 + k2 as soon as k2 exists and drops the
//     stages it no longer needs (the same operands, the same additions in the same order; fewer
//     live registers, which decides whether n = 8 spills on a GPU);
//   * the order of operations is the Python's as written, but the compilers may contract a*b + c
//     into an FMA (nvcc by default, g++ on -march=native) and the CPU build's -ffast-math may
//     reassociate: the physics agrees with the reference to float32 rounding, not bit for bit. The
//     hashed draws' uniforms and the no-policy controls are exact float32 values (integers scaled
//     by powers of two) and equal episode.py's bit for bit; the Box–Muller normals go through
//     logf/cosf/sqrtf and agree to float32 rounding.
//
// Python -> C: _constants / ChainParams -> ChainParams<N> (ch_params_from_array), cholesky_solve ->
// ch_cholesky_solve, accelerations -> ch_accelerations, rk4_step / _rk4 -> ch_rk4_step (its
// third result, the last stage's qpos, as the tip it gives: ch_rk4_step<N, true>),
// actuator_force -> ch_actuator_force, physics_step / _steps -> ch_physics_step (and ch_mj_step,
// its loop body, for the CPU's lane loop), tip -> ch_tip, is_terminated -> ch_is_terminated,
// reward -> ch_reward, observation -> ch_observation, episodes.end_of_step -> ch_end_of_step,
// episode.reset_uniform -> ch_uniform, normal -> ch_normal, reset_states -> ch_reset_row,
// hash_controls -> ch_hash_ctrl, policy_noise -> ch_policy_noise, advance -> ch_env_step (one
// environment; the CPU build runs the same pieces with its loops interchanged, lanes innermost).
//
// The unrolled links: CH_FOR_EACH_LINKS below (every other n up to CH_MAX_LINKS takes N = 0). To
// unroll n = 9 too, append X(9) there: the CPU build, the kernels (chain_rollout_9, ...), their
// host build and Python (which asks the library for the list) all follow; tests/test_chain_native.py
// needs a register budget for the new kernels (REGISTER_BUDGET there).
#pragma once
#include "cartpole.cuh"  // CP_HD, CP_LDG, the NVRTC integer typedefs, cp_hash4 (the counter hash)

// cartpole.cuh's CP_HD, with inlining forced on the host too: the CPU build's lane loop
// (chain_cpu.cpp) vectorizes only if the whole mj_step is inlined into it, and GCC's heuristics
// leave a function of n = 8's size out of line. CH_LAMBDA does the same for ch_for's loop bodies.
#if defined(__CUDACC__)
#define CH_HD CP_HD
#define CH_MEMBER CP_HD
#define CH_LAMBDA
#else
#define CH_HD static inline __attribute__((always_inline))
#define CH_MEMBER inline __attribute__((always_inline))
#define CH_LAMBDA __attribute__((always_inline))
#endif
// Every fixed-length loop fully unrolled, for nvcc/NVRTC (`#pragma unroll`) and for GCC
// (`#pragma GCC unroll`; GCC ignores the former): the arrays' indices become constants, so they
// live in registers, and the CPU's lane loop holds straight-line code that GCC can vectorize.
#if defined(__CUDACC__)
#define CH_UNROLL _Pragma("unroll")
#else
#define CH_UNROLL _Pragma("GCC unroll 128")
#endif

#define CH_MAX_LINKS 32    // studylib.sims.chain.model.MAX_LINKS
#define CH_MAX_UNROLLED 8  // the largest n CH_FOR_EACH_LINKS unrolls
#define CH_GENERIC 0       // N of the run-time-n build
// Every n the builds unroll, as X(n) for a macro X (1 .. CH_MAX_UNROLLED, each once).
#define CH_FOR_EACH_LINKS(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8)
// The arrays' capacity in links: N, or CH_MAX_LINKS for the run-time-n build.
#define CH_CAP(N) ((N) > 0 ? (N) : CH_MAX_LINKS)

// One row of n + 1 values (qpos or qvel) of an N-build: floats, or (T = a SIMD vector of floats, the
// CPU's run-time-n build) one value per lane.
template <int N, class T = float>
using ChRow = T[CH_CAP(N) + 1];

// for (i = lo; i < hi; ++i) f(i): fully unrolled in an unrolled build (N > 0, where lo and hi are
// constants once inlined), a plain loop in the run-time-n build (GCC's unroll pragma would unroll
// a loop of run-time length 128-fold; nvcc's would leave it, but one form serves both).
template <int N, class F>
CH_HD void ch_for(int lo, int hi, F&& f) {
    if constexpr (N > 0) {
CH_UNROLL
        for (int i = lo; i < hi; ++i) f(i);
    } else {
        for (int i = lo; i < hi; ++i) f(i);
    }
}

// Where an environment's controls come from (ChainArgs.policy).
#define CH_POLICY_CTRL 0  // ctrl[k * n + env]: the caller's control of env at step k
#define CH_POLICY_MLP 1   // the Gaussian MLP policy on ChainArgs.weights (chain_episodes only)
#define CH_POLICY_HASH 2  // ch_hash_ctrl: simulation only, no input

// ---- the constants (studylib/sims/chain/model.py ChainParams and dynamics.py _constants) ----
// Primaries and derived constants, every one computed in Python (float64) and rounded once to
// float32; read from a flat float array (studylib.sims.chain.native.params_array), in this order:
//   0 link_length L, 1 damping b, 2 gear, 3 timestep h, 4 gx, 5 gz (p.gravity[0], [2]),
//   6 m_total (p.total_mass), 7 gravity_x (m_total gx), 8 inv_sqrt_m_total (1 / sqrt(M_xx),
//   cholesky_solve's folded constant), 9 half_h (0.5 h, RK4_A's ½ row), 10 h6 (h / 6), 11 h3
//   (h / 3), 12 frame_skip (an integer, exact as a float), 13 links (n, exact), 14 term_height
//   (n L / 1.2, is_terminated's), 15 target_height (n L + 0.8, reward's), 16 healthy_reward,
//   17 max_episode_steps (exact), then beta[n], diag[n], l_beta[n] (L beta[j], the products
//   ``(L * beta[j])`` accelerations folds).
#define CH_NUM_SCALAR_PARAMS 18
#define CH_NUM_PARAM_FLOATS(n) (CH_NUM_SCALAR_PARAMS + 3 * (n))

template <int N>
struct ChainParams {
    float link_length, damping, gear, timestep, gx, gz;
    float m_total, gravity_x, inv_sqrt_m_total;  // derived (_constants; cholesky_solve's constant M_00)
    float half_h, h6, h3;                       // derived (_rk4's folded stage and RK4_B weights)
    int32_t frame_skip;
    int32_t links;                               // n (N itself in an unrolled build)
    float term_height, target_height, healthy_reward;  // derived (is_terminated's, reward's)
    int32_t max_episode_steps;
    float beta[CH_CAP(N)];    // m (c + L (n - 1 - j)): the mass every link from j up puts on link j's arm
    float diag[CH_CAP(N)];    // M_φjφj = m (c² + L² (n - 1 - j)) + I
    float l_beta[CH_CAP(N)];  // L beta[j]: the off-diagonal coefficients M'
    // n: a constant in an unrolled build (the loops' trip counts), the array's in the run-time one.
    CH_MEMBER int n() const { return N > 0 ? N : links; }
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
    p.links = N > 0 ? N : (int32_t)CP_LDG(a + 13);
    p.term_height = CP_LDG(a + 14);
    p.target_height = CP_LDG(a + 15);
    p.healthy_reward = CP_LDG(a + 16);
    p.max_episode_steps = (int32_t)CP_LDG(a + 17);
    const int n = p.n();
    ch_for<N>(0, n, [&](int j) CH_LAMBDA {
        p.beta[j] = CP_LDG(a + CH_NUM_SCALAR_PARAMS + j);
        p.diag[j] = CP_LDG(a + CH_NUM_SCALAR_PARAMS + n + j);
        p.l_beta[j] = CP_LDG(a + CH_NUM_SCALAR_PARAMS + 2 * n + j);
    });
    return p;
}

// ---- sine and cosine of one angle ----
// On the GPU the hardware's sinf/cosf. On the CPU an inline polynomial, because libmvec's vector
// sinf/cosf are calls: in the lane loop each one makes the compiler spill every live vector
// register around it (perf on n = 8: 13% of the fused rollout inside them, more around them).
// Cody–Waite reduction by π/2 in three parts (exact products for |x| up to about 10^4), then
// Cephes' sinf/cosf minimax polynomials on [-π/4, π/4] and the quadrant's swap and signs: within
// 1.2e-7 of sin/cos in float64 for |x| <= 1000 (tests/test_chain_native_episodes.py), as accurate
// as libm's float32 sinf.
CH_HD void ch_sincos(float x, float& s, float& c) {
#if defined(__CUDACC__)
    s = sinf(x);
    c = cosf(x);
#else
    const float k = rintf(x * 0.63661977236758134f);  // x / (π/2), to the nearest integer
    // fmaf, not x - k * a - ...: -ffast-math may reassociate the latter into x - k * (a + b + c),
    // which loses the reduction's precision (measured: 2.8e-5 at |x| = 1000)
    const float r = fmaf(-k, 7.5497899548918821e-8f, fmaf(-k, 4.8375129699707031e-4f, fmaf(-k, 1.5703125f, x)));
    const float r2 = r * r;
    const float sr = r + r * r2 * ((-1.9515295891e-4f * r2 + 8.3321608736e-3f) * r2 - 1.6666654611e-1f);
    const float cr = 1.0f - 0.5f * r2 + r2 * r2 * ((2.443315711809948e-5f * r2 - 1.388731625493765e-3f) * r2 +
                                                  4.166664568298827e-2f);
    const int q = (int)k & 3;  // the quadrant: sin, cos of r, r + π/2, r + π, r + 3π/2
    s = (q & 1) ? cr : sr;
    c = (q & 1) ? sr : cr;
    s = (q & 2) ? -s : s;
    c = ((q + 1) & 2) ? -c : c;
#endif
}

// The two elementwise functions the physics takes of its value type T (ch_sincos and cholesky_solve's
// 1 / sqrt); a CPU build that steps a SIMD vector of lanes as T specializes them for it
// (cuda/chain_cpu_lanes.h).
template <class T>
struct ChMath;

template <>
struct ChMath<float> {
    static CH_MEMBER void sincos(float x, float& s, float& c) { ch_sincos(x, s, c); }
    static CH_MEMBER float inv_sqrt(float s) {
#if defined(__CUDACC__)
        return 1.0f / sqrtf(s);
#else
        // 1 / sqrt(s) as (1 / s) sqrt(s): GCC's vector code (-ffast-math) evaluates 1 / sqrtf(s) as a
        // reciprocal (vrcp14ps + Newton) of a square root (vrsqrt14ps + Newton), one after the other
        // on the factorization's critical path; here the two run side by side (the same value to an
        // ulp or two, as the two approximations already are).
        return (1.0f / s) * sqrtf(s);
#endif
    }
};

// ---- cholesky_solve: A z = b, A symmetric positive definite by its lower triangle ----
// M = n + 1 unknowns; A[i][j] for j <= i is read (and overwritten by the factor, in place: the
// Python's `low`); the constant A[0][0]'s 1 / sqrt comes in as inv0 ("a constant M_00 folds").
template <int N, class T>
CH_HD void ch_cholesky_solve(T (&A)[CH_CAP(N) + 1][CH_CAP(N) + 1], const ChRow<N, T>& b, float inv0, int M,
                             ChRow<N, T>& z) {
    T inv[CH_CAP(N) + 1];  // 1 / L_jj: one division per column, multiplications after
    inv[0] = T{} + inv0;
    ch_for<N>(0, M, [&](int j) CH_LAMBDA {
        T s = A[j][j];
        ch_for<N>(0, j, [&](int k) CH_LAMBDA { s = s - A[j][k] * A[j][k]; });
        if (j > 0) inv[j] = ChMath<T>::inv_sqrt(s);
        ch_for<N>(j + 1, M, [&](int i) CH_LAMBDA {
            T t = A[i][j];
            ch_for<N>(0, j, [&](int k) CH_LAMBDA { t = t - A[i][k] * A[j][k]; });
            A[i][j] = t * inv[j];
        });
    });
    T y[CH_CAP(N) + 1] = {};  // (initialized: nvcc cannot see that each y[k] is written before it is read)
    ch_for<N>(0, M, [&](int i) CH_LAMBDA {
        T s = b[i];
        ch_for<N>(0, i, [&](int k) CH_LAMBDA { s = s - A[i][k] * y[k]; });
        y[i] = s * inv[i];
    });
    ch_for<N>(0, M, [&](int r) CH_LAMBDA {  // i = M - 1 down to 0
        const int i = M - 1 - r;
        T s = y[i];
        ch_for<N>(i + 1, M, [&](int k) CH_LAMBDA { s = s - A[k][i] * z[k]; });
        z[i] = s * inv[i];
    });
}

// ---- accelerations: qacc at (qpos, qvel) under the slider's force, M(q) qacc = τ − c(q, v) ----
template <int N, class T>
CH_HD void ch_accelerations(const ChRow<N, T>& qpos, const ChRow<N, T>& qvel, T force, const ChainParams<N>& p,
                            ChRow<N, T>& qacc) {
    constexpr int C = CH_CAP(N);
    const int n = p.n();
    const float b = p.damping;  // (L enters only as the folded products L beta[j]: p.l_beta)
    T phi[C], omega[C];
    phi[0] = qpos[1];
    omega[0] = qvel[1];
    ch_for<N>(2, n + 1, [&](int k) CH_LAMBDA {
        phi[k - 1] = phi[k - 2] + qpos[k];
        omega[k - 1] = omega[k - 2] + qvel[k];
    });
    T s[C], c[C], w[C], bs[C], bc[C];
    ch_for<N>(0, n, [&](int j) CH_LAMBDA {
        ChMath<T>::sincos(phi[j], s[j], c[j]);
    });
    ch_for<N>(0, n, [&](int j) CH_LAMBDA { w[j] = omega[j] * omega[j]; });
    ch_for<N>(0, n, [&](int j) CH_LAMBDA {
        bs[j] = p.beta[j] * s[j];
        bc[j] = p.beta[j] * c[j];  // also M_xφj
    });
    // generalized forces in φ: gravity, then the damping torques −b θ̇ carried through P⁻ᵀ
    T f[C];
    ch_for<N>(0, n, [&](int j) CH_LAMBDA { f[j] = p.gx * bc[j] - p.gz * bs[j]; });
    ch_for<N>(0, n - 1, [&](int j) CH_LAMBDA { f[j] = f[j] + b * (qvel[j + 2] - qvel[j + 1]); });
    f[n - 1] = f[n - 1] - b * qvel[n];
    T fx = p.gravity_x + force - b * qvel[0];
    ch_for<N>(0, n, [&](int j) CH_LAMBDA { fx = fx + bs[j] * w[j]; });
    // M's lower triangle (index 0 the cart) and the Coriolis/centrifugal terms, pair by pair
    T A[C + 1][C + 1];
    A[0][0] = T{} + p.m_total;
    ch_for<N>(0, n, [&](int j) CH_LAMBDA { A[j + 1][0] = bc[j]; });
    ch_for<N>(0, n, [&](int j) CH_LAMBDA {
        A[j + 1][j + 1] = T{} + p.diag[j];
        ch_for<N>(0, j, [&](int i) CH_LAMBDA {
            A[j + 1][i + 1] = p.l_beta[j] * (c[i] * c[j] + s[i] * s[j]);  // cos(φ_i − φ_j)
            const T t = p.l_beta[j] * (s[i] * c[j] - c[i] * s[j]);   // sin(φ_i − φ_j)
            f[i] = f[i] - t * w[j];
            f[j] = f[j] + t * w[i];
        });
    });
    ChRow<N, T> rhs, a;
    rhs[0] = fx;
    ch_for<N>(0, n, [&](int j) CH_LAMBDA { rhs[j + 1] = f[j]; });
    ch_cholesky_solve<N, T>(A, rhs, p.inv_sqrt_m_total, n + 1, a);
    qacc[0] = a[0];
    qacc[1] = a[1];
    ch_for<N>(2, n + 1, [&](int k) CH_LAMBDA { qacc[k] = a[k] - a[k - 1]; });  // θ̈ from φ̈
}

// ---- tip: the tip site's (x, z) at qpos; z is v5's y ----
template <int N>
CH_HD void ch_tip(const ChRow<N>& qpos, const ChainParams<N>& p, float& x, float& z) {
    float phi = 0.0f, tx = qpos[0], tz = 0.0f;
    ch_for<N>(1, p.n() + 1, [&](int k) CH_LAMBDA {
        phi = phi + qpos[k];
        float sp, cp;
        ch_sincos(phi, sp, cp);
        tx = tx + p.link_length * sp;
        tz = tz + p.link_length * cp;
    });
    x = tx;
    z = tz;
}

// ---- rk4_step / _rk4: one mj_step of p.timestep by MuJoCo's RK4 (mj_RungeKutta), in place ----
// Stage i at (q0 + frac h v_{i-1}, v0 + frac h a_{i-1}), frac = ½, ½, 1 (RK4_A's rows); then
// advance: x0 + h/6 (k0 + k3) + h/3 (k1 + k2) (RK4_B folded with h). k0's velocity is qvel itself.
// One stage's point, (q0 + frac_h v_prev, v0 + frac_h a_prev), into (q, v); v may be v_prev
// itself (each i reads v_prev[i] before it writes v[i]).
template <int N, class T>
CH_HD void ch_stage_point(const ChRow<N, T>& qpos, const ChRow<N, T>& qvel, float frac_h, const ChRow<N, T>& v_prev,
                          const ChRow<N, T>& a_prev, int n1, ChRow<N, T>& q, ChRow<N, T>& v) {
    ch_for<N>(0, n1, [&](int i) CH_LAMBDA {
        q[i] = qpos[i] + frac_h * v_prev[i];
        v[i] = qvel[i] + frac_h * a_prev[i];
    });
}

// `seen` gets the last stage's qpos (_rk4's third result: where MuJoCo's kinematics are after an
// mj_step, the tip v5 reads from site_xpos); a copy of n + 1 floats, dead where nobody reads it.
template <int N, class T>
CH_HD void ch_rk4_step(ChRow<N, T>& qpos, ChRow<N, T>& qvel, T force, const ChainParams<N>& p, ChRow<N, T>& seen) {
    const int n1 = p.n() + 1;
    ChRow<N, T> a0, v, a, sum_v, sum_a;
    ChRow<N, T>& q = seen;  // each stage's point; the last one's is the result
    ch_accelerations<N, T>(qpos, qvel, force, p, a0);  // stage 0: (qpos, qvel)
    ch_stage_point<N, T>(qpos, qvel, p.half_h, qvel, a0, n1, q, v);  // stage 1 (frac ½) from stage 0
    ch_accelerations<N, T>(q, v, force, p, a);
    ch_for<N>(0, n1, [&](int i) CH_LAMBDA {  // stage 1's (v, a) kept until stage 2 joins it in k1 + k2
        sum_v[i] = v[i];
        sum_a[i] = a[i];
    });
    ch_stage_point<N, T>(qpos, qvel, p.half_h, v, a, n1, q, v);  // stage 2 (frac ½) from stage 1
    ch_accelerations<N, T>(q, v, force, p, a);
    ch_for<N>(0, n1, [&](int i) CH_LAMBDA {  // k1 + k2, as advance adds them
        sum_v[i] = sum_v[i] + v[i];
        sum_a[i] = sum_a[i] + a[i];
    });
    ch_stage_point<N, T>(qpos, qvel, p.timestep, v, a, n1, q, v);  // stage 3 (frac 1) from stage 2
    ch_accelerations<N, T>(q, v, force, p, a);
    // advance(qpos, vs) and advance(qvel, acs): x0 + h6 (k0 + k3) + h3 (k1 + k2)
    ch_for<N>(0, n1, [&](int i) CH_LAMBDA {
        const T qn = qpos[i] + p.h6 * (qvel[i] + v[i]) + p.h3 * sum_v[i];
        const T vn = qvel[i] + p.h6 * (a0[i] + a[i]) + p.h3 * sum_a[i];
        qpos[i] = qn;
        qvel[i] = vn;
    });
}

template <int N>
CH_HD void ch_rk4_step(ChRow<N>& qpos, ChRow<N>& qvel, float force, const ChainParams<N>& p) {
    ChRow<N> unused;
    ch_rk4_step<N, float>(qpos, qvel, force, p, unused);
}

// ---- actuator_force: gear × ctrl clamped to ctrlrange [−1, 1] (mj_fwdActuation) ----
template <int N>
CH_HD float ch_actuator_force(float ctrl, const ChainParams<N>& p) {
    return p.gear * fminf(fmaxf(ctrl, -1.0f), 1.0f);
}

// A row's qpos and qvel from memory (load) and back (store): the row is qpos (cart x, n hinge
// angles) then qvel, 2(n+1) floats `stride` apart (1 in global memory; W when a CPU block keeps W
// environments interleaved for SIMD).
template <int N>
CH_HD void ch_load_row(const float* state, int64_t stride, const ChainParams<N>& p, ChRow<N>& qpos, ChRow<N>& qvel) {
    const int n1 = p.n() + 1;
    ch_for<N>(0, n1, [&](int i) CH_LAMBDA {
        qpos[i] = state[i * stride];
        qvel[i] = state[(n1 + i) * stride];
    });
}

template <int N>
CH_HD void ch_store_row(float* state, int64_t stride, const ChainParams<N>& p, const ChRow<N>& qpos,
                        const ChRow<N>& qvel) {
    const int n1 = p.n() + 1;
    ch_for<N>(0, n1, [&](int i) CH_LAMBDA {
        state[i * stride] = qpos[i];
        state[(n1 + i) * stride] = qvel[i];
    });
}

// ---- physics_step / _steps: `steps` mj_steps of one environment's state row with one control ----
template <int N>
CH_HD void ch_physics_step(float* state, int64_t stride, float ctrl, const ChainParams<N>& p, int steps) {
    ChRow<N> qpos, qvel;
    ch_load_row<N>(state, stride, p, qpos, qvel);
    const float force = ch_actuator_force<N>(ctrl, p);
    for (int k = 0; k < steps; ++k) ch_rk4_step<N>(qpos, qvel, force, p);
    ch_store_row<N>(state, stride, p, qpos, qvel);
}

// One mj_step of a row under an actuator force (ch_physics_step's loop body with its loads and
// stores): the CPU build's lane loop runs this once per mj_step, its frame_skip loop outside, so
// that the loop GCC vectorizes holds no loop of run-time length. `seen` (null: not kept) gets the
// last RK4 stage's qpos, n + 1 floats `stride` apart.
template <int N>
CH_HD void ch_mj_step(float* state, int64_t stride, float force, const ChainParams<N>& p, float* seen = nullptr) {
    ChRow<N> qpos, qvel, q;
    ch_load_row<N>(state, stride, p, qpos, qvel);
    ch_rk4_step<N>(qpos, qvel, force, p, q);
    ch_store_row<N>(state, stride, p, qpos, qvel);
    if (seen) ch_for<N>(0, p.n() + 1, [&](int i) CH_LAMBDA { seen[i * stride] = q[i]; });
}
