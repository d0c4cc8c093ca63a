"""rsl_rl agent cfgs of the RL lift-cube variant."""
