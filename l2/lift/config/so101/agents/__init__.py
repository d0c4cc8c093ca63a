"""rsl_rl agent cfgs of the SO-101 lift-cube RL variant."""
