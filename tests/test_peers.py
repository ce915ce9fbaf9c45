"""Peers are measured as they ship: they run, count episodes, and refuse our knobs."""

import pytest

from studylib import EnvSettings, MeasurePoint
from studylib.__main__ import main
from studylib.errors import ConfigError
from studylib.harness.measure import measure
from studylib.harness.peers import PEERS, make_peer, make_peer_from


@pytest.mark.parametrize("name", list(PEERS))
def test_peer_rollout_counts_episodes(name):
    env = make_peer(name, 64, seed=1)
    result = env.rollout(60)
    env.synchronize()
    assert result.samples == 64 * 60
    assert result.episodes_finished > 0  # random actions end CartPole episodes in ~20 steps


@pytest.mark.parametrize("kwargs", [{"policy": "mlp"}, {"state_factor": 2}, {"compute_factor": 2},
                                    {"device": "cuda"}])
def test_peers_refuse_our_knobs(kwargs):
    with pytest.raises(ConfigError, match="as it ships"):
        MeasurePoint.of("gymnasium-vector", 16, 1, **{"policy": "none", **kwargs})


def test_peer_from_settings_and_unknown_peer():
    env = make_peer_from(EnvSettings("gymnax", 8, seed=3))
    assert env.name == "gymnax" and env.num_envs == 8 and env.seed == 3
    with pytest.raises(ConfigError, match="unknown peer"):
        make_peer_from(EnvSettings("cpp", 8))
    with pytest.raises(ConfigError, match="unknown peer"):
        make_peer("cpp", 8)


def test_harness_measures_a_peer():
    row = measure(MeasurePoint.of("gymnasium-vector", 64, 5, policy="none", repeats=2, min_seconds=0.01))
    assert row["impl"] == "gymnasium-vector" and row["samples_per_s"] > 0


def test_cli_peers_compares_cpp_with_gymnasium(capsys):
    rc = main(["peers", "--log2-num-envs", "4", "--steps", "8", "--peer-steps", "2"])
    out = capsys.readouterr().out
    assert rc == 0 and "N=2^4" in out and "cpp, K=8 per call" in out
    ratio = float(out.split("ratio")[1].split("x")[0])
    assert ratio > 0
