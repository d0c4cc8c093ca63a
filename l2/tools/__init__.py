"""Tools over L2 files that need no simulator: merge, split, the HTML inspection report and frame strips."""
