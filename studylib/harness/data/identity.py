"""Which hardware a measurement ran on: an identity that separates CPUs that perform differently.

Virtual machines often report a generic marketing name ("AMD EPYC", "Intel(R) Xeon(R) Processor")
whatever silicon is beneath, so a key made of the name alone merged a Zen 3, a Zen 4 and a Zen 5
under one folder, with compute ceilings 4.6x apart. What the CPU itself reports through ``cpuid``
and the kernel prints in ``/proc/cpuinfo`` does tell them apart: vendor, family, model and
stepping, and the instruction-set flags, from which the widest SIMD level (AVX-512, AVX2, NEON,
SVE) is read. With the cores this process may use, the last-level cache and the GPU, that is the
identity recorded in every ``machine.json``.

The folder key (``key``) keeps what changes performance and stays readable:

    <vendor>-<name>[-<microarchitecture>]-f<family>m<model>_<isa>_<cores>c[_llc<MiB>m]_<gpu or nogpu>
    amd-epyc-zen3-f25m1_avx2_2c_llc32m_nogpu          intel-xeon-f6m143_avx512_2c_llc105m_nogpu
    arm-neoverse-n1-f8pd0c_neon_4c_llc32m_nogpu       (ARM: architecture 8, part 0xd0c)

The stepping is recorded but not keyed (steppings of one model perform alike); the last-level
cache is keyed because the book's plans size their memory-bound configurations from it, so two
folders with one key always ask for the same points. Everything here is a pure function of its
inputs (the cpuinfo text, the core count, the cache, the GPU name): tests pass synthetic texts. A
process posing as another host (``provenance``: ``$STUDYLIB_CPUINFO``) takes the cores and the
cache from the text too (``posed_facts``), so its key is that host's, whatever machine runs it.
"""

from __future__ import annotations

import re

# AMD families whose model ranges name one microarchitecture (AMD's Processor Programming
# References): a readable word beside the numbers, never instead of them.
_AMD_UARCH = (
    (23, range(0x00, 0x30), "zen"), (23, range(0x30, 0x100), "zen2"),
    (25, range(0x00, 0x10), "zen3"), (25, range(0x10, 0x20), "zen4"), (25, range(0x20, 0x60), "zen3"),
    (25, range(0x60, 0x80), "zen4"), (25, range(0xA0, 0xB0), "zen4"),
    (26, range(0x00, 0x100), "zen5"),
)
_ARM_IMPLEMENTERS = {0x41: "arm", 0x61: "apple", 0xC0: "ampere", 0x48: "hisilicon", 0x51: "qualcomm", 0x4E: "nvidia"}
_ARM_PARTS = {(0x41, 0xD08): "cortex-a72", (0x41, 0xD0B): "cortex-a76", (0x41, 0xD0C): "neoverse-n1",
              (0x41, 0xD40): "neoverse-v1", (0x41, 0xD49): "neoverse-n2", (0x41, 0xD4F): "neoverse-v2"}
_X86_VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd", "HygonGenuine": "hygon", "CentaurHauls": "centaur"}

IDENTITY_FIELDS = ("cpu_vendor", "cpu_model", "cpu_family", "cpu_model_number", "cpu_stepping",
                   "cpu_microarchitecture", "isa", "cores", "llc_bytes", "gpu")


def _first_block(text: str) -> dict:
    """The fields of the first processor's block of a /proc/cpuinfo text (all cores of a host
    share them; ARM's kernel prints some fields once, after the blocks, which are read too)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        name, value = (part.strip() for part in line.split(":", 1))
        if name == "processor" and "processor" in fields and value.isdigit():
            continue  # the next core's block: keep the first's values, take fields it lacks
        fields.setdefault(name, value)
    return fields


def _int(text: str | None) -> int | None:
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def x86_isa(flags: set[str]) -> str:
    """The widest SIMD level the flags announce (what ``-march=native`` compiles for)."""
    for flag, level in (("avx512f", "avx512"), ("avx2", "avx2"), ("avx", "avx"), ("sse4_2", "sse4")):
        if flag in flags:
            return level
    return "sse2"


def arm_isa(features: set[str]) -> str:
    return "sve" if "sve" in features else "neon" if "asimd" in features else "armv8"


def slug(text: str) -> str:
    """A model name as a lower-case, filesystem-safe word ("Intel(R) Xeon(R) Processor" -> "intel-xeon")."""
    text = text.lower()
    text = re.sub(r"\((r|tm|c)\)", "", text)
    text = re.sub(r"\b(cpu|processor|with|radeon graphics)\b", " ", text)
    text = re.sub(r"@.*$", "", text)  # "@ 2.20GHz": the model already says it
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    return text or "unknown"


def cpu_identity(cpuinfo: str, fallback_name: str = "unknown-cpu") -> dict:
    """Vendor, marketing name, family, model, stepping, microarchitecture (where the family's
    model ranges name one) and ISA level from a /proc/cpuinfo text (x86 or ARM); None for what
    the text does not say. ``fallback_name``: the name where the text has none."""
    f = _first_block(cpuinfo)
    if "vendor_id" in f or "flags" in f:  # x86
        vendor = _X86_VENDORS.get(f.get("vendor_id", ""), slug(f.get("vendor_id", "x86")))
        family, model = _int(f.get("cpu family")), _int(f.get("model"))
        uarch = next((u for fam, models, u in _AMD_UARCH if vendor == "amd" and family == fam and model in models), None)
        return {"cpu_vendor": vendor, "cpu_model": f.get("model name") or fallback_name, "cpu_family": family,
                "cpu_model_number": model, "cpu_stepping": _int(f.get("stepping")), "cpu_microarchitecture": uarch,
                "isa": x86_isa(set(f.get("flags", "").split()))}
    if "CPU implementer" in f:  # ARM: the implementer and part number play vendor and model
        implementer, part = _int(f["CPU implementer"]), _int(f.get("CPU part"))
        vendor = _ARM_IMPLEMENTERS.get(implementer, f"arm{implementer:x}" if implementer is not None else "arm")
        name = f.get("model name") or _ARM_PARTS.get((implementer, part)) or fallback_name
        return {"cpu_vendor": vendor, "cpu_model": name, "cpu_family": _int(f.get("CPU architecture")),
                "cpu_model_number": part, "cpu_stepping": _int(f.get("CPU revision")),
                "cpu_microarchitecture": _ARM_PARTS.get((implementer, part)),
                "isa": arm_isa(set(f.get("Features", "").split()))}
    return {"cpu_vendor": "unknown", "cpu_model": f.get("model name") or fallback_name, "cpu_family": None,
            "cpu_model_number": None, "cpu_stepping": None, "cpu_microarchitecture": None, "isa": "unknown"}


def size_bytes(text: str | None) -> int | None:
    """"32768K", "32M" (sysfs) or "491520 KB" (cpuinfo's ``cache size``) in bytes; None if unreadable."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text or "", flags=re.I)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2).upper()]


def posed_facts(cpuinfo: str) -> dict:
    """The cores and last-level cache of the host a cpuinfo text describes, for a process posing
    as that host (``$STUDYLIB_CPUINFO``): none of the poser's own facts may enter the key. Cores:
    the processor blocks (the CPUs a process there may run on, as ``provenance.cpu_cores`` counts
    them here), else ``siblings``; cache: the ``cache size`` line, which Intel's kernel fills with
    the last-level cache (AMD's with the L2, so a file posing as an AMD host states its L3 there).
    None for what the text does not say."""
    blocks = sum(1 for line in cpuinfo.splitlines() if re.fullmatch(r"processor\s*:\s*\d+\s*", line))
    first = _first_block(cpuinfo)
    return {"cores": blocks or _int(first.get("siblings")), "llc_bytes": size_bytes(first.get("cache size"))}


def is_complete(info: dict) -> bool:
    """Whether ``info`` (a machine.json) records the fields the key is made of (files written
    before the identity existed do not: their folder may merge different hardware)."""
    return all(k in info for k in ("cpu_vendor", "cpu_family", "cpu_model_number", "isa"))


def key(info: dict) -> str:
    """The folder key of an identity (see the module's docstring); ``info`` has IDENTITY_FIELDS."""
    vendor = info.get("cpu_vendor") or "unknown"
    name = slug(info.get("cpu_model") or "unknown-cpu")
    parts = [name if name.split("-")[0] == vendor else f"{vendor}-{name}"]
    uarch = info.get("cpu_microarchitecture")
    if uarch and uarch not in name:
        parts.append(uarch)
    family, model = info.get("cpu_family"), info.get("cpu_model_number")
    if family is not None and model is not None:
        arm = vendor in _ARM_IMPLEMENTERS.values() or vendor.startswith("arm")
        parts.append(f"f{family}p{model:x}" if arm else f"f{family}m{model}")
    cpu = "-".join(parts)
    llc = info.get("llc_bytes")
    cache = [f"llc{round(llc / 2**20)}m"] if llc else []
    gpu = slug(info["gpu"]) if info.get("gpu") else "nogpu"
    cores = f"{info['cores']}c" if info.get("cores") else "unknown-cores"
    return "_".join([cpu, info.get("isa") or "unknown", cores, *cache, gpu])
