"""Brax's PPO peer: the task/threshold/hyperparameter mapping per n (no training: a Brax run
compiles for 30-50 s on a CPU, measured by hand and reported in the module's commit)."""

import pytest

from studylib.errors import ConfigError
from studylib.train.chain.peers.brax import BRAX_PPO, THRESHOLDS, brax_settings


@pytest.mark.parametrize("links, env, threshold, timesteps", [
    (1, "inverted_pendulum", 950.0, 2_000_000),
    (2, "inverted_double_pendulum", 9100.0, 20_000_000),
])
def test_settings_per_links(links, env, threshold, timesteps):
    s = brax_settings(links)
    assert (s["env"], s["threshold"], s["num_timesteps"], s["links"]) == (env, threshold, timesteps, links)
    assert THRESHOLDS[links] == threshold
    # Brax's notebook values, untouched but for num_evals (an evaluation after every training step)
    for k, v in BRAX_PPO.items():
        if k != "num_evals":
            assert s[k] == v, k
    assert (s["num_envs"], s["batch_size"], s["unroll_length"], s["num_minibatches"]) == (2048, 1024, 5, 32)
    assert s["env_steps_per_training_step"] == 1024 * 5 * 32
    assert (s["num_evals"] - 1) * s["env_steps_per_training_step"] >= timesteps
    assert s["changed_from_brax"] == ["seed", "num_evals"]


def test_num_envs_override_is_named():
    assert "num_envs" in brax_settings(1, num_envs=256)["changed_from_brax"]
    assert brax_settings(1, num_envs=2048)["changed_from_brax"] == ["seed", "num_evals"]


@pytest.mark.parametrize("links", [0, 3, 5])
def test_other_links_are_a_config_error(links):
    with pytest.raises(ConfigError, match="links 1"):
        brax_settings(links)
