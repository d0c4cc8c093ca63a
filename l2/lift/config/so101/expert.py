"""The scripted pick-and-lift expert's parameters on the SO-101 (``pick_and_lift_cfg_entry_point``)."""

from l2.scripted.state_machine import PickAndLiftCfg

SO101_PICK_AND_LIFT = PickAndLiftCfg(
    approach_height=0.06,
    grasp_height=-0.008,  # the end-effector point is between the jaw tips: they close 8 mm below the cube's centre
    lift_height=0.11,
    position_threshold=0.008,
    top_down=(0.0, 0.0, 0.0, 1.0),  # the gripper frame's own: jaws down its -z, closing along x
)
