"""Outside learners on the robot (``settings.CHAIN_PEERS``), each on gymnasium's own task, timed by
the chapter's clock (``evaluate.ChainClock``) and judged by its rule: ``sb3`` (Stable-Baselines3's
PPO with rl-baselines3-zoo's settings)."""
