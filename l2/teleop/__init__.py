"""Teleoperation source: a human drives the lift-cube task with a device; successful attempts are saved."""
