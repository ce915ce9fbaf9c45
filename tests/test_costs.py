"""The flop counts of studylib.costs agree with the formulas they count, by running the formulas
on a value type that counts every arithmetic operation."""

import types

import numpy as np
import pytest

from studylib import costs
from studylib.sims.cartpole import physics_step
from studylib.policy import mlp_logits, mlp_weights


class Counted:
    ops = {"flops": 0, "transcendental": 0}

    def __init__(self, v):
        self.v = v

    def _op(self, other, fn):
        Counted.ops["flops"] += 1
        return Counted(fn(self.v, other.v if isinstance(other, Counted) else other))

    __add__ = lambda s, o: s._op(o, lambda a, b: a + b)  # noqa: E731
    __radd__ = __add__
    __sub__ = lambda s, o: s._op(o, lambda a, b: a - b)  # noqa: E731
    __rsub__ = lambda s, o: s._op(o, lambda a, b: b - a)  # noqa: E731
    __mul__ = lambda s, o: s._op(o, lambda a, b: a * b)  # noqa: E731
    __rmul__ = __mul__
    __truediv__ = lambda s, o: s._op(o, lambda a, b: a / b)  # noqa: E731
    __rtruediv__ = lambda s, o: s._op(o, lambda a, b: b / a)  # noqa: E731


def _transcendental(fn):
    def f(x):
        Counted.ops["transcendental"] += 1
        return Counted(fn(x.v))
    return f


COUNTING = types.SimpleNamespace(
    cos=_transcendental(np.cos), sin=_transcendental(np.sin),
    square=lambda x: x._op(x, lambda a, b: a * b), stack=lambda xs, axis: xs)


class State:
    def __init__(self, values):
        self.values = [Counted(v) for v in values]

    def __getitem__(self, idx):
        return self.values[idx[1]]


def test_physics_flops_match_the_formula():
    Counted.ops.update(flops=0, transcendental=0)
    physics_step(State([0.1, 0.2, 0.03, 0.4]), 10.0, 0.02, xp=COUNTING)
    assert Counted.ops["flops"] == costs.PHYSICS_FLOPS_PER_SUBSTEP
    assert Counted.ops["transcendental"] == costs.PHYSICS_TRANSCENDENTALS_PER_SUBSTEP
    # C multiplies the arithmetic; S (paper §4.2: "S× as many global memory loads and stores") does not
    assert costs.physics_flops(8, 4) == costs.physics_flops(1, 4) == 4 * costs.PHYSICS_FLOPS_PER_SUBSTEP


def test_mlp_flops_match_the_layer_shapes():
    # multiply-adds of x @ w + b: 2 * fan_in * fan_out + fan_out per layer
    w = mlp_weights(0)
    expected = sum(2 * a.shape[0] * a.shape[1] + b.shape[0] for a, b in w.layers())
    assert costs.MLP_FLOPS == expected == 9090
    assert mlp_logits(w.layers(), np.zeros((1, 4), np.float32)).shape == (1, 2)


def test_unfused_bytes_count_state_and_counters_read_and_written():
    assert costs.unfused_bytes(1) == 2 * (16 + 8)
    assert costs.unfused_bytes(64) - costs.unfused_bytes(1) == 2 * 16 * 63
    assert costs.unfused_bytes(1024) == 32 * 1024 + 16
    assert costs.arithmetic_intensity(64) == pytest.approx(costs.arithmetic_intensity(1) * 48 / (32 * 64 + 16))
    assert costs.arithmetic_intensity(1, 1, "mlp") > 100 * costs.arithmetic_intensity(1, 1, "none")
