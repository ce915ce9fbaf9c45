"""``torch-compile``: the ``torch`` implementation with its step compiled by ``torch.compile``
(``TorchCompileCartPole``; ``TorchCompileEnv`` below for any simulator with an array-form
episode module: the n-link chain).

The same lines as torch_env.py (``studylib.sims.cartpole.integrate`` and ``policy.mlp_logits`` with
``xp=torch``), written as one pure function of tensors, ``_steps``: policy, physics, termination,
truncation and same-step reset of ``STEPS_PER_CALL`` consecutive steps. TorchInductor fuses
its ~30 elementwise ops per step into a few generated C++ (CPU) or Triton (GPU) kernels, so a
step costs a handful of kernel calls instead of one per op; Python still drives the loop,
``STEPS_PER_CALL`` steps per call (the whole K loop is not compiled: dynamo unrolls Python loops,
so compile time would grow with K).

On a GPU the compiled function is additionally captured as a CUDA graph (``mode=
"reduce-overhead"``): one graph replay per call instead of a launch per kernel. CUDA graphs
replay into static output buffers, so outputs are cloned before the next call overwrites them.

Randomness: resets draw from the same ``torch.Generator`` as ``torch`` (seeded by ``seed`` in
``reset``), outside the compiled region: one ``torch.rand`` per step of shape (N, 4), passed in.
Inductor's own RNG (philox, not the generator's stream) is never used, so the same seed gives the
same trajectory on every run and a different seed a different one; the reset draws are the very
numbers ``torch`` draws. Physics and inference may differ from eager ``torch`` by float32
rounding (fused and vectorized kernels), as any two float32 implementations do.

``compile(K, policy)`` compiles ahead of time (the harness times it apart from the rollout).
Compiled code is shared by all instances with the same (S, C, policy, device): the first N is
compiled static (fastest), a second N recompiles once with N dynamic (torch.compile's default).
"""

from __future__ import annotations

import time
import types

import torch

from ..sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW, STATE_SIZE, CartPoleParams
from ..episodes import advance, hash_actions
from ..policy import mlp_logits
from .torch_env import TorchCartPole, TorchEnv, _mask32

STEPS_PER_CALL = 1  # steps per compiled call (unrolled in the graph); see the module doc

# Where a step's actions come from (a static argument of the compiled function).
_GIVEN, _MLP, _HASH = "given", "mlp", "none"


def _steps(state, elapsed, episode, uniforms, env_index, actions, w1, b1, w2, b2, w3, b3, seed,
           *, state_factor: int, compute_factor: int, policy: str, p: CartPoleParams = CARTPOLE_V1):
    """``len(uniforms)`` steps of all envs (TorchCartPole._advance, policy included), pure.

    uniforms: (steps, N, 4) in [0, 1), the CartPole reset draws of each step. actions: (N,) for
    policy "given" (one step), else unused. Returns (state, elapsed, episode, terminated,
    truncated, episodes finished, final obs): the flags and the observations before the same-step
    reset are those of the last step.
    """
    done_total = torch.zeros((), dtype=torch.int64, device=state.device)
    out = None
    for t in range(uniforms.shape[0]):
        if policy == _MLP:
            logits = mlp_logits(((w1, b1), (w2, b2), (w3, b3)), state[:, :STATE_SIZE], xp=torch)
            actions = torch.argmax(logits, dim=1)
        elif policy == _HASH:
            actions = hash_actions(seed, env_index, episode, elapsed, wrap=_mask32)
        fresh = uniforms[t] * (RESET_HIGH - RESET_LOW) + RESET_LOW
        out = advance(state, elapsed, episode, actions, fresh, state_factor=state_factor,
                      compute_factor=compute_factor, p=p, xp=torch)
        state, elapsed, episode = out.state, out.elapsed, out.episode
        done_total = done_total + out.done.sum()
    return state, elapsed, episode, out.terminated, out.truncated, done_total, out.final_obs


# (state_factor, compute_factor, policy, steps, device type, params) -> compiled function
_COMPILED: dict = {}


def _compiled_as(fn, name: str, device: str, *, dynamic):
    """``torch.compile(fn)`` under a code object of its own named ``name``: dynamo caches compiled
    code per code object (with a recompile limit), so a code object per key keeps the keys from
    sharing, and evicting, each other's entries. CUDA: the step's kernels captured as one CUDA
    graph (replayed per call); CPU: inductor's C++ kernels ("reduce-overhead" would only add a copy
    there: no graphs on the CPU)."""
    fn = types.FunctionType(fn.__code__.replace(co_name=name, co_qualname=name), fn.__globals__, name, None,
                            fn.__closure__)
    mode = "reduce-overhead" if device == "cuda" else None
    return torch.compile(fn, dynamic=dynamic, fullgraph=True, mode=mode)


def compiled_steps(state_factor: int, compute_factor: int, policy: str, steps: int, device: str,
                   params: CartPoleParams = CARTPOLE_V1):
    key = (state_factor, compute_factor, policy, steps, torch.device(device).type, params)
    fn = _COMPILED.get(key)
    if fn is None:
        def bound(*args):
            return _steps(*args, state_factor=state_factor, compute_factor=compute_factor,
                          policy=policy, p=params)

        fn = _COMPILED[key] = _compiled_as(bound, f"steps_S{state_factor}_C{compute_factor}_{policy}_{steps}",
                                           key[4], dynamic=None)
    return fn


class TorchCompileCartPole(TorchCartPole):
    name = "torch-compile"

    def __init__(self, settings):
        super().__init__(settings)
        self._weights = [t for layer in self._layers for t in layer]  # w1, b1, w2, b2, w3, b3
        self._cuda = self.device.startswith("cuda")
        self._seed_tensor = torch.tensor(self.seed, dtype=torch.int64, device=self.device)  # not a guard

    def _fn(self, policy: str, steps: int):
        return compiled_steps(self.state_factor, self.compute_factor, policy, steps, self.device, self.params)

    def _call(self, policy: str, steps: int, actions=None):
        """``steps`` steps in one compiled call; updates the state, returns (term, trunc, done)."""
        uniforms = self._uniforms(steps)
        if actions is None:
            actions = self._env_index  # a placeholder of the right shape: "given" only reads it
        out = self._fn(policy, steps)(self.state, self.elapsed, self.episode, uniforms, self._env_index,
                                      actions, *self._weights, self._seed_tensor)
        if self._cuda:  # CUDA-graph outputs live in static buffers that the next replay overwrites
            out = tuple(t.clone() for t in out)
        self.state, self.elapsed, self.episode, terminated, truncated, done, self._final_obs = out
        return terminated, truncated, done

    def _uniforms(self, steps: int) -> torch.Tensor:
        """The reset candidates' uniforms of ``steps`` steps, (steps, N, 4): the draws of
        ``steps`` eager steps (TorchCartPole._draw_reset_rows), before their scaling."""
        return torch.rand((steps, self.num_envs, STATE_SIZE), generator=self._generator, device=self.device)

    def _step(self, actions):
        actions = actions if self._native else torch.from_numpy(actions)
        # int64 on the device whatever the caller's integer dtype: one compiled graph for every call
        terminated, truncated, _ = self._call(_GIVEN, 1, actions.to(self.device, torch.int64))
        return self._outputs(terminated, truncated)

    def compile(self, num_steps: int, policy: str = "mlp") -> float:
        """Compile the rollout of (K, policy) now; return the seconds it took. The state is saved
        and restored, so compiling does not advance the environments (nor their generator)."""
        saved = (self.state, self.elapsed, self.episode, self._generator.get_state())
        start = time.perf_counter()
        for steps in self._chunks(num_steps):
            self._call(policy, steps)
        self.synchronize()
        seconds = time.perf_counter() - start
        self.state, self.elapsed, self.episode = saved[:3]
        self._generator.set_state(saved[3])
        return seconds

    @staticmethod
    def _chunks(num_steps: int):
        """The distinct call sizes a K-step rollout uses (each is compiled once)."""
        full, rest = divmod(num_steps, STEPS_PER_CALL)
        return ([STEPS_PER_CALL] if full else []) + ([rest] if rest else [])

    def _rollout(self, num_steps, policy):
        done_total = torch.zeros((), dtype=torch.int64, device=self.device)
        full, rest = divmod(num_steps, STEPS_PER_CALL)
        for steps in [STEPS_PER_CALL] * full + ([rest] if rest else []):
            done_total += self._call(policy, steps)[2]
        return int(done_total)


def _episode_step(state, elapsed, episode, obs, env_index, actions, w1, b1, w2, b2, w3, b3, *, rules, seed: int,
                  log_std: float, policy: str, p):
    """One step of N environments (TorchEnv's: the policy's controls, then the episode module's
    ``step_with_reset``), pure. ``actions``: (N,) float controls for policy "given", else unused. Returns (state, elapsed,
    episode, observation, reward, terminated, truncated, final observation)."""
    if policy != _GIVEN:
        actions = rules.controls(policy, obs, seed, env_index, episode, elapsed, ((w1, b1), (w2, b2), (w3, b3)),
                                 log_std, torch, _mask32)
    out = rules.step_with_reset(state, elapsed, episode, actions, seed, env_index, p, torch, _mask32, rules.eager_step(p))
    return out.state, out.elapsed, out.episode, out.observation, out.reward, out.terminated, out.truncated, \
        out.final_obs


def compiled_episode_step(rules, policy: str, device: str, params, seed: int, log_std: float, num_envs: int):
    """The compiled step of (rules, policy, device, params, seed, log_std) for N environments: one
    static graph per N (inductor's dynamic-shape C++ of the chain's step fails to compile on
    torch 2.13's CPU backend: a Vectorized<float> shift), the seed and log_std baked in."""
    key = (rules, policy, torch.device(device).type, params, seed, log_std, num_envs)
    fn = _COMPILED.get(key)
    if fn is None:
        def bound(*args):
            return _episode_step(*args, rules=rules, seed=seed, log_std=log_std, policy=policy, p=params)

        fn = _COMPILED[key] = _compiled_as(bound, f"episode_step_{type(params).__name__}_{policy}_{num_envs}",
                                           key[2], dynamic=False)
    return fn


class TorchCompileEnv(TorchEnv):
    """``torch-compile`` for any simulator with an array-form episode module (the n-link chain):
    TorchEnv's step (policy, physics, episode rules, the same-step reset) as one function
    compiled by ``torch.compile`` (inductor's C++ kernels on the CPU, a CUDA graph on a GPU),
    called once per step."""

    name = "torch-compile"

    def __init__(self, settings):
        super().__init__(settings)
        self._weights = [t for layer in self._layers for t in layer]
        self._cuda = self.device.startswith("cuda")

    def _call(self, policy: str, actions=None):
        fn = compiled_episode_step(self.rules, policy, self.device, self.params, self.seed, self.log_std,
                                   self.num_envs)
        out = fn(self.state, self.elapsed, self.episode, self._obs_now, self._env_index,
                 self._env_index if actions is None else actions, *self._weights)
        if self._cuda:
            out = tuple(t.clone() for t in out)
        self.state, self.elapsed, self.episode, self._obs_now, reward, terminated, truncated, self._final_obs = out
        return reward, terminated, truncated

    def _step(self, actions):
        actions = actions if self._native else torch.from_numpy(actions)
        reward, terminated, truncated = self._call(_GIVEN, actions.to(self.device, torch.float32))
        if self._native:
            return self._obs_now, reward, terminated, truncated
        return (self._obs_now.cpu().numpy(), reward.cpu().numpy().astype("float32"), terminated.cpu().numpy(),
                truncated.cpu().numpy())

    def compile(self, num_steps: int, policy: str = "mlp") -> float:
        """Compile the step of ``policy`` now; return the seconds it took (the state is kept)."""
        saved = (self.state, self.elapsed, self.episode, self._obs_now, self._final_obs)
        start = time.perf_counter()
        self._call(policy)
        self.synchronize()
        seconds = time.perf_counter() - start
        self.state, self.elapsed, self.episode, self._obs_now, self._final_obs = saved
        return seconds

    def _rollout(self, num_steps, policy):
        done_total = torch.zeros((), dtype=torch.int64, device=self.device)
        for _ in range(num_steps):
            _, terminated, truncated = self._call(policy)
            done_total += (terminated | truncated).sum()
        return int(done_total)
