"""``python -m studylib train --sim chain``: bad input is one line and exit 2 before anything runs;
a short run gives the JSON contract and a saved policy that the judge can read."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from studylib.__main__ import main
from studylib.train.chain.policy import load_policy


@pytest.mark.parametrize("argv, message", [
    (["--sim", "chain", "--links", "0", "--collector", "fused"], "links from 1 to 32, got 0"),
    (["--sim", "chain", "--links", "33", "--collector", "jax"], "links from 1 to 32, got 33"),
    (["--sim", "chain", "--collector", "cuda"], "the chain trains with the collectors"),
    (["--sim", "chain", "--collector", "gymnasium-vector"], "the chain trains with the collectors"),
    (["--links", "2", "--collector", "fused"], "--links is the chain's"),
    (["--sim", "chain", "--collector", "cpp", "--num-envs", "0"], "num_envs must be a positive integer"),
    (["--sim", "chain", "--collector", "cpp", "--save", "policy.txt"], "--save must name a .npz file"),
])
def test_bad_input_is_one_line(argv, message, capsys):
    assert main(["train", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err, err


# Bad input answered as the command line answers it; then which frameworks the process had imported.
_REFUSE = """
import sys
from studylib.__main__ import main
codes = [main(["train", *argv]) for argv in (["--sim", "chain", "--links", "99", "--collector", "fused"],
                                              ["--sim", "chain", "--collector", "nope"], ["--collector", "nope"],
                                              ["--collector", "cpp", "--num-envs", "0"],
                                              ["--sim", "chain", "--collector", "fused", "--save", "policy.txt"],
                                              ["--collector", "cpp", "--save", "/no/such/folder/policy.npz"])]
print(codes, sorted(m for m in ("torch", "jax") if m in sys.modules))
"""


def test_bad_input_is_answered_before_torch_or_jax_is_imported():
    """The checks need neither framework (their imports take seconds on 2 cores): none is imported,
    the --save path's check included."""
    proc = subprocess.run([sys.executable, "-c", _REFUSE], capture_output=True, text=True, check=False, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[2, 2, 2, 2, 2, 2] []", proc.stdout + proc.stderr[-2000:]


def test_short_run_json_and_saved_policy(tmp_path, capsys):
    path = tmp_path / "policy.npz"
    rc = main(["train", "--sim", "chain", "--links", "1", "--collector", "cpp", "--num-envs", "4", "--seed", "3",
               "--max-seconds", "0.5", "--json", "--save", str(path)])
    assert rc == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["collector"] == "cpp" and result["seed"] == 3 and result["num_envs"] == 4
    assert result["settings"]["links"] == 1 and result["stopped"] == "max_seconds" and not result["solved"]
    assert result["trainer"] == "torch-ppo-continuous" and result["samples"] >= 4 * 256
    policy = load_policy(path)
    assert policy["W1"].shape == (6, 64) and policy["obs_mean"].shape == (6,)
    assert "cpp n=1 seed=3" in err  # the progress bar
