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
    holding_gripper=(0.2, 0.45),  # the jaw closed on the cube stops near 0.32 rad; on nothing at its 0.1 target
    open_gripper=0.9,
    holding_distance=0.035,  # a held cube slides 1-2 cm down the jaws as it rises
    descend_xy_range=0.03,  # the 5-DOF arm's pose IK can stay 2 cm off over the cube until it lowers
    reactive_lift_speed=0.3,  # the reactive expert's lift: at max_speed 3 of 16 cubes slip out of the jaws, here 1
)
