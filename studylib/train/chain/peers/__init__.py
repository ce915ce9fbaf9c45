"""Outside learners on the robot (``settings.CHAIN_PEERS``), each on its own task and timed by the
chapter's clock rule: ``sb3`` (Stable-Baselines3's PPO with rl-baselines3-zoo's settings on
gymnasium's tasks, judged by the chapter's rule) and ``brax`` (Brax's PPO with its own settings on
Brax's pendulums, judged by Brax's own evaluation)."""
