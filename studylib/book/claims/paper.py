"""The paper's reported values, each with where the paper says it (the chapters label them so)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperValue:
    """One number as Gleeson et al. (2022) report it (GPU: NVIDIA 2080Ti, CPU: AMD EPYC 7371)."""

    value: float
    unit: str  # "x" (speedup), "N" (environments), "%" ...
    where: str  # section / figure of the paper
    claim: str  # what the paper says, in a few words


PAPER = {
    # F.1 / Fig 4 (section 3.3)
    "f1_gpu_over_gym": PaperValue(1024, "x", "§3.3, Fig 4, F.1", "PyTorch/XLA on a GPU over gym, up to"),
    "f1_cpp_over_gym": PaperValue(4, "x", "§3.3, Fig 4", "multi-core C++ over single-core gym, at most"),
    "plateau_gym": PaperValue(2**16, "N", "§3.3, Fig 4", "gym throughput plateaus at"),
    "plateau_cpp": PaperValue(2**18, "N", "§3.3, Fig 4", "C++ throughput plateaus at"),
    "plateau_torch": PaperValue(2**26, "N", "§3.3, Fig 4", "PyTorch (GPU) throughput plateaus at"),
    "plateau_jax": PaperValue(2**26, "N", "§3.3, Fig 4", "XLA (GPU) throughput plateaus at"),
    # F.2 / Fig 4, 5 (sections 3.3, 3.4)
    "f2_xla_over_torch": PaperValue(13.391258389034308, "x", "§3.3, Fig 4, F.2",
                                    "XLA over PyTorch at N ≤ 2^13 (K = 10^3)"),
    "f2_xla_k1_to_k1000": PaperValue(53.757822636636035, "x", "§3.3, Fig 4",
                                     "XLA from K = 1 to 10^3 (with inference), mean over N ≤ 2^13"),
    "f2_cpu_share_k1": PaperValue(87, "%", "§3.4, Fig 5", "CPU-bound share of XLA time at K = 1 (N = 2^16)"),
    "f2_profile_num_envs": PaperValue(2**16, "N", "§3.4, Fig 5", "environments of the profiled XLA collections"),
    "f2_python_share_k1": PaperValue(57, "%", "§3.4, Fig 5", "Python share of XLA time at K = 1 (N = 2^16)"),
    "f2_backend_share_k1": PaperValue(30, "%", "§3.4, Fig 5", "backend C++ share of XLA time at K = 1 (N = 2^16)"),
    # F.3 / Fig 8 (section 4.1)
    "f3_fusion": PaperValue(11.305685226074862, "x", "§4.1, Fig 8, F.3", "CUDA fused K = 10^3 over K = 1"),
    "f3_xla_k1_to_k1000": PaperValue(83.34774829937089, "x", "§4.1, Fig 8",
                                     "XLA from K = 1 to 10^3 (simulation only)"),
    "f3_fused_over_xla": PaperValue(112.76804635714576, "x", "§4.1, Fig 8", "CUDA over XLA at K = 10^3"),
    # F.4 / Fig 9 (section 4.2)
    "f4_speedup_s_high": PaperValue(2**10, "x", "§4.2, Fig 9", "fusion speedup at K = 10^3, S ≥ 2^11"),
    "f4_speedup_s_low": PaperValue(2**4, "x", "§4.2, Fig 9", "fusion speedup at K = 10^3, S = 1"),
    "f4_speedup_c_max": PaperValue(1, "x", "§4.2, Fig 9", "fusion speedup at C = 2^10, S = 1 (no gain)"),
    "f4_speedup_k10_max": PaperValue(2**3, "x", "§4.2, Fig 9", "fusion speedup at K = 10, at most"),
    # §4.2: "The more compute-bound the workload is, the less speedup that comes from fusion" (Fig 9's
    # C axis); judged on the chain, whose flops per byte grow with n (no number: the value is the rule's 1)
    "f4_less_when_compute_bound": PaperValue(1, "x", "§4.2, Fig 9, F.4",
                                             "fusion speedup smaller the more compute-bound the simulator"),
    "f4_flat_in_n": PaperValue(1, "x", "§4.2, Fig 9", "fusion speedup the same for every N (max/min over N)"),
    # Fig 2 (section 2.2)
    "fig2_cartpole_scale": PaperValue(2**19, "N", "§2.2, Fig 2", "cartpole (XLA, GPU) scales up to"),
    "fig2_brax_scale": PaperValue(2**12, "N", "§2.2, Fig 2", "Brax environments scale up to"),
}

# The paper's GPU as its maker specifies it (not a value the paper reports): the balance the book
# sets this machine's against.
PAPER_GPU = {"name": "NVIDIA RTX 2080 Ti", "fp32_flops_per_s": 13.4e12, "memory_bytes_per_s": 616e9,
             "source": "NVIDIA's specification"}
