"""Scripted source: each task's scripted expert (its gym registration's ``scripted_expert_entry_point``: the
lift's vectorized pick-and-lift state machine, the SO-101 stack's stacking expert) recording its demos."""
