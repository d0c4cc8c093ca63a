"""L2: lift-cube demonstrations recorded in Isaac Lab (scripted, RL, teleop) in one HDF5 schema.

Importing ``l2`` (and ``l2.format.schema`` / ``l2.format.validate``) needs no simulator; the task, recording
wiring and sources import Isaac Lab lazily in their own modules.
"""
