"""The one timing loop of the study: every throughput, ceiling and unprofiled time is taken here.

    t = time_regions(lambda: env.rollout(K, policy).episodes_finished, repeats=5, min_seconds=0.2,
                     sync=env.synchronize)
    t.rates(N * K)          # work per second of each timed region: samples/s

Method (paper section 3.3):
  * Warm-up apart: the first call (compile, allocation, caches) is timed on its own (``warmup_s``)
    and never counted.
  * Adaptive timed regions: the calls per region are doubled (or extrapolated) until one region
    lasts at least ``min_seconds``, so the timer's resolution and per-region noise are negligible.
    The calibration regions double as further warm-up.
  * Each region ends with ``sync()`` (a device synchronisation), inside the region.
  * ``repeats`` regions of that many calls are timed; callers report their median, min and max
    (throughputs) or their best (ceilings, unprofiled times). The calibration's last region is the
    first of them: it ran exactly as a repeat does (the same calls, warmed up, synchronised), its
    size fixed before it was timed, so timing it again would only add a region's seconds to every
    point (about a quarter of a cold build's timed seconds). Where the repeats' median is under a
    quarter of ``min_seconds`` (a calibration region lengthened by a stall: the process descheduled
    during a call of microseconds), the calls are grown from those regions and the repeats timed
    again, once. Where one timed region lasted over ``SPREAD_LIMIT`` times another of the same
    calls (the process descheduled for seconds: on a shared 2-core VM, two of three regions of a
    CartPole point that ran 3.6e6 samples/s in its calibration region read 4.4e4), the repeats are
    timed again, once, with the same calls; the second set is reported, whatever its spread.
  * ``between(first)``, if given, runs before the first timed region (``first`` True) and after
    each (False), outside the clock: what a caller observes of the states the timed regions stepped
    through (the engines' contacts). With it, every repeat is timed after the calibration, so that
    it observes them all; where the repeats are timed again, ``first`` is True again, and the
    caller drops what it saw of the discarded ones.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

MAX_CALLS_PER_REGION = 1_000_000
STALLED_FRACTION = 4  # timed regions under min_seconds / 4: the calibration was fooled by a stall, timed again
SPREAD_LIMIT = 4  # one timed region over 4x another of the same calls: a stall inside the repeats, timed again
TIMER = "time.perf_counter"


@dataclass(frozen=True)
class Timing:
    """What ``time_regions`` measured."""

    warmup_s: float  # the first call, alone
    calls: int  # calls per timed region
    seconds: tuple[float, ...]  # each timed region
    counted: int  # sum of what the calls returned over the timed regions (e.g. episodes finished)

    def rates(self, work_per_call: float) -> list[float]:
        """Work per second of each timed region (work_per_call * calls / seconds)."""
        return [work_per_call * self.calls / dt for dt in self.seconds]

    def summary(self, work_per_call: float) -> dict:
        """Median, min, max and every value of ``rates`` (the harness's reported statistics)."""
        rates = self.rates(work_per_call)
        return {"median": statistics.median(rates), "min": min(rates), "max": max(rates), "all": rates}

    @property
    def best_seconds_per_call(self) -> float:
        return min(self.seconds) / self.calls


def time_regions(call, *, repeats: int, min_seconds: float, sync=None, between=None) -> Timing:
    """Time ``call()`` as the module docstring says. ``call`` may return a count (an int) that is
    summed over the timed regions, or None. ``repeats`` and ``min_seconds`` come checked from a
    MeasurePoint (or are the caller's constants)."""

    def region(calls: int) -> tuple[float, int]:
        counted = 0
        start = time.perf_counter()
        for _ in range(calls):
            counted += call() or 0
        if sync is not None:
            sync()
        return time.perf_counter() - start, counted

    def grown(calls: int, elapsed: float) -> int:
        guess = math.ceil(calls * 1.2 * min_seconds / max(elapsed, 1e-9))
        return min(MAX_CALLS_PER_REGION, max(calls * 2, min(guess, calls * 100)))

    def calibrated(calls: int, last: tuple[float, int]) -> tuple[int, tuple[float, int]]:
        """The calls per region, and the last region run at them (seconds, count)."""
        while last[0] < min_seconds and calls < MAX_CALLS_PER_REGION:
            calls = grown(calls, last[0])
            last = region(calls)
        return calls, last

    warmup_s, _ = region(1)
    calls, last = calibrated(1, region(1))
    for attempt in range(2):
        timed = [last] if between is None else []
        if between is not None:
            between(True)
        while len(timed) < repeats:
            timed.append(region(calls))
            if between is not None:
                between(False)
        seconds, counted = [dt for dt, _ in timed], sum(n for _, n in timed)
        # A calibration region that reached min_seconds only by a stall (the process descheduled
        # during a call of microseconds) leaves regions far shorter than min_seconds: grow the
        # calls from the timed regions' own time and time them again, once
        typical = statistics.median(seconds)
        stalled = typical < min_seconds / STALLED_FRACTION and calls < MAX_CALLS_PER_REGION
        # ...or a stall of its own lengthened some of the repeats, which the median may then be
        spread = max(seconds) > SPREAD_LIMIT * min(seconds)
        if attempt or not (stalled or spread):
            break
        if stalled:
            calls, last = calibrated(calls, (typical, 0))
        elif between is None:  # a fresh first repeat (with ``between``, every repeat is timed anew anyway)
            last = region(calls)
    return Timing(warmup_s=warmup_s, calls=calls, seconds=tuple(seconds), counted=counted)
