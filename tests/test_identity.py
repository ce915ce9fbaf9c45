"""The machine identity (studylib/harness/data/identity.py): hosts that perform differently get different
folder keys, the same host the same key, from synthetic /proc/cpuinfo texts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from studylib.harness.data import identity, provenance
from tests.cpuinfo_cases import ARM, AVX512, HOSTS, XEON, XEON_AVX2, ZEN3, x86

MIB = 2**20


def key_of(text: str, cores=2, llc=32 * MIB, gpu=None) -> str:
    return identity.key({**identity.cpu_identity(text), "cores": cores, "llc_bytes": llc, "gpu": gpu})


def test_five_hosts_behind_generic_names_get_five_keys():
    keys = {name: key_of(text) for name, text in HOSTS.items()}
    assert len(set(keys.values())) == len(HOSTS), keys
    assert keys == {"zen3": "amd-epyc-zen3-f25m1_avx2_2c_llc32m_nogpu", "zen4": "amd-epyc-zen4-f25m17_avx512_2c_llc32m_nogpu",
                    "zen5": "amd-epyc-zen5-f26m2_avx512_2c_llc32m_nogpu", "xeon": "intel-xeon-f6m143_avx512_2c_llc32m_nogpu",
                    "arm": "arm-neoverse-n1-f8pd0c_neon_2c_llc32m_nogpu"}


def test_identity_fields_read_from_cpuinfo():
    zen3 = identity.cpu_identity(ZEN3)
    assert zen3 == {"cpu_vendor": "amd", "cpu_model": "AMD EPYC", "cpu_family": 25, "cpu_model_number": 1,
                    "cpu_stepping": 1, "cpu_microarchitecture": "zen3", "isa": "avx2"}
    arm = identity.cpu_identity(ARM)
    assert (arm["cpu_vendor"], arm["cpu_family"], arm["cpu_model_number"], arm["cpu_stepping"], arm["isa"]) == \
        ("arm", 8, 0xD0C, 1, "neon")
    assert identity.cpu_identity(XEON)["cpu_microarchitecture"] is None  # no guess where the numbers may be a VM's


def test_isa_cores_cache_and_gpu_each_separate_hosts():
    base = key_of(XEON)
    assert key_of(XEON_AVX2) != base and "_avx2_" in key_of(XEON_AVX2)  # AVX-512 masked off by the hypervisor
    assert key_of(XEON, cores=4) != base
    assert key_of(XEON, llc=105 * MIB) != base  # the plans size memory-bound points from the cache
    gpu = key_of(ZEN3, gpu="NVIDIA H100 80GB HBM3")
    assert gpu.endswith("_nvidia-h100-80gb-hbm3") and gpu != key_of(ZEN3)
    assert key_of(XEON, llc=None) == "intel-xeon-f6m143_avx512_2c_nogpu"  # a cache sysfs does not report


def test_stepping_is_recorded_not_keyed():
    other = XEON.replace("stepping\t: 8", "stepping\t: 6")
    assert identity.cpu_identity(other)["cpu_stepping"] == 6 and key_of(other) == key_of(XEON)


def test_text_without_cpu_fields_gives_a_key_not_an_error():
    info = identity.cpu_identity("", fallback_name="x86_64")
    assert info["cpu_vendor"] == "unknown" and info["cpu_model"] == "x86_64" and info["cpu_family"] is None
    assert key_of("") == "unknown_unknown_2c_llc32m_nogpu"
    assert not identity.is_complete({"cpu_model": "AMD EPYC", "cores": 2, "gpu": None})  # a machine.json of before


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_this_machine_posing_as_a_host_through_STUDYLIB_CPUINFO(host, tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(HOSTS[host])
    monkeypatch.setenv("STUDYLIB_CPUINFO", str(path))
    info = provenance.machine_info()
    assert set(identity.IDENTITY_FIELDS) <= set(info)  # machine.json records every field of the key
    assert info["machine_key"] == provenance.machine_key() == provenance.machine_key()
    # cores and cache are the file's too (ARM's prints no cache: unknown, never this machine's)
    assert info["machine_key"] == key_of(HOSTS[host], llc=None if host == "arm" else 32 * MIB, gpu=provenance.gpu_name())


def test_posed_cores_and_cache_are_read_from_the_file():
    assert identity.posed_facts(x86("GenuineIntel", "Intel(R) Xeon(R) Processor", 6, 167, 1, AVX512, cores=4,
                                    cache_kb=491520)) == {"cores": 4, "llc_bytes": 480 * MIB}
    assert identity.posed_facts("model name\t: x\nsiblings\t: 8\n") == {"cores": 8, "llc_bytes": None}
    assert identity.posed_facts("") == {"cores": None, "llc_bytes": None}
    assert key_of("", cores=None, llc=None) == "unknown_unknown_unknown-cores_nogpu"


def test_an_unreadable_posing_file_is_one_line(tmp_path, monkeypatch):
    from studylib.errors import ConfigError

    monkeypatch.setenv("STUDYLIB_CPUINFO", str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match=r"^\$STUDYLIB_CPUINFO names '.*absent', which cannot be read \(No such file"):
        provenance.machine_key()
    code = "from studylib.__main__ import main; raise SystemExit(main(['data', 'check']))"
    run = subprocess.run([sys.executable, "-c", code], env={"STUDYLIB_CPUINFO": str(tmp_path), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=False)  # a folder, not a file
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "$STUDYLIB_CPUINFO names" in run.stderr


def test_same_host_same_key_across_processes(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(ZEN3)
    code = "from studylib.harness.data import provenance; print(provenance.machine_key())"
    env = {"STUDYLIB_CPUINFO": str(path), "PATH": "/usr/bin:/bin"}
    keys = {subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    assert len(keys) == 1 and next(iter(keys)).startswith("amd-epyc-zen3-f25m1_avx2_")


def test_the_driver_shortcut_gives_the_name_torch_and_cuda_give(monkeypatch):
    """gpu_name skips asking torch and the CUDA runtime where no NVIDIA driver path exists: on this
    machine its answer is theirs (asked with a path that always exists)."""
    fast = provenance.gpu_name.__wrapped__()
    monkeypatch.setattr(provenance, "_DRIVER_PATHS", ("/",))
    assert provenance.gpu_name.__wrapped__() == fast
    monkeypatch.setattr(provenance, "_DRIVER_PATHS", ("/nonexistent-driver",))
    if provenance.platform.system() == "Linux":
        assert provenance.gpu_name.__wrapped__() is None
