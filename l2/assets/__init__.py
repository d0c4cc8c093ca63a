"""Robot assets: the offline Franka Panda (built from a PyPI package) and its articulation cfg."""
