"""How a trained actor is judged: greedy episodes, mean return, CartPole-v1's 475 threshold.

Two evaluators, one rule (the mean undiscounted return of ``episodes`` greedy episodes, each one
whole episode from a fresh reset, at most 500 steps):

``greedy_check``       the check made *during* training, after regular numbers of samples. Its
                       cost counts in a run's wall-clock, so it is vectorized: all episodes step
                       together in numpy, float64 states, with ``studylib.sims.cartpole`` (gymnasium's formulas
                       line for line) until the last one ends. The same for every collector.
``gymnasium_return``   the final confirmation, not timed: gymnasium's own CartPole-v1 (its reset
                       draws, its 500-step limit), the episodes stepped together by gymnasium's
                       ``CartPoleVectorEnv`` so that the actor and the physics run batched.
"""

from __future__ import annotations

import numpy as np

from ..sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW, STATE_SIZE, is_terminated, physics_step
from .cartpole.actor_critic import check_arrays, greedy_actions

EVAL_SEED_OFFSET = 1_000_003  # evaluation episodes never share reset draws with training's seed


def greedy_check(arrays: dict, episodes: int, seed: int, p=CARTPOLE_V1, stream: int = 0) -> float:
    """Mean greedy return of ``episodes`` episodes on the vectorized float64 reference; ``stream``
    > 0 draws the resets from an independent stream of the same seed (a confirming check)."""
    return float(greedy_checks([arrays], episodes, [seed], p, stream)[0])


def greedy_checks(actors: list, episodes: int, seeds: list, p=CARTPOLE_V1, stream: int = 0) -> np.ndarray:
    """``greedy_check`` of several actors at once (a population's seeds), each with its own seed's
    reset draws: one numpy loop over the steps for all of them (batched matmuls)."""
    actors = [check_arrays(a) for a in actors]
    w = {k: np.stack([a[k] for a in actors]) for k in actors[0]}  # (S, ...) per array
    states = np.stack([np.random.default_rng([seed, EVAL_SEED_OFFSET] + ([stream] if stream else []))
                       .uniform(RESET_LOW, RESET_HIGH, (episodes, STATE_SIZE)) for seed in seeds])  # (S, E, 4)
    returns = np.zeros(states.shape[:2])
    alive = np.ones(states.shape[:2], dtype=bool)
    live = np.arange(len(actors))  # the actors with an episode still running
    for _ in range(p.max_episode_steps):
        # Every episode of a live actor is stepped (cheaper than indexing the live episodes); an
        # ended one is frozen. An actor whose episodes have all ended is dropped (a population's
        # check then stops paying for its failed actors: about 30% of a population's check time).
        st = states[live]
        x = st.astype(np.float32)
        h = np.tanh(x @ w["W1"] + w["b1"][:, None])
        h = np.tanh(h @ w["W2"] + w["b2"][:, None])
        action = np.argmax(h @ w["W3"] + w["b3"][:, None], axis=-1)
        force = np.where(action == 1, p.force_mag, -p.force_mag)
        nxt = physics_step(st, force, p.tau, p)
        running = alive[live]
        returns[live] += running  # CartPole-v1: reward 1 on every step, the terminating one included
        running &= ~is_terminated(nxt, p)
        alive[live] = running
        states[live] = np.where(running[..., None], nxt, st)
        still = running.any(axis=1)
        if not still.all():
            w = {k: v[still] for k, v in w.items()}
            live = live[still]
            if not len(live):
                break
    return returns.mean(axis=1)


def gymnasium_return(arrays: dict, episodes: int = 100, seed: int = 0) -> float:
    """Mean greedy return over ``episodes`` episodes of gymnasium's own CartPole-v1, each episode's
    reset seed its own (``seed * episodes + i``). In this process: the judge is untimed (the
    training clock is paused), so a helper process would change no figure, only add a child to
    keep alive beside JAX's and Ray's threads (one test run was seen stalled beside one)."""
    return float(_episode_returns(arrays, np.arange(episodes), seed, episodes).mean())


def _episode_returns(arrays: dict, indices, seed: int, episodes: int) -> np.ndarray:
    """The greedy returns of episodes ``indices`` (of ``episodes``) on gymnasium's CartPole-v1:
    each episode reset by gymnasium's ``CartPoleEnv.reset`` with its own seed, then all of them
    stepped together by gymnasium's ``CartPoleVectorEnv`` (CartPole-v1's time limit), whose step
    is ``CartPoleEnv.step``'s float64 arithmetic line for line on arrays, so the actor and the
    physics run batched. Each episode's return is the one ``gymnasium.make("CartPole-v1")`` gives
    it, bit for bit (tests/test_train_answers.py); stepping 100 such environments one by one cost
    about 0.35 s per evaluation, 26 s of a cold build's training chapter on 2 cores."""
    import gymnasium
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv, CartPoleVectorEnv

    one = CartPoleEnv()
    starts = []
    for i in indices:
        one.reset(seed=seed * episodes + int(i) + EVAL_SEED_OFFSET)
        starts.append(np.array(one.state, dtype=np.float64))
    envs = CartPoleVectorEnv(num_envs=len(starts), max_episode_steps=gymnasium.spec("CartPole-v1").max_episode_steps)
    envs.reset(seed=0)
    envs.state = np.stack(starts, axis=1)  # (4, E): the vector env's layout; the episodes' own resets
    obs = envs.state.T.astype(np.float32)
    returns = np.zeros(len(starts))
    alive = np.ones(len(starts), dtype=bool)
    while alive.any():
        # every episode is stepped; one that ended is reset by the vector env and no longer counted
        actions = np.asarray(greedy_actions(arrays, obs), dtype=np.int64)
        obs, reward, terminated, truncated, _ = envs.step(actions)
        returns += np.where(alive, reward, 0.0)
        alive &= ~(terminated | truncated)
    envs.close()
    return returns
