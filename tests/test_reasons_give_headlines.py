"""A reader gets each headline back from its reason's numbers: where a reason gives per-step times
at the N that make the headline (``claims_base.ratio_reason``), their ratio is the headline (the
largest over N), or the mean of the two middle N's ratios (a median over an even count of N)."""

import re
from pathlib import Path

import numpy as np
import pytest

from studylib import book
from studylib.book import chapters
from studylib.book.pages import chain
from studylib.book.claims.analysis import NOT_MEASURED
from studylib.book.claims.chain import chain_findings
from studylib.harness.sweep import READ_ONLY, session
from tests.snapshot_cases import CPU_SNAPSHOTS, FINDINGS_SNAPSHOTS, GPU_SNAPSHOTS, ROOT

UNIT = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
PAIR = re.compile(r"at N = 2\^(\d+): ([\d.]+) (ns|µs|ms|s) per environment-step in [^,]+, ([\d.]+) (ns|µs|ms|s) in ")


# F.4 on the chain: each n's fusion speedup at its flops per byte (``claims_chain.compute_bound_row``)
GAIN_AT = re.compile(r"n = (\d+): ([\d.,]+)× at ([\d,]+) flops/byte")


def headline_from_reason(reason: str) -> float | None:
    ratios = [float(b) * UNIT[ub] / (float(a) * UNIT[ua]) for _, a, ua, b, ub in PAIR.findall(reason)]
    if ratios:
        return sum(ratios) / len(ratios)
    gains = sorted((float(fpb.replace(",", "")), float(g.replace(",", ""))) for _, g, fpb in GAIN_AT.findall(reason))
    if len(gains) >= 3:  # the upper half's median speedup (by flops per byte) over the lower half's
        half = len(gains) // 2
        median = lambda xs: float(np.median(xs))  # noqa: E731
        return median([g for _, g in gains[-half:]]) / median([g for _, g in gains[:half]])
    return None


def test_the_parser_reads_a_reason_as_a_reader_would():
    reason = ("at N = 2^4: 27.6 ns per environment-step in cpp at K = 100, 260 ns in cpp at K = 1 (9.43×); "
              "at N = 2^8: 12.8 ns per environment-step in cpp at K = 100, 30.6 ns in cpp at K = 1 (2.39×)")
    assert headline_from_reason(reason) == pytest.approx((260 / 27.6 + 30.6 / 12.8) / 2)
    assert headline_from_reason("no numbers") is None
    f4 = ("fused K = 1 → 100 per n (n = 1: 2× at 207 flops/byte, n = 2: 3× at 178 flops/byte, n = 4: 1.5× at "
          "1,162 flops/byte, n = 8: 1× at 193 flops/byte); the upper half's median over the lower half's is 0.5×")
    assert headline_from_reason(f4) == pytest.approx(((1.5 + 2) / 2) / ((3 + 1) / 2))


@pytest.mark.parametrize("key", [*CPU_SNAPSHOTS, *GPU_SNAPSHOTS])
def test_every_chain_headline_is_its_reasons_ratio(key):
    with session(engine=READ_ONLY):
        P = book.params("chain", preset="default", data_dir=ROOT / "data", machine=key)
        _, measured = chain.chain_data(P)
    if "episode_rules" not in measured or measured["episode_rules"].isna().all():
        pytest.skip(f"{key}: none of its chain rows is a point of today's default preset (rows from before the "
                    "chain was an environment, or measured with less careful timing)")
    every = chain_findings(P, measured)
    findings = [f for f in every if f.reason and f.judgement.verdict != NOT_MEASURED]
    if every and not findings:  # e.g. a GPU snapshot's rows at one N and K = 1 only: nothing to compare
        pytest.skip(f"{key}: its {len(measured)} chain rows of today's default preset make no comparison "
                    f"(K = {sorted(set(measured['steps']))}, implementations {sorted(set(measured['impl']))})")
    assert findings
    for f in findings:
        got = headline_from_reason(f.reason)
        assert got is not None, f.reason
        assert got == pytest.approx(f.value, rel=0.01), (f.quantity, f.reason)


# CartPole's comparisons of two rates (F.1–F.3): each reason gives the headline's own per-step times
RATIO_KEYS = ("f1_gpu_over_gym", "f1_cpp_over_gym", "f2_xla_over_torch", "f2_xla_k1_to_k1000", "f3_fusion",
              "f3_xla_k1_to_k1000", "f3_fused_over_xla")


@pytest.mark.parametrize("key", FINDINGS_SNAPSHOTS)
def test_every_cartpole_ratio_headline_is_its_reasons_ratio(key):
    with session(engine=READ_ONLY):
        records = chapters.finding_records(preset="default", data_dir=ROOT / "data", machine=key)
    checked = 0
    for f in records:
        if f.key not in RATIO_KEYS or not f.reason:  # a "reproduced" row keeps no reason
            continue
        got = headline_from_reason(f.reason)
        assert got is not None, (f.key, f.reason)
        assert got == pytest.approx(f.value, rel=0.01), (f.key, f.reason)
        checked += 1
    assert checked >= 3, key
