"""Scripted source: a vectorized pick-and-lift state machine recording lift-cube demos."""
