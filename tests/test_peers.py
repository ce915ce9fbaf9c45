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


@pytest.mark.parametrize("name,module", [("gymnax", "gymnax"), ("envpool", "envpool")])
def test_a_peer_whose_package_is_missing_is_skipped_with_the_reason(name, module, monkeypatch, tmp_path):
    """A reader without a peer's library (or a GPU machine it was not carried to) measures the
    rest: the peer's points are skipped saying which package is missing, not the run ended."""
    import sys

    from studylib.errors import PackageUnavailableError
    from studylib.harness.sweep import sweep

    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(PackageUnavailableError, match=f"{module} is not installed here"):
        make_peer(name, 8)
    df = sweep("p", [MeasurePoint.of(name, 8, 1, policy="none", repeats=1, min_seconds=0.001),
                     MeasurePoint.of("cpp", 8, 1, policy="none", repeats=1, min_seconds=0.001)],
               data_dir=tmp_path, progress=False, log=lambda _: None)
    assert list(df["impl"]) == ["cpp"]
    assert [s["impl"] for s in df.attrs["skipped"]] == [name]
    assert f"{module} is not installed here" in df.attrs["skipped"][0]["reason"]
