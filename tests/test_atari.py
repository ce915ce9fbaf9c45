"""Atari collection (studylib.harness.atari.frames): the ROMs load offline, every implementation gives the standard
observation, frames are counted as emulator frames, the Nature CNN is the paper's, bad input is one
line with nothing written, and the chapter's rules can fail."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from studylib.harness.atari import frames as atari
from studylib.__main__ import main
from studylib.errors import ConfigError


@pytest.fixture
def offline(monkeypatch):
    """Any attempt to open a network connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("game", ["breakout", "pong"])
def test_roms_load_offline(game, offline):
    import ale_py

    path = atari.rom_path(game)
    assert path.is_file() and path.parent == atari.roms_dir()
    atari.quiet_ale()
    ale = ale_py.ALEInterface()
    ale.loadROM(str(path))
    assert ale.getScreenDims() == (210, 160)
    assert sum(ale.act(ale.getMinimalActionSet()[0]) for _ in range(8)) == 0  # the first frames score nothing


@pytest.mark.parametrize("impl", ["gym", "ale-vector", "envpool"])
def test_standard_observation_offline(impl, offline):
    env = atari.make_env(impl, "pong", 1 if impl == "gym" else 2)
    try:
        obs = env.reset(0)
        obs = env.step(np.zeros(len(obs), dtype=np.int64))
    finally:
        env.close()
    assert obs.shape == (1 if impl == "gym" else 2, atari.STACK, atari.SCREEN, atari.SCREEN) and obs.dtype == np.uint8
    assert env.num_actions == 6  # Pong's minimal action set


def test_frames_are_emulator_frames(tmp_path):
    from studylib.book.plans import atari_sweep

    points = [atari.AtariPoint("pong", "ale-vector", 2, policy, repeats=1, min_seconds=0.02) for policy in atari.POLICIES]
    df = atari_sweep("atari_test", points, tmp_path)
    assert df.attrs["measured"] == 2 and list(df["policy"]) == ["none", "cnn"]
    assert np.allclose(df["frames_per_s"], atari.FRAMESKIP * df["agent_steps_per_s"])
    assert (df["frames_per_s"] > 0).all() and (df["threads"] == atari.cores()).all()
    assert atari_sweep("atari_test", points, tmp_path).attrs["measured"] == 0  # resumed from the store


def test_nature_cnn_is_mnih_2015():
    import torch

    model = atari.nature_cnn(4)
    convs = [m for m in model if isinstance(m, torch.nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size[0], c.stride[0]) for c in convs] == [(32, 8, 4), (64, 4, 2), (64, 3, 1)]
    # 4x84x84 -> 32x20x20 -> 64x9x9 -> 64x7x7 -> 512 -> 4
    assert sum(p.numel() for p in model.parameters()) == (4 * 32 * 64 + 32) + (32 * 64 * 16 + 64) + (64 * 64 * 9 + 64) \
        + (3136 * 512 + 512) + (512 * 4 + 4) == 1_686_180
    obs = np.zeros((3, 4, 84, 84), np.uint8)
    with torch.inference_mode():
        assert atari.greedy_actions(model, atari.policy_input(obs)).shape == (3,)


def _one_line_nothing_written(argv, tmp_path, capsys, match):
    data = tmp_path / "data"
    assert main([*argv, "--data-dir", str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and match in err, err
    assert not data.exists()


def test_unknown_game_is_one_line_and_writes_nothing(tmp_path, capsys):
    _one_line_nothing_written(["atari", "--games", "breakout,no_such_game", "--impl", "ale-vector", "--num-envs", "1"],
                              tmp_path, capsys, "unknown Atari game 'no_such_game'")


def test_missing_rom_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(atari, "roms_dir", lambda: tmp_path / "no_roms")
    _one_line_nothing_written(["atari", "--games", "pong", "--impl", "ale-vector", "--num-envs", "1"], tmp_path, capsys,
                              "the ROM of Atari game 'pong' is missing")


def test_chapter_with_unknown_game_writes_nothing(tmp_path):
    from studylib import book
    from studylib.book.plans import atari_data

    P = book.params("atari", preset="tiny", data_dir=tmp_path / "data", games=["pong", "no_such_game"])
    with pytest.raises(ConfigError, match="unknown Atari game"):
        atari_data(P)
    assert not (tmp_path / "data").exists()


def test_bad_points_are_refused():
    with pytest.raises(ConfigError, match="N = 1 only"):
        atari.AtariPoint("pong", "gym", 4)
    with pytest.raises(ConfigError, match="unknown Atari implementation"):
        atari.AtariPoint("pong", "cule", 4)
    with pytest.raises(ConfigError, match="envpool has no Atari task"):
        atari.AtariPoint("combat", "envpool", 1)  # an ALE ROM that envpool does not list


def test_limiting_phase_and_rules_can_fail():
    row = {"env_step_s": 1.0, "host_copies_s": 0.1, "inference_s": 3.0}
    assert atari.limiting_phase(row) == "inference"
    assert atari.limiting_phase({**row, "inference_s": 0.5}) == "env step"
    assert atari.limiting_phase({**row, "host_copies_s": 9.0}) == "host copies"
