"""The MLP's flops: counted from its shape (``costs.mlp_flops``), reported by ``bench``
against the machine's FMA ceiling, and run by the fused CPU build's micro-kernel (cuda/fused_cpu.cpp)
with its register tile in registers (its inner loop read from the disassembly, as
tests/test_fma_peak.py reads fma_peak's)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from studylib import costs, native, policy
from studylib.__main__ import main
from studylib.harness.model import roofline
from studylib.harness.data import store
from studylib.harness.data.provenance import machine_key
from studylib.harness.data.semantics import stamp
from studylib.native import build
from tests.test_fma_peak import _BASE, ISAS, _functions, _host_flags, _listing, _tool, _x86_64_only


# ---- the count ---------------------------------------------------------------------------------

def test_mlp_flops_of_the_policy():
    """4 -> 64 -> 64 -> 2: a multiply and an add per weight, an add per bias."""
    assert policy.LAYER_SIZES == (4, 64, 64, 2)
    assert costs.mlp_flops() == 2 * (4 * 64 + 64 * 64 + 64 * 2) + (64 + 64 + 2) == 9090
    assert costs.mlp_flops() == costs.MLP_FLOPS  # the constant the cost model reads


@pytest.mark.parametrize("sizes, flops", [((4, 2), 2 * 8 + 2), ((3, 5, 1), 2 * (15 + 5) + 6),
                                          ((1, 1, 1, 1), 3 * 2 + 3), ((4, 128, 2), 2 * (512 + 256) + 130)])
def test_mlp_flops_follows_the_shape(sizes, flops):
    assert costs.mlp_flops(sizes) == flops


def test_mlp_flops_reads_the_layer_sizes_where_the_package_defines_them(monkeypatch):
    monkeypatch.setattr(policy, "LAYER_SIZES", (4, 32, 2))
    assert costs.mlp_flops() == 2 * (4 * 32 + 32 * 2) + 34


@pytest.mark.parametrize("sizes", [(4,), (), (4, 0, 2), (4, 2.5, 2), (4, -1)])
def test_mlp_flops_rejects_a_shape_that_is_no_mlp(sizes):
    with pytest.raises(ValueError, match="layer sizes"):
        costs.mlp_flops(sizes)


def test_the_kernels_operation_counts_follow_the_source():
    """costs.MLP_FMAS and MLP_TANH_OPERATIONS as cuda/mlp.cuh writes them: one FMA per weight, and
    mlp_tanh's FMAs (Horner steps), clamp, square, multiply and division."""
    assert costs.MLP_FMAS == 4 * 64 + 64 * 64 + 64 * 2 == 4480
    src = native.MLP_HEADER.read_text()
    body = src[src.index("MLP_HD T mlp_tanh(T x) {"):]
    body = body[:body.index("\n}\n")]
    fmas = len(re.findall(r"^\s*(?:T )?[pq] = \w+ \* [\w.+-]+ \+ ", body, flags=re.M))
    ops = (fmas + body.count("clamp(") + body.count("x * x;") + body.count("return x * p / q;") * 2)
    assert fmas == 7 and ops == costs.MLP_TANH_OPERATIONS == 11
    assert costs.fma_port_bound() == pytest.approx(4545 / (4480 + 128 * 11))
    assert costs.fma_port_bound(1) > costs.fma_port_bound(12) > costs.fma_port_bound(13)


@pytest.mark.parametrize("isa, operations, bound", [("avx512", 13, 0.740), ("avx2", 12, 0.755), ("neon", 11, 0.772),
                                                    (None, 11, 0.772)])
def test_the_tanh_costs_each_isa_its_own_port_operations(isa, operations, bound):
    """AVX-512 splits mlp_tanh's division into three FMA-port uops (its clamp stays one vrangeps),
    AVX2 its clamp into a max and a min; an ISA the table does not know counts the operations as
    written. The caps "Using studylib" and the Beyond chapter quote follow."""
    assert costs.tanh_port_operations(isa) == operations
    assert costs.fma_port_bound(costs.tanh_port_operations(isa)) == pytest.approx(bound, abs=5e-4)


def test_mlp_share_of_the_ceiling():
    share = roofline.mlp_share(1e7, 2e11)
    assert share == {"mlp_flop_per_sample": 9090, "mlp_gflop_per_s": pytest.approx(90.9),
                     "fma_gflop_per_s": pytest.approx(200.0), "fma_share": pytest.approx(0.4545)}


def _saved_ceiling(data_dir, value, ceiling="fma"):
    folder = data_dir / machine_key()
    folder.mkdir(parents=True)
    rows = [{"ceiling": ceiling, "value": value, "semantics": stamp("ceiling")},
            {"ceiling": ceiling, "value": 10 * value, "semantics": "ceiling/0"}]  # stale: not read
    (folder / "beyond_roofline.json").write_text(json.dumps({"format": store.FORMAT, "rows": rows}))


def test_fma_ceiling_is_the_larger_of_now_and_the_saved_one(monkeypatch, tmp_path):
    """Measured while another process holds a core, the ceiling reads low: a saved, larger one wins."""
    monkeypatch.setattr(roofline, "fma_flops_per_s", lambda: 1e11)
    assert roofline.fma_ceiling(tmp_path) == (1e11, "measured now")  # nothing saved
    _saved_ceiling(tmp_path, 3e11)
    value, source = roofline.fma_ceiling(tmp_path)
    assert value == 3e11 and source.startswith("saved in ") and source.endswith("beyond_roofline.json")
    monkeypatch.setattr(roofline, "fma_flops_per_s", lambda: 4e11)
    assert roofline.fma_ceiling(tmp_path) == (4e11, "measured now")
    (tmp_path / machine_key() / "beyond_roofline.json").write_text("[]")  # not a data file: measured only
    assert roofline.fma_ceiling(tmp_path) == (4e11, "measured now")


def test_another_isa_is_its_own_build_and_ceiling(monkeypatch, tmp_path):
    """$STUDYLIB_NATIVE_ARCH builds for another -march (the AVX2 build on an AVX-512 host): its own
    flags and cache key, its own FMA ceiling measured now (the saved ones are the native build's)."""
    monkeypatch.delenv(build.ARCH_ENV, raising=False)
    native_flags, native_key = build.cxxflags(), build._build_key("g++")
    assert build.native_arch() == "native" and "-march=native" in native_flags
    monkeypatch.setenv(build.ARCH_ENV, "x86-64-v3")
    assert build.native_arch() == "x86-64-v3"
    assert "-march=x86-64-v3" in build.cxxflags() and "-march=native" not in build.cxxflags()
    assert build._build_key("g++") != native_key
    monkeypatch.setattr(roofline, "fma_flops_per_s", lambda: 1e11)
    _saved_ceiling(tmp_path, 3e11)  # larger, but another build's
    assert roofline.fma_ceiling(tmp_path) == (1e11, "measured now, built with -march=x86-64-v3")
    monkeypatch.setenv(build.ARCH_ENV, "x86-64-v3; rm -rf /")
    with pytest.raises(build.NativeBuildError, match="not a -march value"):
        build.cxxflags()


def _arches_gcc_knows(cxx: str) -> list[str]:
    """The -march values the compiler lists in its error for an unknown one."""
    proc = subprocess.run([cxx, "-march=none-such", "-E", "-x", "c++", "-"], input="", capture_output=True, text=True)
    listed = re.search(r"valid arguments to .-march=. switch are: ([^\n;]+)", proc.stderr)
    return listed.group(1).split() if listed else []


def test_a_build_this_cpu_cannot_run_is_refused_before_it_is_built(monkeypatch, tmp_path):
    """Under a -march that enables vector instructions this CPU lacks, the build is refused with
    their names (instead of a library that dies of SIGILL on its first call); one this CPU runs,
    and the native build, are not."""
    cxx = build._compiler()
    assert build.foreign_features(cxx, "native") == []
    foreign = {a: build.foreign_features(cxx, a) for a in _arches_gcc_knows(cxx) if a != "native"}
    runs_here = [a for a, missing in foreign.items() if not missing]
    lacking = [a for a, missing in foreign.items() if missing]
    if not lacking:
        pytest.skip("this CPU runs every -march the compiler knows")
    arch = lacking[-1]  # the newest, as gcc lists them per family
    monkeypatch.setenv("STUDYLIB_CACHE", str(tmp_path))
    monkeypatch.setenv(build.ARCH_ENV, arch)
    build.build_info.cache_clear()
    try:
        with pytest.raises(build.NativeBuildError, match=re.escape(foreign[arch][0])):
            build.build_info("fma_peak")
        assert not list(tmp_path.glob("*.so"))
        if runs_here:  # an older -march this CPU runs is built
            monkeypatch.setenv(build.ARCH_ENV, runs_here[0])
            assert build.build_info("fma_peak")["flags"][1] == f"-march={runs_here[0]}"
    finally:
        build.build_info.cache_clear()


def test_rows_are_measured_with_the_native_build_only(monkeypatch, tmp_path):
    """A data file's rows name this CPU: under another ISA's build, sweep and measure refuse before
    measuring (exit status 2 from the CLI), and nothing is written."""
    from studylib.harness.sweep import sweep
    from studylib.settings import EnvSettings, MeasurePoint

    monkeypatch.setenv(build.ARCH_ENV, "x86-64-v3")
    point = MeasurePoint(EnvSettings(impl="cpp", num_envs=8), steps=1, repeats=1, min_seconds=0.001)
    with pytest.raises(build.NativeBuildError, match="native build only"):
        sweep("arch_probe", [point], data_dir=tmp_path, progress=False)
    assert not list(tmp_path.rglob("*.json"))
    assert main(["measure", "--chapters", "beyond", "--data-dir", str(tmp_path), "--no-progress"]) == 2
    assert not list(tmp_path.rglob("*.json"))
    from studylib.harness.sweep import READ_ONLY, session

    with session(engine=READ_ONLY):  # reading what is saved measures nothing: allowed
        assert sweep("arch_probe", [point], data_dir=tmp_path, progress=False).empty


def _half_unit_in_last_place(printed: str) -> float:
    """Half the unit in the last printed digit of a number such as '1.03e+07' or '9.5': the most its
    rounding moved it."""
    mantissa, _, exponent = printed.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def test_half_unit_in_last_place_reads_the_printed_digits():
    assert _half_unit_in_last_place("1.03e+07") == pytest.approx(5e4)
    assert _half_unit_in_last_place("9.5") == pytest.approx(0.05)
    assert _half_unit_in_last_place("123") == pytest.approx(0.5)


def test_bench_prints_each_row_against_the_ceilings(monkeypatch, capsys, tmp_path):
    """The bench places every CartPole row on the CPU against the ceiling that binds it, and the MLP's
    flops against the FMA ceiling; the table's figures follow from the printed ceilings."""
    monkeypatch.setattr(roofline, "fma_flops_per_s", lambda: 1e11)  # the ceilings: measured by their own tests
    monkeypatch.setattr(roofline, "memory_bandwidth", lambda: 4.8e9)
    monkeypatch.setenv("STUDYLIB_DATA_DIR", str(tmp_path))  # no saved ceiling
    rc = main(["bench", "--impl", "fused", "--policy", "mlp,none", "--num-envs", "40", "--steps", "1,100",
               "--repeats", "1", "--min-seconds", "0.01"])
    out = capsys.readouterr().out
    assert rc == 0
    assert ("FMA 100.0 GFLOP/s (cuda/fma_peak.cpp, measured now), memory 4.8 GB/s (a stream copy, measured now)"
            in out)
    rows = {}
    for line in out.split("binding ceiling")[1].splitlines()[1:5]:
        impl, n, k, s, c, policy, rate, size, unit, bound, bound_rate, share, gflops, fma_share = line.split()
        assert (impl, n, s, c, size, unit) == ("fused", "40", "1", "1", "1.88", "KiB")  # 40 x 48 bytes
        rows[policy, int(k)] = (rate, bound, float(bound_rate), float(share.rstrip("%")), gflops, fma_share)
    assert set(rows) == {("mlp", 1), ("mlp", 100), ("none", 1), ("none", 100)}
    for (policy, k), (rate, bound, bound_rate, share, gflops, fma_share) in rows.items():
        flops = costs.step_flops(1, 1, policy)
        expected = {"compute": 1e11 / flops, "memory": 4.8e9 * (k if k > 1 else 1) / 48}
        assert bound == min(expected, key=expected.get)  # K = 100 keeps the state in cache: memory x 100
        assert bound_rate == pytest.approx(expected[bound], rel=5e-3)
        # the rate is printed to 3 significant figures: the columns computed from the unrounded rate
        # may differ from the printed rate's by its half unit in the last place, plus their own rounding
        rate, rate_half_ulp = float(rate), _half_unit_in_last_place(rate)
        assert share == pytest.approx(100 * rate / expected[bound], abs=100 * rate_half_ulp / expected[bound] + 0.051)
        if policy == "mlp":
            assert float(gflops) == pytest.approx(rate * 9090 / 1e9, abs=rate_half_ulp * 9090 / 1e9 + 0.051)
            assert float(fma_share.rstrip("%")) == pytest.approx(float(gflops), abs=0.06)  # over 100 GFLOP/s
        else:
            assert gflops == fma_share == "-"
    assert rows["none", 1][1] == "memory" and rows["none", 100][1] == "compute" and rows["mlp", 1][1] == "compute"


def test_ceiling_shares_place_cartpole_cpu_rows_only(monkeypatch, tmp_path):
    monkeypatch.setattr(roofline, "fma_flops_per_s", lambda: 1e11)
    monkeypatch.setattr(roofline, "memory_bandwidth", lambda: 4.8e9)
    shares = roofline.CeilingShares(tmp_path)
    row = {"impl": "cpp", "num_envs": 2**20, "steps": 1, "state_factor": 2, "compute_factor": 1, "policy": "none",
           "device": "cpu", "sim": "cartpole", "samples_per_s": 1.2e8}
    placed = shares.add(dict(row))
    assert placed["bound"] == "memory" and placed["state_bytes"] == 2**20 * 80  # S = 2: 32 x 2 + 16 bytes
    assert placed["bound_share"] == pytest.approx(1.2e8 / (4.8e9 / 80))  # 2.0: the caches served it
    assert "fma_share" not in placed and placed["memory_ceiling_from"] == "measured now"
    for other in ({"sim": "chain"}, {"device": "cuda"}):
        assert shares.add({**row, **other}) == {**row, **other}
    _saved_ceiling(tmp_path, 9.6e9, "memory")
    value, source = roofline.memory_ceiling(tmp_path)  # the saved one is larger: it wins, named
    assert value == 9.6e9 and source.endswith("beyond_roofline.json")


# ---- the micro-kernel that runs them -------------------------------------------------------------

FMA = re.compile(r"^vfn?m(add|sub)\d+ps$")


def _disassemble(isa: str, tmp_path, defines=()) -> str:
    obj = tmp_path / f"fused_cpu-{isa}{''.join(defines)}.o"
    cmd = [_tool("g++"), *_BASE, *ISAS[isa], *build.LIBRARIES["fused_cpu"].extra_flags, f"-I{native.CUDA_SOURCE_DIR}",
           *defines, "-c", str(native.FUSED_CPU_SOURCE), "-o", str(obj)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return subprocess.run([_tool("objdump"), "-d", "--no-show-raw-insn", str(obj)], capture_output=True, text=True,
                          check=True).stdout


def _gemm_loop(text: str):
    """The innermost loop (from a backward branch's target to the branch, with no other backward
    branch inside) with the most register-only FMAs in the whole object: layer 2's k loop, the
    tile's FMAs on h1 and the broadcast weights in registers."""
    best = (0, [])
    for insns in _functions(text).values():
        loops = []
        for addr, mnemonic, operands in insns:
            target = re.match(r"([0-9a-f]+)\s*<", operands)
            if mnemonic.startswith("j") and target and int(target.group(1), 16) <= addr:
                loops.append((int(target.group(1), 16), addr))
        for start, end in loops:
            if any(start <= s and e < end for s, e in loops if (s, e) != (start, end)):
                continue  # an outer loop
            body = [i for i in insns if start <= i[0] <= end]
            score = sum(bool(FMA.match(m)) and "(" not in o for _, m, o in body)
            best = max(best, (score, body), key=lambda b: b[0])
    assert best[0] > 0, "no loop of register-only FMAs in fused_cpu.o"
    return best[1]


@pytest.mark.parametrize("isa", ["avx2", "native"])
def test_mlp_micro_kernel_keeps_its_tile_in_registers(isa, tmp_path):
    """Layer 2's inner loop, compiled as build.py compiles fused_cpu (AVX2's 16 ymm even on an
    AVX-512 host, and the native register file): no spill (no operand on the stack, no store), its
    loads only the tile's inputs (h1 and the broadcast weights), and as many distinct accumulators
    as the tile of the ISA: 3 x 8 on AVX-512's 32 zmm, 3 x 4 on AVX2's 16 ymm."""
    _x86_64_only()
    avx512 = isa == "native" and "avx512f" in _host_flags()
    if isa == "native" and not (avx512 or {"avx2", "fma"} <= _host_flags()):
        pytest.skip("the native build here has no FMA: the tile is checked on AVX2 and AVX-512 hosts")
    body = _gemm_loop(_disassemble(isa, tmp_path))
    stack = [i for i in body if re.search(r"\(%[re]?(sp|bp)\b", i[2])]
    assert not stack, f"{isa}: the micro-kernel spills to the stack:\n{_listing(stack)}\n--- loop:\n{_listing(body)}"
    stores = [i for i in body if "(" in i[2].split(",")[-1]]
    assert not stores, f"{isa}: the micro-kernel stores in its inner loop:\n{_listing(stores)}"
    loads = [i for i in body if "(" in i[2] and not i[1].startswith("nop") and not i[1].startswith("lea")]
    assert all(m in ("vmovaps", "vmovups", "vbroadcastss") or FMA.match(m) for _, m, _ in loads), _listing(loads)
    fmas = [i for i in body if FMA.match(i[1])]
    accumulators = {o.split(",")[-1].strip() for _, _, o in fmas}
    register = "zmm" if avx512 else "ymm"
    assert all(a.startswith(f"%{register}") for a in accumulators), _listing(fmas)
    expected = 24 if avx512 else 12
    assert len(accumulators) == expected, f"{isa}: {len(accumulators)} accumulators:\n{_listing(body)}"
    assert len(fmas) % expected == 0  # whole k steps of the tile per iteration


@pytest.mark.parametrize("isa", ["avx2", "native"])
def test_each_isa_clamps_the_tanh_as_costs_counts_it(isa, tmp_path):
    """costs.MLP_TANH_ON_ISA's clamp, read from the MLP tiles' disassembly: one vrangeps per tanh on
    AVX-512, a vmaxps and a vminps on AVX2 (the extra operation AVX2's count adds), each beside the
    tanh's one vdivps."""
    _x86_64_only()
    avx512 = isa == "native" and "avx512f" in _host_flags()
    if isa == "native" and not avx512:
        pytest.skip("the native build is checked on AVX-512 hosts (AVX2's by the avx2 build)")
    tiles = [insns for name, insns in _functions(_disassemble(isa, tmp_path)).items() if "mlp_tile" in name]
    assert tiles, "no mlp_tile function in fused_cpu.o"
    count = {op: sum(m == op for insns in tiles for _, m, _ in insns)
             for op in ("vdivps", "vrangeps", "vmaxps", "vminps")}
    assert count["vdivps"] > 0, count
    if avx512:
        assert count["vrangeps"] == count["vdivps"] and count["vmaxps"] == count["vminps"] == 0, count
    else:
        assert count["vmaxps"] == count["vminps"] == count["vdivps"] and count["vrangeps"] == 0, count
    assert costs.tanh_port_operations("avx512" if avx512 else "avx2") - costs.MLP_TANH_OPERATIONS == (2 if avx512 else 1)


def test_the_tanh_diagnostic_build_has_no_division_in_its_mlp(tmp_path):
    """benchmarks/fused_fma_share.py's diagnostic (-DFUSED_TANH_CLAMP_ONLY) measures the kernel with
    the tanh replaced by one clamp: its MLP tiles hold no division, where the library's hold the
    tanh's (so what it measures is the tanh's cost, not another kernel's)."""
    _x86_64_only()

    def divisions(text: str) -> int:
        tiles = {name: insns for name, insns in _functions(text).items() if "mlp_tile" in name}
        assert tiles, "no mlp_tile function in fused_cpu.o"
        return sum(m.startswith("vdivps") or m.startswith("divps") for insns in tiles.values() for _, m, _ in insns)

    assert divisions(_disassemble("native", tmp_path)) > 0
    assert divisions(_disassemble("native", tmp_path, ("-DFUSED_TANH_CLAMP_ONLY",))) == 0
