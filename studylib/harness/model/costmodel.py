"""A cost model of one data-collection call: K steps of N environments, per implementation family.

    m = costmodel.machine_from_calibration(calibration_rows, ceiling_rows)   # this machine, measured
    p = costmodel.predict("jax", m, num_envs=4096, steps=100, policy="mlp")
    p.samples_per_s, p.regime                                                # e.g. 7e6, "compute-bound"

The work of a step is counted once in ``studylib.costs`` (flops, sin/cos/tanh, bytes). The paper's
knobs as §4.2 defines them: "The compute factor C increases the compute requirements of cartpole
by C× by increasing the number of simulation iterations. The state factor S increases the cartpole
state size by a factor of S×, resulting in S× as many global memory loads and stores": S enters
only through ``costs.unfused_bytes(S)`` (32·S + 16 bytes per environment-step); the arithmetic is
one CartPole's × C (``costs.step_flops(1, C)``).

Assumptions (each a term of ``Prediction.terms``, seconds per call):

* python   a fixed cost per call (the Python->backend dispatch of a compiled call, the native call,
           the final fetch; the kernels a call launches once go under "launch") plus, for eager
           frameworks, a cost per framework operation times the operations per step, and for gym
           a Python cost per environment per step (C calls of gymnasium's ``CartPoleEnv.step``).
           Host costs run one after another.
* launch   per device kernel: on a GPU, each kernel launch costs the launch latency; on a CPU,
           XLA's cost per kernel inside a compiled loop (eager frameworks' per-kernel cost is part
           of their per-operation cost). Operations and kernels per step are counted from our
           implementations (``harness.model.calibrate``).
* compute  flops ÷ peak FP32 plus sin/cos/tanh × their cost (on a GPU they are left to the flops:
           special-function units).
* memory   bytes ÷ stream bandwidth. Unfused (every eager or compiled framework, and a native
           call with a policy between its steps): 32·S + 16 bytes per environment-step, plus 1040
           with the MLP's activations, plus 8 bytes per kernel (one float32 read and one written
           per environment: the intermediates an unfused framework passes between its kernels).
           Fused (a native call of K steps without policy: cpp on the CPU, cuda on a GPU): the
           state goes to memory once per call, (32·S + 16)·N bytes.
  Per step the device does the larger of compute and memory (a roofline). Host and device work
  add up, except for a vectorized framework (torch, jax) on a GPU, whose host queues the steps
  asynchronously: per step the larger of host time and device time counts. gym and cpp wait for
  the policy's actions every step, and on a CPU one set of cores runs both.

What it leaves out (the chapter says where it shows): caches (the memory term uses DRAM bandwidth
even for a working set that fits in cache), SIMD and thread efficiency below peak, episode resets,
the policy's launches in gym/cpp beyond their counted operations, and contention between processes.

The regime of a call is its largest term: "Python-bound", "launch-bound", "compute-bound" or
"memory-bound".

Versions (``VERSION``; a saved prediction records the version that made it and is never remade):

1. gym's Python loop costs gymnasium's CartPole step per environment (``gym_env_step_s``) × C,
   whatever the simulator.
2. where the simulator's gym row steps MuJoCo (its record's ``mujoco_mjcf``), it costs per
   environment the Python of one gymnasium ``MujocoEnv`` step (``gym_mujoco_python_s``,
   calibrated on gymnasium's InvertedDoublePendulum-v5) plus MuJoCo's physics of one environment
   step (``reference_step_s``: frame_skip × MuJoCo's own timer of one ``mj_step`` of that model,
   given by the caller). Version 1 priced the chain's gym row at CartPole's Python step and missed
   it by more than an order of magnitude at every n (the chain chapter shows by how much).
   CartPole's predictions are the same in both versions.
3. a native call per step with the policy between steps (cpp with the MLP) pays per step the
   timer of the simulator's host-run policy (``HostPolicy``: the record's own policy call timed
   alone at two N, ``harness.model.calibrate``): its fixed cost (framework calls, the noise drawn
   in numpy, copies: what version 2's counted PyTorch calls at a no-work op's cost left out) and
   the policy's flops at the rate it measured, not at the FMA peak. Version 2 missed those points
   by 2.4×-5.3× out of sample on the 2-core Zen 4 (n = 3, 6). Without the timer (an older
   calibration; a GPU, where the policy runs there) the price is version 2's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ... import costs, sims
from ...errors import ConfigError
from ...implspec import DISPATCHES, spec, specs

TERMS = ("python", "launch", "compute", "memory")
INTERMEDIATE_BYTES_PER_KERNEL = 2 * 4  # one float32 per environment read and one written by each kernel
VERSION = 3  # the model's version (see the module doc): saved with every prediction
REGIMES = {"python": "Python-bound", "launch": "launch-bound", "compute": "compute-bound", "memory": "memory-bound"}


@dataclass(frozen=True)
class Processor:
    """Ceilings of one processor (a CPU or a GPU)."""

    flops_per_s: float  # peak FP32
    bytes_per_s: float  # stream bandwidth (read + written)
    transcendental_s: float = 0.0  # one sin/cos/tanh, the whole processor (0: counted as flops)
    launch_s: float = 0.0  # per kernel: GPU launch latency (0 on a CPU)
    is_gpu: bool = False


@dataclass(frozen=True)
class HostCosts:
    """Seconds of the host's single-threaded costs (microbenchmarks, ``harness.model.calibrate``)."""

    torch_op_s: float  # one eager PyTorch op doing no work
    jax_call_s: float  # one call of a jitted JAX function
    native_call_s: float  # one ctypes call into the C++ library (an empty OpenMP region)
    xla_kernel_s: float  # one kernel inside an XLA:CPU compiled loop
    gym_env_step_s: float  # one gymnasium CartPoleEnv.step in a Python loop
    # the Python of one gymnasium MujocoEnv step beyond MuJoCo's physics (None: a calibration saved
    # before model version 2 measured it)
    gym_mujoco_python_s: float | None = None

    def scaled(self, factor: float) -> "HostCosts":
        return HostCosts(*(None if getattr(self, f) is None else getattr(self, f) * factor
                           for f in HostCosts.__dataclass_fields__))


@dataclass(frozen=True)
class HostPolicy:
    """A simulator's host-run policy between native steps (version 3), from its timer at two N:
    seconds per call = fixed_s + N x one environment's policy flops / flops_per_s."""

    fixed_s: float  # per call, whatever N: framework calls, the noise's numpy calls, copies
    flops_per_s: float  # the rate of its arithmetic in that call

    def scaled(self, factor: float) -> HostPolicy:
        return HostPolicy(self.fixed_s * factor, self.flops_per_s / factor)


@dataclass(frozen=True)
class Counts:
    """Python->backend calls and device kernels per call and per step, per (family, policy),
    counted from our implementations: {(impl, policy): {"calls_per_step", "calls_per_call",
    "kernels_per_step", "kernels_per_call"}}."""

    table: dict

    def get(self, impl: str, policy: str, what: str) -> float:
        try:
            return float(self.table[(impl, policy)][what])
        except KeyError:
            raise ConfigError(f"no counted operations for {impl} with policy {policy!r}") from None


@dataclass(frozen=True)
class Machine:
    """Where the model runs: the CPU (gym's and cpp's simulation, the host), an optional GPU
    (torch, jax, cuda and the policy of gym/cpp run there when present), the host's costs, the
    counts, and where each parameter comes from."""

    name: str
    cpu: Processor
    host: HostCosts
    counts: Counts
    gpu: Processor | None = None
    sources: dict = field(default_factory=dict)  # parameter -> citation or provenance
    host_policy: dict = field(default_factory=dict)  # simulator -> HostPolicy (version 3; absent: version 2's price)

    @property
    def device(self) -> Processor:
        return self.gpu or self.cpu


@dataclass(frozen=True)
class Prediction:
    impl: str
    num_envs: int
    steps: int
    seconds_per_call: float
    terms: dict  # TERMS -> seconds per call (on a GPU, the hidden side of host/device overlap is 0)

    @property
    def samples_per_s(self) -> float:
        return self.num_envs * self.steps / self.seconds_per_call

    @property
    def regime(self) -> str:
        return REGIMES[max(self.terms, key=self.terms.get)]

    @property
    def dominant(self) -> str:
        return max(self.terms, key=self.terms.get)


def _device_work(proc: Processor, n: int, flops: float, trans: float, nbytes: float) -> tuple[float, float]:
    """(compute, memory) seconds of the device's share, the smaller of the two zeroed (roofline)."""
    compute = n * flops / proc.flops_per_s + n * trans * proc.transcendental_s
    memory = nbytes / proc.bytes_per_s
    return (compute, 0.0) if compute >= memory else (0.0, memory)


def _combine(fixed, host: dict, device: dict, k: int, overlap: bool) -> tuple[float, dict]:
    """Seconds per call and its terms from the fixed cost per call (seconds of Python, or a dict of
    terms) and the per-step host and device terms.
    ``overlap`` (a vectorized framework on a GPU: nothing waits for the device between steps): per
    step only the larger of host and device counts; else they add up."""
    if overlap:
        per_step = host if sum(host.values()) >= sum(device.values()) else device
    else:
        per_step = {t: host.get(t, 0.0) + device.get(t, 0.0) for t in TERMS}
    fixed = fixed if isinstance(fixed, dict) else {"python": fixed}
    terms = {t: k * per_step.get(t, 0.0) + fixed.get(t, 0.0) for t in TERMS}
    return sum(terms.values()), terms


def predict(impl: str, machine: Machine, *, num_envs: int, steps: int, state_factor: int = 1,
            compute_factor: int = 1, policy: str = "mlp", flops_per_step: float | None = None,
            bytes_per_step: float | None = None, sim: str = sims.DEFAULT,
            transcendentals_per_step: float | None = None, params=None,
            reference_step_s: float | None = None) -> Prediction:
    """The model's time of one ``rollout(K)`` call of implementation ``impl`` on ``machine``,
    composed from its record (``implspec``): its ``dispatch`` (how a call reaches the hardware),
    its ``fused_policies`` (the policies one native call runs inside its K steps) and its devices
    (a GPU where it runs on one and the machine has one). ``flops_per_step`` and
    ``bytes_per_step`` replace CartPole's simulation flops (sin/cos then not counted apart, unless
    ``transcendentals_per_step`` gives them) and state bytes (per environment-step, unfused) for
    another simulator with the operation counts of ``machine.counts``. The simulator's work per step (flops, transcendentals, bytes at S and C) is its
    record's (``studylib.sims``), the policy's ``costs``'. No implementation or simulator is priced
    by its name: a new record with a dispatch is priced too. ``reference_step_s``: MuJoCo's physics
    of one environment step, where the simulator's gym row steps MuJoCo (version 2: that row's loop
    then costs ``gym_mujoco_python_s`` plus it per environment; None: CartPole's Python step × C)."""
    record = spec(impl)
    if record.dispatch is None:
        raise ConfigError(f"no cost model for {impl!r}: its record names no dispatch ({', '.join(DISPATCHES)})")
    if record.gpu_only and machine.gpu is None:
        raise ConfigError(f"{impl} needs a machine with a GPU")
    n, k, s, c = int(num_envs), int(steps), int(state_factor), int(compute_factor)
    if min(n, k, s, c) < 1:
        raise ConfigError("N, K, S and C must be positive integers")
    h, cnt, simulator = machine.host, machine.counts, sims.sim(sim)
    # the paper's S: more state (bytes), the same arithmetic (one instance, C sub-steps)
    params = simulator.default_params if params is None else params  # the record's work is of its parameters
    sim_flops, sim_trans = simulator.physics_flops(params, c), simulator.transcendentals(params, c)
    sizes = simulator.policy_sizes(params)
    pol_flops, pol_trans = costs.policy_flops(policy, sizes), costs.policy_transcendentals(policy, sizes)
    if flops_per_step is not None:
        sim_flops, sim_trans = float(flops_per_step), float(transcendentals_per_step or 0.0)
    flops, trans = sim_flops + pol_flops, sim_trans + pol_trans
    state_bytes = simulator.unfused_bytes(params, s) if bytes_per_step is None else float(bytes_per_step)
    ops = lambda what: cnt.get(impl, policy, what)  # noqa: E731
    between = lambda: ops("kernels_per_step") * INTERMEDIATE_BYTES_PER_KERNEL  # noqa: E731
    on_gpu = machine.gpu is not None
    # where its steps run: the GPU where it runs on one and there is one, else the CPU; a policy run
    # between steps runs on the framework's device (the GPU where there is one)
    proc = machine.gpu if on_gpu and "cuda" in record.devices else machine.cpu

    if record.dispatch in ("eager", "compiled"):  # vectorized on the device, the state to memory every step
        compute, memory = _device_work(proc, n, flops, trans, n * (state_bytes + costs.policy_bytes(policy, sizes) + between()))
        if record.dispatch == "eager":  # every operation a Python->framework call; on a CPU its kernel's cost is in it
            per_op, per_kernel = h.torch_op_s, proc.launch_s
            host = {"python": ops("calls_per_step") * per_op, "launch": ops("kernels_per_step") * per_kernel}
        else:  # one compiled call per K steps; each kernel of the loop costs a launch (GPU) or XLA's per-kernel cost
            per_op, per_kernel = h.jax_call_s, (proc.launch_s if proc.is_gpu else h.xla_kernel_s)
            host = {"python": 0.0, "launch": ops("kernels_per_step") * per_kernel}
        fixed = {"python": ops("calls_per_call") * per_op, "launch": ops("kernels_per_call") * per_kernel}
        return _prediction(impl, n, k, fixed, host, {"compute": compute, "memory": memory}, on_gpu)

    if prices_reference_step(impl):  # C Python steps per environment, the policy batched; no overlap:
        # the actions come back to the host every step
        host = {"python": n * _scalar_step_s(h, c, reference_step_s) + ops("calls_per_step") * h.torch_op_s,
                "launch": ops("kernels_per_step") * machine.device.launch_s}
        compute, memory = _device_work(machine.device, n, pol_flops, pol_trans,
                                       n * (costs.policy_bytes(policy, sizes) + between())) if policy == "mlp" else (0.0, 0.0)
        return _prediction(impl, n, k, 0.0, host, {"compute": compute, "memory": memory}, False)

    if policy not in record.fused_policies:  # native: one call per step, the policy between steps
        sim_c, sim_m = _device_work(proc, n, sim_flops, sim_trans, n * state_bytes)
        timed = machine.host_policy.get(simulator.name) if policy != "none" and not on_gpu else None
        if timed is not None:  # version 3: the policy as its own timer prices it, on the host
            host = {"python": h.native_call_s + timed.fixed_s, "launch": 0.0, "compute": sim_c, "memory": sim_m}
            return _prediction(impl, n, k, 0.0, host, {"compute": n * pol_flops / timed.flops_per_s, "memory": 0.0}, False)
        pol_c, pol_m = _device_work(machine.device, n, pol_flops, pol_trans, n * (costs.policy_bytes(policy, sizes) + between()))
        host = {"python": h.native_call_s + max(0.0, ops("calls_per_step") - 1) * h.torch_op_s,
                "launch": ops("kernels_per_step") * machine.device.launch_s, "compute": sim_c, "memory": sim_m}
        return _prediction(impl, n, k, 0.0, host, {"compute": pol_c, "memory": pol_m}, False)

    # native, the policy inside the kernel: one call of K steps, the state to memory once per call
    compute = n * flops / proc.flops_per_s + n * trans * proc.transcendental_s  # per step
    memory = n * state_bytes / proc.bytes_per_s  # per call
    fixed = {"python": h.torch_op_s, "launch": proc.launch_s} if proc.is_gpu else h.native_call_s
    device = {"compute": compute, "memory": 0.0} if k * compute >= memory else {"compute": 0.0, "memory": memory / k}
    return _prediction(impl, n, k, fixed, {}, device, False)


def prices_reference_step(impl: str) -> bool:
    """Whether ``predict`` prices ``impl``'s simulation by ``reference_step_s`` (where the simulator
    has a MuJoCo model): a record whose loop steps scalar simulators from Python (dispatch
    "python-loop", the gym row), whose per-environment step is then gymnasium's plus MuJoCo's."""
    return spec(impl).dispatch == "python-loop"


def _scalar_step_s(h: HostCosts, c: int, reference_step_s: float | None) -> float:
    """Seconds of one environment's step in gym's Python loop: gymnasium's CartPole step × C, or
    (a MuJoCo simulator's) gymnasium's MujocoEnv Python plus MuJoCo's physics."""
    if reference_step_s is None:
        return c * h.gym_env_step_s
    if h.gym_mujoco_python_s is None:
        raise ConfigError("this calibration predates gym_mujoco_python_s (model version 2): it cannot price a "
                          "MuJoCo simulator's gym row")
    return h.gym_mujoco_python_s + reference_step_s


def _prediction(impl, n, k, fixed, host, device, overlap) -> Prediction:
    total, terms = _combine(fixed, host, device, k, overlap)
    return Prediction(impl, n, k, total, terms)


# ---- machines ------------------------------------------------------------------------------------

def counts_from_rows(rows) -> Counts:
    return Counts({(r["impl"], r["policy"]): {k: r[k] for k in ("calls_per_step", "calls_per_call",
                                                                  "kernels_per_step", "kernels_per_call")}
                   for r in rows if r.get("quantity") == "calls"})


def machine_from_calibration(calibration_rows, ceiling_rows, name: str = "this machine") -> Machine:
    """This machine as its microbenchmarks measured it (``harness.model.calibrate``) and its ceilings
    (``harness.model.roofline``: FMA peak, stream bandwidth)."""
    value = {r["quantity"]: r.get("value") for r in calibration_rows if r.get("quantity") not in ("calls", HOST_POLICY)}
    ceil = {r["ceiling"]: r["value"] for r in ceiling_rows if r.get("ceiling") in ("fma", "memory")}
    optional = {f for f, d in HostCosts.__dataclass_fields__.items() if d.default is None}
    missing = [q for q in (*HostCosts.__dataclass_fields__, "transcendental_s") if value.get(q) is None and q not in optional]
    if missing or set(ceil) != {"fma", "memory"}:
        raise ConfigError(f"calibration incomplete: missing {', '.join(missing + sorted({'fma', 'memory'} - set(ceil)))}")
    host = HostCosts(**{f: float(value[f]) for f in HostCosts.__dataclass_fields__ if value.get(f) is not None})
    cpu = Processor(ceil["fma"], ceil["memory"], transcendental_s=float(value["transcendental_s"]))
    src = {**{f: "microbenchmark on this machine (harness.model.calibrate)" for f in HostCosts.__dataclass_fields__
              if value.get(f) is not None},
           "transcendental_s": "microbenchmark on this machine (numpy sin/cos, harness.model.calibrate)",
           "cpu.flops_per_s": "FMA microbenchmark (cuda/fma_peak.cpp)", "cpu.bytes_per_s": "stream copy (numpy)",
           "counts": "counted in our implementations at N = 8 (harness.model.calibrate)"}
    policies = host_policies(calibration_rows)
    if policies:
        src["host_policy"] = ("each simulator's host-run policy timed alone at two N (harness.model.calibrate): "
                              "fixed seconds per call and the rate of its flops")
    return Machine(name, cpu, host, counts_from_rows(calibration_rows), sources=src, host_policy=policies)


HOST_POLICY = "host_policy_s"  # the calibration's rows of a simulator's host-run policy timer (version 3)


def host_policies(calibration_rows) -> dict:
    """{simulator: HostPolicy} from the timer's rows (seconds of one call at each N, and the policy's
    flops per environment): the line through the smallest and the largest N. A simulator whose
    timer did not grow with N (noise at both ends) gets none: it is priced as version 2 prices."""
    timed = [r for r in calibration_rows if r.get("quantity") == HOST_POLICY and r.get("value") is not None]
    out = {}
    for sim in {r["sim"] for r in timed}:
        rows = sorted((r for r in timed if r["sim"] == sim), key=lambda r: r["num_envs"])
        lo, hi = rows[0], rows[-1]
        if hi["num_envs"] > lo["num_envs"] and hi["value"] > lo["value"]:
            per_env = (hi["value"] - lo["value"]) / (hi["num_envs"] - lo["num_envs"])
            out[sim] = HostPolicy(max(lo["value"] - lo["num_envs"] * per_env, 0.0), float(hi["policy_flops"]) / per_env)
    return out


# Published figures (the sources the chapter cites).
LAUNCH_S = 5e-6
LAUNCH_SOURCE = ("kernel launch overhead of 3–7 µs (Volkov & Demmel, 'Benchmarking GPUs to tune dense linear "
                 "algebra', SC 2008); the model takes 5 µs")
RTX_2080_TI = Processor(13.4e12, 616e9, launch_s=LAUNCH_S, is_gpu=True)
RTX_2080_TI_SOURCE = "NVIDIA GeForce RTX 2080 Ti specification: 13.4 TFLOP/s FP32 (boost), 616 GB/s GDDR6"
H100_SXM = Processor(67e12, 3.35e12, launch_s=LAUNCH_S, is_gpu=True)
H100_SOURCE = "NVIDIA H100 Tensor Core GPU datasheet (SXM5): 67 TFLOP/s FP32, 3.35 TB/s HBM3"
# AMD EPYC 7371 (§3.1 of the paper: "AMD EPYC 7371 CPU running at 3.1 GHz"): 16 cores (AMD's
# specification), Zen: two 128-bit FMA pipes per core = 16 FP32 flops per cycle; 8 channels of DDR4-2666.
EPYC_7371_CORES, EPYC_7371_HZ = 16, 3.1e9
EPYC_7371 = Processor(EPYC_7371_CORES * EPYC_7371_HZ * 16, 8 * 2666e6 * 8)
EPYC_7371_SOURCE = ("AMD EPYC 7371 specification: 16 cores, 3.1 GHz (§3.1), 8 channels DDR4-2666 (170.6 GB/s); "
                    "Zen's two 128-bit FMA pipes: 16 FP32 flops per cycle per core (794 GFLOP/s)")


def carried_to(machine: Machine, *, name: str, cpu: Processor, cpu_hz: float, cpu_cores: int, our_hz: float,
               our_cores: int, gpu: Processor | None, sources: dict) -> Machine:
    """``machine``'s host costs on another CPU by the stated rule: single-threaded host costs
    scaled by clock (ours / theirs); the native call (an OpenMP region) too; sin/cos per element
    scaled by clock and cores. Counts are ours."""
    factor = our_hz / cpu_hz
    cpu = replace(cpu, transcendental_s=machine.cpu.transcendental_s * factor * our_cores / cpu_cores)
    return Machine(name, cpu, machine.host.scaled(factor), machine.counts, gpu=gpu,
                   host_policy={s: hp.scaled(factor) for s, hp in machine.host_policy.items()},
                   sources={**machine.sources, **sources,
                            "host costs": f"this machine's microbenchmarks × clock ratio {our_hz / 1e9:.2f} GHz / "
                                          f"{cpu_hz / 1e9:.2f} GHz = {factor:.2f}"})


def paper_machine(ours: Machine, our_hz: float, our_cores: int) -> Machine:
    """§3.1's machine: AMD EPYC 7371 at 3.1 GHz and one RTX 2080 Ti, host costs carried over."""
    return carried_to(ours, name="the paper's machine (EPYC 7371 + RTX 2080 Ti)", cpu=EPYC_7371, cpu_hz=EPYC_7371_HZ,
                      cpu_cores=EPYC_7371_CORES, our_hz=our_hz, our_cores=our_cores, gpu=RTX_2080_TI,
                      sources={"gpu": RTX_2080_TI_SOURCE, "launch_s": LAUNCH_SOURCE, "cpu": EPYC_7371_SOURCE})


def with_gpu(ours: Machine, gpu: Processor, name: str, source: str) -> Machine:
    """This machine's host and CPU with ``gpu`` added (a projection: nothing measured on it)."""
    return replace(ours, name=name, gpu=gpu, sources={**ours.sources, "gpu": source, "launch_s": LAUNCH_SOURCE})


def limit_per_env_step(impl: str, machine: Machine, *, steps: int, state_factor=1, compute_factor=1,
                       policy="mlp", num_envs: int = 2**40) -> float:
    """Seconds per environment-step as N -> ∞ (fixed and per-step host costs vanish per env)."""
    p = predict(impl, machine, num_envs=num_envs, steps=steps, state_factor=state_factor,
                compute_factor=compute_factor, policy=policy)
    return p.seconds_per_call / (p.num_envs * p.steps)


@dataclass(frozen=True)
class Advice:
    """What pays for one simulator: each optimization's speedup (the faster over the slower) and
    the two predictions it compares."""

    optimization: str  # "vectorization", "ML compiler", "fusion"
    faster: Prediction
    slower: Prediction

    @property
    def speedup(self) -> float:
        return self.faster.samples_per_s / self.slower.samples_per_s

    @property
    def pays(self) -> bool:
        return self.speedup > 1.1  # a gain under 10 % is within the model's own error


def representative(dispatch: str, machine: Machine, policy: str) -> str:
    """The implementation that stands for ``dispatch`` on ``machine``: of the records with that
    dispatch that run there (a GPU-only one needs the machine's GPU) and, for ``native``, run
    ``policy`` inside their kernel, one that runs on the GPU where the machine has one, first in
    the book's order."""
    on_gpu = machine.gpu is not None
    found = [r for r in specs() if r.dispatch == dispatch and (on_gpu or not r.gpu_only)
             and (dispatch != "native" or policy in r.fused_policies)]
    if not found:
        raise ConfigError(f"no implementation with dispatch {dispatch!r} runs {policy!r} on {machine.name}")
    return min(found, key=lambda r: (on_gpu and "cuda" not in r.devices, r.order)).name


# The paper's three optimizations, each a dispatch over another (§3–4): vectorization, an ML
# compiler (K steps per call), and kernel fusion (K steps and the policy in one native kernel).
OPTIMIZATIONS = (("vectorization", "eager", "python-loop"), ("ML compiler", "compiled", "eager"),
                 ("fusion", "native", "compiled"))


def advise(machine: Machine, *, flops_per_step: float, bytes_per_step: float, num_envs: int, steps: int,
           policy: str = "none") -> list[Advice]:
    """For a simulator of ``flops_per_step`` and ``bytes_per_step`` (per environment-step): GPU or
    CPU vectorization (an eager framework) over a scalar Python loop costing gymnasium's CartPole
    per environment, an ML compiler (K steps per call) over the eager framework, and a fused kernel
    (on the GPU where there is one) over the ML compiler, each at ``num_envs`` and ``steps``; each
    dispatch's implementation is ``representative``'s."""
    kw = dict(num_envs=num_envs, steps=steps, policy=policy, flops_per_step=flops_per_step,
              bytes_per_step=bytes_per_step)
    p = {d: predict(representative(d, machine, policy), machine, **kw) for d in DISPATCHES}
    return [Advice(name, p[faster], p[slower]) for name, faster, slower in OPTIMIZATIONS]


def log2_error(predicted: float, measured: float) -> float:
    return abs(math.log2(predicted / measured))
