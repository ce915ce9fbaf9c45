"""Synthetic /proc/cpuinfo texts of hosts the study has run on or may: virtual machines that report
a generic model name ("AMD EPYC", "Intel(R) Xeon(R) Processor") over different silicon, and an ARM
host. Two processor blocks each, as a 2-core VM prints them, with a 32 MiB last-level cache on the
``cache size`` line, where Intel's kernel prints it (ARM's prints none)."""

from __future__ import annotations

X86_FLAGS = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx"
AVX2 = X86_FLAGS + " pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand hypervisor avx2 bmi2"
AVX512 = AVX2 + " avx512f avx512dq avx512cd avx512bw avx512vl"


def x86(vendor: str, name: str, family: int, model: int, stepping: int, flags: str, cores: int = 2,
        cache_kb: int = 32768) -> str:
    block = ("processor\t: {i}\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
             "model name\t: {name}\nstepping\t: {stepping}\nmicrocode\t: 0x1\ncpu MHz\t\t: 2600.000\n"
             "cache size\t: {cache_kb} KB\nphysical id\t: 0\nsiblings\t: {cores}\ncore id\t\t: {i}\ncpu cores\t: {cores}\n"
             "flags\t\t: {flags}\nbogomips\t: 5200.00\n\n")
    return "".join(block.format(i=i, vendor=vendor, name=name, family=family, model=model, stepping=stepping,
                                flags=flags, cores=cores, cache_kb=cache_kb) for i in range(cores))


ZEN3 = x86("AuthenticAMD", "AMD EPYC", 25, 1, 1, AVX2)
ZEN4 = x86("AuthenticAMD", "AMD EPYC", 25, 17, 1, AVX512)
ZEN5 = x86("AuthenticAMD", "AMD EPYC", 26, 2, 0, AVX512)
XEON = x86("GenuineIntel", "Intel(R) Xeon(R) Processor", 6, 143, 8, AVX512)
XEON_AVX2 = x86("GenuineIntel", "Intel(R) Xeon(R) Processor", 6, 143, 8, AVX2)  # the same CPU, AVX-512 masked off
ARM = "".join(f"processor\t: {i}\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics "
              "fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
              "CPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n" for i in range(2))

HOSTS = {"zen3": ZEN3, "zen4": ZEN4, "zen5": ZEN5, "xeon": XEON, "arm": ARM}
