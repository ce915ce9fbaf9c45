"""The machine's subcommands: ``machine`` (this machine's provenance, JSON) and ``advise`` (the cost
model's advice for a simulator, on this machine or with a GPU's published figures)."""

from __future__ import annotations

import json

from ..errors import ConfigError
from ..settings import POLICIES
from .options import data_dir_of, nonnegative_float, parse_names, positive, positive_float


def cmd_machine(args, out) -> int:
    from ..harness.data.provenance import machine_info

    out.write(json.dumps(machine_info(), indent=1) + "\n")
    return 0


def cmd_advise(args, out) -> int:
    """The cost model's advice for one simulator, on this machine (calibrated by microbenchmarks,
    measured once into the data folder) or with a GPU's published figures (a projection)."""
    from ..harness.model import costmodel
    from ..harness.model import calibrate

    flops = nonnegative_float("--flops-per-step", args.flops_per_step)
    nbytes = nonnegative_float("--bytes-per-step", args.bytes_per_step)
    n, k = positive("--num-envs", args.num_envs), positive("--steps", args.steps)
    policy = parse_names("--policy", args.policy, POLICIES)
    if len(policy) != 1:
        raise ConfigError(f"--policy takes one of {', '.join(POLICIES)}, got {args.policy!r}")
    if (args.gpu_tflops is None) != (args.gpu_bandwidth_gbs is None):
        raise ConfigError("--gpu-tflops and --gpu-bandwidth-gbs go together")
    gpu = None
    if args.gpu_tflops is not None:
        gpu = costmodel.Processor(positive_float("--gpu-tflops", args.gpu_tflops) * 1e12,
                                  positive_float("--gpu-bandwidth-gbs", args.gpu_bandwidth_gbs) * 1e9,
                                  launch_s=costmodel.LAUNCH_S, is_gpu=True)
    data_dir = data_dir_of(args)
    machine = costmodel.machine_from_calibration(calibrate.calibration_rows(data_dir), calibrate.ceiling_rows(data_dir))
    label = "this machine (measured microbenchmarks)"
    if gpu is not None:
        machine = costmodel.with_gpu(machine, gpu, "this host with the GPU given", "figures given on the command line")
        label = (f"this host with a GPU of {args.gpu_tflops} TFLOP/s and {args.gpu_bandwidth_gbs} GB/s: "
                 "projection (model), not a measurement")
    out.write(f"simulator: {flops:g} flops and {nbytes:g} bytes per environment-step, N={n}, K={k}, policy {policy[0]}\n"
              f"on {label}\n")
    for a in costmodel.advise(machine, flops_per_step=flops, bytes_per_step=nbytes, num_envs=n, steps=k,
                              policy=policy[0]):
        verdict = "pays" if a.pays else "does not pay"
        out.write(f"  {a.optimization:<14} {verdict:<13} {a.speedup:10.3g}x  "
                  f"({a.faster.impl}: {a.faster.samples_per_s:.3g} samples/s, {a.faster.regime}; "
                  f"{a.slower.impl}: {a.slower.samples_per_s:.3g}, {a.slower.regime})\n")
    return 0
