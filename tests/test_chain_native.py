"""The n-link chain's C/CUDA builds (cuda/chain.cuh; studylib.sims.chain.native) against its reference,
studylib.sims.chain (numpy float64), which tests/test_chain.py checks against MuJoCo's mj_step: the
CPU build (chain_cpu: SIMD block loop and scalar path), the CUDA kernel built for and launched on
the CPU (chain_kernel_host), and the kernel compiled by NVRTC as CuPy compiles it (sm_80, sm_90: no
spills, a register budget). The states and controls are tests/test_chain.py's (1000 random
states per n, cart x in ±1, angles in ±0.5, velocities in ±2, controls in ±1). The episodes
(observation, reward, termination, resets, the fused MLP policy) are tests/test_chain_native_episodes.py's.
The CPU build's speed is a benchmark's, not a test's: benchmarks/chain_fused.py prints it (cpp, no
policy) beside fused with the MLP and MuJoCo's rollout."""

from __future__ import annotations

import ctypes
import functools

import numpy as np
import pytest

from studylib import native
from studylib.errors import ConfigError, StudyError
from studylib.sims.chain import native as nc
from studylib.sims import chain
from tests.test_chain import mujoco_trajectories, random_inputs, relative_error

LINKS = (1, 2, 3, 4, 6, 8)
TOL32 = 1e-4  # tests/test_chain.py's float32 bound: |a − b| / max(|b|, 1) on qpos and qvel
K = 10  # environment steps of the rollout tests (50 mj_steps: tests/test_chain.py's STEPS)


pytestmark = pytest.mark.usefixtures("native_compiler")  # skips the module where no C++ compiler builds


def _params(n):
    return chain.ChainParams(links=n)


# ---- the library and its arguments ----

def test_the_library_is_registered_and_its_struct_has_the_ctypes_layout():
    assert "chain_cpu" in native.LIBRARIES and native.library("chain_cpu") is native.library("chain_cpu")
    assert nc.library_layout() == nc.chain_args_layout()
    assert len(nc.library_layout()) == 1 + len(nc.ChainArgs._fields_)


def test_every_n_up_to_32_is_stepped_and_1_to_8_are_unrolled():
    assert nc.unrolled_links() == tuple(range(1, 9)) and set(LINKS) <= set(nc.unrolled_links())
    assert nc.instantiated_links() == tuple(range(1, 33)) and nc.max_links() == chain.model.MAX_LINKS


@pytest.mark.parametrize("n", LINKS)
def test_the_params_array_is_what_the_header_reads(n):
    p = _params(n)
    a = nc.params_array(p)
    assert a.dtype == np.float32 and len(a) == native.library("chain_cpu").chain_num_param_floats(n)
    beta, diag, m_total, gravity_x = chain._constants(p)
    np.testing.assert_array_equal(a[nc.NUM_SCALAR_PARAMS:], np.float32([*beta, *diag, *(p.link_length * b for b in beta)]))
    assert a[12] == p.frame_skip and a[6] == np.float32(p.total_mass)


def test_the_hashed_controls_are_reproduced_bit_for_bit():
    lib = native.library("chain_cpu")
    env, step = np.arange(300) * 7919, np.arange(300) % 37
    ours = nc.hash_ctrl(12345, env, step)
    theirs = np.array([lib.chain_hash_ctrl(12345, int(e), 0, int(s)) for e, s in zip(env, step)], np.float32)
    np.testing.assert_array_equal(ours, theirs)
    assert ours.min() >= -1 and ours.max() < 1 and ours.std() > 0.5


# ---- one step against numpy float64 and MuJoCo ----

@pytest.mark.parametrize("n", LINKS)
def test_one_environment_step_is_the_numpy_references_and_mujocos(n):
    """One environment step (frame_skip = 5 mj_steps) by the SIMD block loop: within float32's
    bound of numpy float64 (and so of MuJoCo, which the reference equals to 1e-13). Measured on this
    AVX-512 CPU, n = 1, 2, 4, 8: 1.0e-6, 1.4e-6, 3.6e-6, 1.0e-5 (float32 arithmetic through 20
    Cholesky solves; as torch's and jax's float32 in tests/test_chain.py)."""
    p = _params(n)
    states, ctrl, mj = mujoco_trajectories(n)
    ref = chain.physics_step(states, ctrl, p, steps=p.frame_skip)
    ours = nc.rollout(states, 1, p, ctrl=ctrl)
    assert ours.dtype == np.float32 and ours.shape == states.shape
    assert relative_error(ours, ref).max() <= TOL32
    assert relative_error(ours, mj[:, p.frame_skip - 1]).max() <= TOL32


@pytest.mark.parametrize("n", LINKS)
def test_one_mj_step_of_the_scalar_path_is_mujocos(n):
    """The one-step entry (chain_physics_step: one environment at a time, no SIMD), one mj_step:
    measured 3.5e-7 (n = 1) to 4.6e-6 (n = 8) from MuJoCo; and it agrees with the block loop."""
    p = _params(n)
    states, ctrl, mj = mujoco_trajectories(n)
    one = nc.physics_step(states, ctrl, p, mj_steps=1)
    assert relative_error(one, mj[:, 0]).max() <= TOL32
    assert relative_error(one, chain.physics_step(states, ctrl, p)).max() <= TOL32
    env_step = nc.physics_step(states, ctrl, p, mj_steps=p.frame_skip)
    assert relative_error(env_step, nc.rollout(states, 1, p, ctrl=ctrl)).max() <= TOL32


# ---- K steps: the chain is chaotic ----

def _growth(states, ctrl, p, mj_steps, ref, delta=1e-8):
    """G: the largest amplification over ``mj_steps`` of a ``delta`` relative kick of the start
    (the reference's own dynamics, float64)."""
    kick = np.random.default_rng(1).uniform(-delta, delta, states.shape) * np.maximum(np.abs(states), 1)
    return relative_error(chain.physics_step(states + kick, ctrl, p, steps=mj_steps), ref).max() / delta


@pytest.mark.parametrize("n", LINKS)
def test_k_steps_stay_with_numpy_and_mujoco_within_the_chaos_bound(n):
    """K = 10 environment steps (50 mj_steps) in one call against 50 numpy float64 mj_steps and
    MuJoCo's. Each step adds at most ε (the one-step error, measured here) and a difference grows
    at most G-fold (measured: a 1e-8 kick of the start over the 50 mj_steps, G ≈ 39, 356, 281, 385
    for n = 1, 2, 4, 8), so after K steps the error is at most K G ε; a factor 10 covers states the
    trajectories reach that the first step did not see (tests/test_chain.py's argument). Measured:
    1.3e-5, 2.9e-5, 1.1e-4, 1.2e-4 against bounds 4e-3, 5e-2, 0.1, 0.4: the float32 rounding does
    not line up with the most unstable direction. The absolute cap keeps a float32 goal."""
    p = _params(n)
    states, ctrl, mj = mujoco_trajectories(n)
    eps = relative_error(nc.rollout(states, 1, p, ctrl=ctrl), chain.physics_step(states, ctrl, p, steps=p.frame_skip)).max()
    ref = chain.physics_step(states, ctrl, p, steps=K * p.frame_skip)
    growth = _growth(states, ctrl, p, K * p.frame_skip, ref)
    ours = nc.rollout(states, K, p, ctrl=ctrl)
    error = relative_error(ours, ref).max()
    assert error <= 10 * K * growth * eps, (error, growth, eps)
    assert error < 1e-3
    assert relative_error(ours, mj[:, K * p.frame_skip - 1]).max() < 1e-3


@pytest.mark.parametrize("n", (2, 8))
def test_the_no_input_rollout_steps_the_hashed_controls(n):
    """Policy "none": K steps with the controls hashed from (seed, env, first_step + k), against
    numpy stepping the same controls (hash_ctrl, bit for bit) one environment step at a time; a
    rollout split in two calls (first_step) is the same rollout."""
    p = _params(n)
    states, _ = random_inputs(n, 500, seed=7)
    seed, ref = 99, states
    for k in range(K):
        ref = chain.physics_step(ref, nc.hash_ctrl(seed, np.arange(len(states)), 3 + k).astype(np.float64), p,
                                 steps=p.frame_skip)
    ours = nc.rollout(states, K, p, seed=seed, first_step=3)
    assert relative_error(ours, ref).max() < 1e-3
    half = nc.rollout(nc.rollout(states, 4, p, seed=seed, first_step=3), K - 4, p, seed=seed, first_step=7)
    assert relative_error(half, ours).max() < 1e-5  # one SIMD build: the same operations (exact barring lane order)


@pytest.mark.parametrize("n", LINKS)
@pytest.mark.parametrize("count", (37, 300))  # a partial block; full blocks, then a partial one
def test_the_cuda_kernels_host_build_is_the_cpu_builds(n, count):
    """chain_kernel.cu itself (chain_rollout_<n>, one thread per environment, state in registers),
    built by g++ through cuda_host.h and launched over CuPy's grid, against the CPU build: the same
    header, scalar sinf/cosf there and vector ones here, so equal to float32 rounding."""
    p = _params(n)
    states, ctrl = random_inputs(n, count, seed=3)
    for kwargs in ({"ctrl": ctrl}, {"seed": 5}):
        host = nc.host_rollout(states, 3, p, **kwargs)
        cpu = nc.rollout(states, 3, p, **kwargs)
        assert relative_error(host, cpu).max() < 1e-4


# ---- bad input: a clear error, never a crash ----

@pytest.mark.parametrize("n", (5, 12, 32))
def test_the_run_time_n_build_steps_the_other_chains(n):
    """n = 5 is unrolled; 12 and 32 take the run-time-n build (CH_GENERIC), whose block loop and
    kernel are the unrolled ones' code with loops of run-time length; and the generic build at an
    unrolled n is that n's. One environment step against numpy float64: float32's bound grows with
    n (measured 2e-6, 2e-5, 5e-4 at n = 5, 12, 32 from these random states)."""
    p = _params(n)
    states, ctrl = random_inputs(n, 64, seed=2)
    ref = chain.physics_step(states, ctrl, p, steps=p.frame_skip)
    ours = nc.rollout(states, 1, p, ctrl=ctrl)
    tol = {5: TOL32, 12: 1e-3, 32: 5e-3}[n]
    assert relative_error(ours, ref).max() <= tol
    assert relative_error(nc.host_rollout(states, 1, p, ctrl=ctrl), ours).max() <= tol
    assert relative_error(nc.physics_step(states, ctrl, p, mj_steps=p.frame_skip), ours).max() <= tol
    generic = nc.rollout(states, 1, p, ctrl=ctrl, generic=True)
    assert relative_error(generic, ours).max() <= tol


def test_the_run_time_n_build_is_vectorized_across_lanes():
    """The run-time-n build steps a block's lanes as one vector value (ch_mj_step_block): in its
    rollout's parallel body the multiply-adds are packed (vfmadd...ps; 46 at n = 0 with 8 AVX2
    lanes), as in an unrolled build's. Built lane by lane, as GCC compiles a lane loop around loops of run-time length, they were
    scalar (vfmadd...ss) and the build ran about 9 times slower at n = 16 and 32."""
    import re
    import subprocess

    from tests.test_fma_peak import _functions, _tool, _x86_64_only

    _x86_64_only()
    library = native.build.build_info("chain_cpu")["path"]
    text = subprocess.run([_tool("objdump"), "-d", "-C", "--no-show-raw-insn", library], capture_output=True,
                          text=True, check=True).stdout
    functions = _functions(text)
    for n in (0, 8):  # the run-time-n build (CH_GENERIC) and an unrolled one
        (body,) = [insns for name, insns in functions.items()
                   if re.match(rf"void chain_rollout_lanes<{n}, (8|16)>", name) and "_omp_fn" in name]
        packed = sum(bool(re.fullmatch(r"vfn?m(add|sub)\d+ps", mnemonic)) for _, mnemonic, _ in body)
        scalar = sum(bool(re.fullmatch(r"vfn?m(add|sub)\d+ss", mnemonic)) for _, mnemonic, _ in body)
        assert packed >= 30 and packed >= 10 * scalar, (n, packed, scalar)


def test_a_chain_longer_than_32_is_refused():
    with pytest.raises(ConfigError):
        _params(33)
    args, keep = _raw_args(links=33)
    with pytest.raises(StudyError, match="not one this build steps"):
        nc.call_rollout(args)


def _raw_args(n_envs=4, links=2, **fields):
    """A ChainArgs filled by hand (not through rollout's checks), and the arrays it points at."""
    state = np.zeros((max(n_envs, 1), 6), np.float32)
    params = nc.params_array(_params(2))
    fields = {"num_steps": 1, "policy": nc.POLICY_HASH, **fields}
    args = nc.ChainArgs(state=state.ctypes.data, params=params.ctypes.data, n=n_envs, links=links, **fields)
    return args, (state, params)


@pytest.mark.parametrize("fields, message", [
    ({"n_envs": -1}, "number of environments is negative"),
    ({"links": 33}, "number of links is not one this build steps"),
    ({"links": 0}, "number of links is not one this build steps"),
    ({"links": -5}, "number of links is not one this build steps"),
    ({"num_steps": -2}, "number of steps is negative"),
    ({"policy": 7}, "unknown policy"),
    ({"policy": nc.POLICY_CTRL}, "required array is null"),  # no ctrl given
])
def test_bad_arguments_raise_at_the_c_entry_points(fields, message):
    """The C entry points check their arguments themselves (ch_check_args), whatever Python passes:
    negative N, an n outside 1 .. 32, negative K, an unknown policy, a missing array."""
    args, keep = _raw_args(**fields)
    with pytest.raises(StudyError, match=message):
        nc.call_rollout(args)
    assert native.library("chain_kernel_host").host_chain_rollout(1, 32, ctypes.byref(args)) is not None
    if "num_steps" not in fields:  # chain_physics_step reads its own step count (mj_steps)
        assert native.library("chain_cpu").chain_physics_step(ctypes.byref(args), 1) != 0
    assert np.all(keep[0] == 0)  # nothing was touched


def test_a_negative_mj_step_count_is_refused():
    args, keep = _raw_args()
    assert native.library("chain_cpu").chain_physics_step(ctypes.byref(args), -1) == 4  # CH_ERR_STEPS
    assert native.library("chain_cpu").chain_physics_step(None, 1) == 3  # CH_ERR_NULL
    assert native.library("chain_cpu").chain_rollout(None) == 3


def test_bad_shapes_and_counts_raise_in_python():
    states, ctrl = random_inputs(2, 4)
    with pytest.raises(ConfigError, match=r"shape \(N, 6\)"):
        nc.rollout(states[:, :5], 1, _params(2), ctrl=ctrl)
    with pytest.raises(ConfigError, match="num_steps"):
        nc.rollout(states, -1, _params(2), ctrl=ctrl)
    with pytest.raises(ConfigError, match="mj_steps"):
        nc.physics_step(states, ctrl, _params(2), mj_steps=-1)
    with pytest.raises(ValueError):  # a ctrl that does not broadcast to (K, N)
        nc.rollout(states, 2, _params(2), ctrl=np.zeros(3))
    assert nc.rollout(states[:0], 5, _params(2)).shape == (0, 6)  # N = 0: nothing to do
    np.testing.assert_array_equal(nc.rollout(states, 0, _params(2)), states.astype(np.float32))


# ---- the kernel compiled as CuPy compiles it ----

# Registers per thread, above what NVRTC 13 gives today (sm_80 / sm_90 in brackets), low enough
# that a spill-prone regression (the RK4 stages all kept live, say) fails: the physics-only kernels
# and the episode kernels (CTRL/HASH) of the unrolled n. Neither spills at any n (measured sm_80:
# chain_episodes_<n> 56, 64, 79, 92, 105, 121, 146, 162 registers for n = 1 .. 8); the MLP kernels
# (chain_episodes_mlp_<n>) call the policy's forward pass as one function and are held to no spills
# only, the run-time-n kernels (_generic) keep their arrays in local memory (a stack of ~7.5 KB).
REGISTER_BUDGET = {"chain_rollout_1": 48, "chain_rollout_2": 56, "chain_rollout_3": 64,  # [40/40], [48/48], [56/56]
                   "chain_rollout_4": 80, "chain_rollout_5": 96, "chain_rollout_6": 112,  # [71/71], [88], [99/102]
                   "chain_rollout_7": 136, "chain_rollout_8": 160,  # [121], [143/148]
                   "chain_episodes_1": 64, "chain_episodes_2": 72, "chain_episodes_3": 88, "chain_episodes_4": 104,
                   "chain_episodes_5": 120, "chain_episodes_6": 136, "chain_episodes_7": 164, "chain_episodes_8": 184}


SUBSET = (1, 8)  # the unrolled n compiled under CH_KERNEL_SUBSET (cuda/chain_kernel.cu)


def _kernel_names(links=SUBSET):
    names = {"chain_reset_generic"}
    for n in (*links, "generic"):
        names |= {f"chain_rollout_{n}", f"chain_episodes_{n}", f"chain_episodes_mlp_{n}"}
    return names


def nvrtc_compile(arch: str, *, subset: bool = True) -> tuple[dict, str]:
    """(ptxas's registers and spills of every kernel of chain_kernel.cu, its PTX) as CuPy compiles it
    for ``arch`` (with ``subset``, CH_KERNEL_SUBSET's n only: n = 1 and 8 bracket the others),
    compiled once per session (about 20 s here) however the caller spells its arguments."""
    return _nvrtc_compile(str(arch), bool(subset))


@functools.cache
def _nvrtc_compile(arch: str, subset: bool) -> tuple[dict, str]:
    from tests.test_nvrtc import _nvrtc, cupy_options, ptxas_report

    nvrtc = _nvrtc()
    source = native.sources.CHAIN_KERNEL_SOURCE
    prog = nvrtc.createProgram(native.source_with_header_digest(source), source.name, (), ())
    options = [*cupy_options(arch), "-Xptxas=-v", *(["-DCH_KERNEL_SUBSET"] if subset else [])]
    try:
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError:
            pytest.fail(nvrtc.getProgramLog(prog))
        log, cubin, ptx = nvrtc.getProgramLog(prog), nvrtc.getCUBIN(prog), nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    assert cubin[:4] == b"\x7fELF"
    report = ptxas_report(log)
    assert _kernel_names(SUBSET if subset else nc.unrolled_links()) <= set(report), log
    return report, ptx.decode() if isinstance(ptx, bytes) else ptx


def nvrtc_report(arch: str, *, subset: bool = True) -> dict:
    return nvrtc_compile(arch, subset=subset)[0]


def test_nvrtc_compiles_the_kernel_without_spills():
    """n = 1, 8 and the run-time-n build, at sm_80 as CuPy compiles them (every n at sm_80 and
    sm_90: benchmarks/chain_kernels.py)."""
    for entry, usage in nvrtc_report("80").items():
        assert usage["spill_stores"] == 0 and usage["spill_loads"] == 0, (entry, usage)
        if entry in REGISTER_BUDGET:
            assert usage["registers"] <= REGISTER_BUDGET[entry], (entry, usage)


def test_each_kernel_takes_the_struct_by_value():
    """The PTX of that compile (sm_80, CH_KERNEL_SUBSET; NVRTC is nvcc's front end as a library, the
    compiler CuPy runs): the physics-only kernels take one ChainArgs, the episode kernels a
    ChainArgs and the pointer to the episode count, the MLP ones a ChainArgs, a
    ChainTrajectoryArgs (where a collection records) and that pointer."""
    ptx = nvrtc_compile("80")[1]  # the spills test's compile, from the session's cache
    size = ctypes.sizeof(nc.ChainArgs)
    for entry in _kernel_names():
        params = ptx.split(f".entry {entry}(")[1].split(")")[0]
        episodes, mlp = entry.startswith("chain_episodes"), entry.startswith("chain_episodes_mlp")
        assert params.count(".param") == (3 if mlp else 2 if episodes else 1)
        assert f"{entry}_param_0[{size}]" in params
        if mlp:
            assert f"{entry}_param_1[{ctypes.sizeof(nc.ChainTrajectoryArgs)}]" in params
