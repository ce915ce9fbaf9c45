"""The timing loop times the repeats again, once, where a stall lengthened some of them
(``harness.timing``'s module doc): the median of three regions of which two stalled is the stall's.

A fake clock makes the regions exact: each call takes 1 ms, and a stalled region 0.2 s more. With
``min_seconds`` 0.02 the loop runs the warm-up (1 call), region(1), then region(24) (the
calibration's last, the first repeat) and two more region(24): regions 0-4."""

from __future__ import annotations

import pytest

from studylib.harness import timing
from studylib.harness.timing import SPREAD_LIMIT, time_regions


class Clock:
    def __init__(self, stalled_regions):
        self.now, self.region, self.stalled = 0.0, 0, set(stalled_regions)
        self.calls_per_region = [0]

    def perf_counter(self):
        return self.now

    def call(self):
        self.now += 0.001
        self.calls_per_region[-1] += 1

    def sync(self):  # ends a region
        if self.region in self.stalled:
            self.now += 0.2
        self.region += 1
        self.calls_per_region.append(0)


def _timed(monkeypatch, stalled):
    clock = Clock(stalled)
    monkeypatch.setattr(timing.time, "perf_counter", clock.perf_counter)
    return time_regions(clock.call, repeats=3, min_seconds=0.02, sync=clock.sync), clock.calls_per_region[:-1]


def test_without_a_stall_three_regions_and_no_more(monkeypatch):
    t, regions = _timed(monkeypatch, ())
    assert regions == [1, 1, 24, 24, 24] and t.seconds == pytest.approx([0.024] * 3)


def test_two_stalled_repeats_of_three_are_timed_again_with_the_same_calls(monkeypatch):
    t, regions = _timed(monkeypatch, {3, 4})
    assert regions == [1, 1, 24, 24, 24, 24, 24, 24]  # three fresh regions of the same 24 calls
    assert t.seconds == pytest.approx([0.024] * 3)  # the median would have been the stall's 0.224 s


def test_one_stalled_repeat_is_timed_again_too(monkeypatch):
    t, regions = _timed(monkeypatch, {4})
    assert 0.224 / 0.024 > SPREAD_LIMIT and len(regions) == 8 and max(t.seconds) == pytest.approx(0.024)


def test_a_spread_that_persists_is_reported_after_one_more_try(monkeypatch):
    t, regions = _timed(monkeypatch, {4, 7})
    assert len(regions) == 8 and max(t.seconds) == pytest.approx(0.224)  # the second set, as measured


def test_with_between_the_caller_is_told_the_repeats_start_again(monkeypatch):
    """With ``between`` (the engines' contacts), every repeat is timed after the calibration: regions
    3-5, then, two of them stalled, 6-8; ``between(True)`` marks each start."""
    clock, firsts = Clock({3, 5}), []
    monkeypatch.setattr(timing.time, "perf_counter", clock.perf_counter)
    t = time_regions(clock.call, repeats=3, min_seconds=0.02, sync=clock.sync,
                     between=lambda first: firsts.append(clock.region) if first else None)
    assert firsts == [3, 6] and clock.calls_per_region[:-1] == [1, 1, 24, 24, 24, 24, 24, 24, 24]
    assert t.seconds == pytest.approx([0.024] * 3)
