"""Policies behind Isaac-GR00T's policy-server protocol, sim-free (numpy, msgpack, pyzmq; no Isaac Lab).

``protocol`` is the wire format, client and server; ``modality`` turns env obs terms into a GR00T
observation and an action chunk back into env actions, through the same mapping config L3 converts with;
``replay`` serves a GR00T LeRobot dataset's recorded actions. ``python -m l2.serve`` runs a server and
``python -m l2.evaluate`` drives the task with one (docs/evaluate.md).
"""
