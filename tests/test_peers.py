"""Peers are measured as they ship: they run, count episodes, and refuse our knobs."""

import pytest

from studylib import bench
from studylib.errors import ConfigError
from studylib.peers import PEERS, make_peer


@pytest.mark.parametrize("name", list(PEERS))
def test_peer_rollout_counts_episodes(name):
    env = make_peer(name, 64, seed=1)
    result = env.rollout(60)
    env.synchronize()
    assert result.samples == 64 * 60
    assert result.episodes_finished > 0  # random actions end CartPole episodes in ~20 steps


@pytest.mark.parametrize("kwargs", [{"policy": "mlp"}, {"state_factor": 2}, {"compute_factor": 2}])
def test_peers_refuse_our_knobs(kwargs):
    with pytest.raises(ConfigError, match="as it ships"):
        bench.check_feasible("gymnasium-vector", 16, 1, **kwargs)


def test_bench_measures_a_peer():
    row = bench.measure("gymnasium-vector", 64, 5, policy="none", repeats=2, min_seconds=0.01)
    assert row["impl"] == "gymnasium-vector" and row["samples_per_s"] > 0
