"""Scripted variant of the lift-cube task."""

from isaaclab.utils import configclass

from l2.lift.lift_env_cfg import LiftCubeEnvCfg


@configclass
class ScriptedLiftCubeEnvCfg(LiftCubeEnvCfg):
    """The base task with its terms kept separate (the base already does; stated here because the
    state machine and the recorder rely on it) and a longer episode so slow grasps can finish."""

    def __post_init__(self):
        super().__post_init__()
        self.observations.policy.concatenate_terms = False
        self.episode_length_s = 6.0
