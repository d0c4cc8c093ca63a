"""RL source: PPO (rsl_rl) on the lift-cube task and policy rollouts recorded in the L2 schema."""
