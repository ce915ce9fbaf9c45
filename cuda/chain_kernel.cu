// CUDA kernels of the n-link chain, one thread per environment, its state in registers for all K
// steps of a launch (read and written once). The dynamics and the episode step are chain.cuh's,
// the same header the CPU build (chain_cpu.cpp) compiles; the argument is one ChainArgs by value
// (chain_args.h). Compiled here by NVRTC with CuPy's options (tests/test_chain_native.py) and,
// through cuda_host.h, by the host C++ compiler for the tests (chain_kernel_host.cpp).
//
// Entry points, for each unrolled n (CH_FOR_EACH_LINKS: _1 .. _8) and for the run-time-n build
// (_generic: every n from 1 to CH_MAX_LINKS, its arrays in local memory):
//   chain_rollout_<n>(a)                 physics only, K environment steps (CTRL or HASH controls)
//   chain_episodes_<n>(a, done)          episode.advance K times (CTRL or HASH), ch_env_step per thread
//   chain_episodes_mlp_<n>(a, t, done)   the same with the Gaussian MLP policy fused (weights in
//                                        shared memory, mlp.cuh's forward pass per thread); with
//                                        t's arrays given (chain_trajectory.h), every step's
//                                        observation, sample, log-probability, reward, flags and
//                                        pre-reset observation recorded: a PPO trajectory per launch
// and chain_reset_generic(a) (every env to episode 0, or, a.reset_mask given, chain_restart's
// next episode of the masked ones). `done` (one unsigned long long, zeroed by the caller) counts
// the episodes that ended. The MLP kernels are apart so that the physics-only and hashed kernels'
// register allocation is not the MLP's.
#include "chain.cuh"
#include "chain_args.h"
#include "chain_trajectory.h"
#include "mlp.cuh"

#define CH_KERNEL_JB 8  // layer-2 neurons per register block of the MLP (mlp_forward_sized)
// Floats of the packed policy for an input width: w1 (in, 64), b1, w2 (64, 64), b2, w3 (64, 1), b3.
#define CH_POLICY_FLOATS(in) ((in) * MLP_HIDDEN + MLP_HIDDEN + MLP_HIDDEN * MLP_HIDDEN + 2 * MLP_HIDDEN + 1)

// The per-thread loop of every chain_rollout_<n>: K environment steps of frame_skip mj_steps each
// (dynamics.py's _steps, ch_physics_step's loop), the state in registers throughout.
template <int N>
__device__ __forceinline__ void ch_thread_rollout(const ChainArgs& a, long long i) {
    const ChainParams<N> p = ch_params_from_array<N>(a.params);
    float* row = a.state + i * 2 * (p.n() + 1);
    ChRow<N> qpos, qvel;
    ch_load_row<N>(row, 1, p, qpos, qvel);
    for (int k = 0; k < a.num_steps; ++k) {
        const float force = ch_actuator_force<N>(ch_args_ctrl(a, i, k), p);
        for (int sub = 0; sub < p.frame_skip; ++sub) ch_rk4_step<N>(qpos, qvel, force, p);
    }
    ch_store_row<N>(row, 1, p, qpos, qvel);
}

#if defined(__CUDACC__)
#define CH_NOINLINE __noinline__
#else
#define CH_NOINLINE __attribute__((noinline))
#endif

// The Gaussian policy's mean at an observation of `in` floats: mlp.cuh's forward pass with the
// width a run-time value, one function for every n (inlined into each of the nine MLP kernels, its
// unrolled 64 x 64 layer multiplied the compile time of the kernels several-fold).
__device__ CH_NOINLINE float ch_policy_mean(const float* obs, int in, const float* w) {
    float mean;
    mlp_forward_sized<0, 1, CH_KERNEL_JB, float>(obs, in, w, &mean);
    return mean;
}

// The per-thread loop of the episode kernels: ch_env_step K times with the controls of a.policy
// (MLP: the policy on `w`, the weights in shared memory), the row in registers (unrolled builds),
// then the state, counters, last flags and reward written back and the ended episodes counted.
// Recording (MLP, t.obs given: the collection): the policy sees ch_normalized observations, and
// every step is written to the trajectory t at row k * n + i. A run-time branch, uniform across
// the launch, so that one kernel per n serves both (each kernel more doubles the compile time).
template <int N, bool MLP>
__device__ __forceinline__ void ch_thread_episodes(const ChainArgs& a, long long i, const float* w,
                                                   unsigned long long* done_count, const ChainTrajectoryArgs& t) {
    const ChainParams<N> p = ch_params_from_array<N>(a.params);
    const int row_len = 2 * (p.n() + 1), obs_size = CH_OBS_SIZE(p.n());
    const uint32_t env = (uint32_t)i, seed = a.seed;
    float row[2 * (CH_CAP(N) + 1)];
    float* const global_row = a.state + i * row_len;
    ch_for<N>(0, row_len, [&](int j) CH_LAMBDA { row[j] = global_row[j]; });
    int32_t elapsed = a.elapsed[i];
    uint32_t episode = a.episode[i];
    int flags = 0;
    float reward = 0.0f;
    unsigned long long done = 0;
    const bool record = MLP && t.obs != nullptr;
    for (int k = 0; k < a.num_steps; ++k) {
        const long long traj_row = (long long)k * a.n + i;
        float ctrl;
        if constexpr (MLP) {  // clip(mean + action_std z, -1, 1) on the current observation
            float obs[CH_OBS_SIZE(CH_CAP(N))];
            ch_observation<N>(row, 1, p, obs, 1);
            if (record) {
                ch_for<N>(0, obs_size, [&](int j) CH_LAMBDA {
                    t.obs[traj_row * obs_size + j] = obs[j];
                    obs[j] = ch_normalized(obs[j], t, j);
                });
            }
            const float mean = ch_policy_mean(obs, obs_size, w);
            const float z = ch_policy_noise(seed, env, episode, (uint32_t)elapsed);
            const float sample = mean + a.action_std * z;
            if (record) {
                t.actions[traj_row] = sample;
                t.logp[traj_row] = ch_gaussian_logp(z, t.log_std);
            }
            ctrl = fminf(fmaxf(sample, -1.0f), 1.0f);
        } else {
            ctrl = a.policy == CH_POLICY_CTRL ? CP_LDG(a.ctrl + (long long)k * a.n + i)
                                              : ch_hash_ctrl(seed, env, episode, (uint32_t)elapsed);
        }
        float* final_obs = record ? t.final_obs + traj_row * obs_size
                                  : (a.final_obs && k + 1 == a.num_steps ? a.final_obs + i * obs_size : nullptr);
        flags = ch_env_step<N>(row, 1, ctrl, elapsed, episode, env, seed, p, reward, final_obs);
        if (record) {
            t.reward[traj_row] = reward;
            t.flags[traj_row] = (uint8_t)flags;
        }
        done += flags != 0;
    }
    ch_for<N>(0, row_len, [&](int j) CH_LAMBDA { global_row[j] = row[j]; });
    a.elapsed[i] = elapsed;
    a.episode[i] = episode;
    if (a.num_steps > 0) {
        a.flags_out[i] = (uint8_t)flags;
        a.reward_out[i] = reward;
    }
    if (done) atomicAdd(done_count, done);
}

// The policy (CH_POLICY_FLOATS of the observation's width) into the block's shared memory, every
// thread of the block helping; then a barrier. Call it from every thread of a block.
__device__ __forceinline__ void ch_load_policy_shared(float* w, const float* __restrict__ weights, int count) {
    for (int j = threadIdx.x; j < count; j += blockDim.x) w[j] = CP_LDG(weights + j);
    __syncthreads();
}

// Whether kernel `build` (an unrolled n, or CH_GENERIC) steps these arguments.
__device__ __forceinline__ bool ch_kernel_takes(const ChainArgs& a, int build) {
    return build == CH_GENERIC ? ch_links_supported(a.links) : (a.links == build && !a.generic);
}

// The launcher checks the arguments (studylib.sims.chain.native does, before any launch): a kernel
// given bad ones returns without touching memory.
#define CH_KERNELS(N, NAME)                                                                               \
    extern "C" __global__ void chain_rollout_##NAME(const ChainArgs a) {                                  \
        const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;                              \
        if (!ch_kernel_takes(a, N) || ch_check_args(a) != CH_OK || i >= a.n) return;                       \
        ch_thread_rollout<N>(a, i);                                                                         \
    }                                                                                                       \
    extern "C" __global__ void chain_episodes_##NAME(const ChainArgs a, unsigned long long* done) {       \
        const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;                              \
        if (!ch_kernel_takes(a, N) || ch_check_episode_args(a) != CH_OK || a.policy == CH_POLICY_MLP ||   \
            i >= a.n)                                                                                       \
            return;                                                                                         \
        ch_thread_episodes<N, false>(a, i, nullptr, done, ChainTrajectoryArgs{});                           \
    }                                                                                                       \
    extern "C" __global__ void chain_episodes_mlp_##NAME(const ChainArgs a, const ChainTrajectoryArgs t,  \
                                                         unsigned long long* done) {                       \
        __shared__ float w[CH_POLICY_FLOATS(CH_OBS_SIZE(CH_CAP(N)))];                                      \
        if (!ch_kernel_takes(a, N) || ch_check_episode_args(a) != CH_OK || a.policy != CH_POLICY_MLP ||    \
            (t.obs && ch_check_collect_args(a, t) != CH_OK))                                               \
            return; /* uniform across the block: no divergent barrier */                                    \
        ch_load_policy_shared(w, a.weights, CH_POLICY_FLOATS(CH_OBS_SIZE(a.links)));                       \
        const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;                              \
        if (i >= a.n) return; /* after the barrier: every thread helped load the weights */                \
        ch_thread_episodes<N, true>(a, i, w, done, t);                                                      \
    }
#define CH_UNROLLED_KERNELS(N) CH_KERNELS(N, N)
// The unrolled n that get kernels: every one, or with CH_KERNEL_SUBSET defined (the tests' quick
// compile; benchmarks/chain_kernels.py compiles them all) the smallest and the largest, whose
// register use brackets the others'.
#if defined(CH_KERNEL_SUBSET)
#define CH_KERNEL_LINKS(X) X(1) X(8)
#else
#define CH_KERNEL_LINKS(X) CH_FOR_EACH_LINKS(X)
#endif
CH_KERNEL_LINKS(CH_UNROLLED_KERNELS)
CH_KERNELS(CH_GENERIC, generic)
#undef CH_UNROLLED_KERNELS
#undef CH_KERNELS

// Every environment to episode 0's first state, counters zero (a.reset_mask null: chain_reset);
// or the masked environments to their next episode, their first observation into a.final_obs
// when given (chain_restart). The run-time-n build: a reset is no hot path.
extern "C" __global__ void chain_reset_generic(const ChainArgs a) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    ChainArgs check = a;
    check.num_steps = 0;
    check.policy = CH_POLICY_CTRL;
    if (ch_check_episode_args(check) != CH_OK || i >= a.n) return;
    const ChainParams<CH_GENERIC> p = ch_params_from_array<CH_GENERIC>(a.params);
    float* row = a.state + i * 2 * (p.n() + 1);
    if (!a.reset_mask) {
        ch_reset_row<CH_GENERIC>(row, 1, a.seed, (uint32_t)i, 0u, p);
        a.elapsed[i] = 0;
        a.episode[i] = 0;
    } else if (a.reset_mask[i]) {
        const uint32_t episode = a.episode[i] + 1u;
        ch_reset_row<CH_GENERIC>(row, 1, a.seed, (uint32_t)i, episode, p);
        a.elapsed[i] = 0;
        a.episode[i] = episode;
        if (a.final_obs) ch_observation<CH_GENERIC>(row, 1, p, a.final_obs + i * CH_OBS_SIZE(p.n()), 1);
    }
}
