"""The scripted pick-and-lift expert's parameters on the SO-101 (``pick_and_lift_cfg_entry_point``)."""

from l2.scripted.state_machine import PickAndLiftCfg

SO101_PICK_AND_LIFT = PickAndLiftCfg(
    approach_height=0.06,
    # The end-effector point is between the jaw tips: they close 2 mm above the cube's centre, so it hangs from the
    # pads below the line through them (closing below the centre, it tips over that line).
    grasp_height=0.002,
    lift_height=0.11,
    position_threshold=0.008,
    grasp_time=0.8,  # the jaw closes at about 1.7 rad/s at its 1 N m limit, from 1.0 to the cube's 0.4 in 0.35 s
    top_down=(0.0, 0.0, 0.0, 1.0),  # the gripper frame's own: jaws down its -z, closing along x
    max_speed=0.1,  # one IK step per control step: a target jumping 10 cm overshoots by 9 cm and flings the cube
)
