"""The torch chain on a device that is not the CPU, checked without a GPU: PyTorch's ``meta``
device refuses a CPU tensor beside its own exactly as CUDA does ("Expected all tensors to be on
the same device"), so running the environment's own step, reset and policy code on meta tensors
finds every constant a GPU run would find created on the CPU (as a CUDA machine once found the
reset draws' component index)."""

import pytest
import torch

from studylib import make
from studylib.envs.torch_env import _mask32
from studylib.sims.chain.model import ChainParams
from tests.device_cases import on_meta


@pytest.mark.parametrize("links", [1, 2, 8])
@pytest.mark.parametrize("policy", ["none", "mlp"])
def test_the_torch_chain_steps_resets_and_acts_on_a_device_that_is_not_the_cpu(links, policy):
    env = on_meta(make("torch", 16, sim="chain", params=ChainParams(links=links), device="cpu"))
    actions = env.rules.controls(policy, env._obs_now, env.seed, env._env_index, env.episode, env.elapsed,
                                 env._layers, env.log_std, torch, _mask32)
    out = env._advance(actions)
    restarted = env._restart(torch.ones(16, dtype=torch.bool, device="meta"))
    fresh = env.rules.reset_states(env.seed, env._env_index, env.episode, env.params, torch, _mask32)
    for tensor in (actions, out.state, out.observation, out.reward, out.done, restarted, fresh):
        assert tensor.device.type == "meta"
