"""A task of a user's own, defined in this file as a user defines one in their package: derived from a shipped
task, with another observation set and another object, registered with gymnasium, then recorded by the scripted
runner (``--task MODULE:ID``), converted without a mapping and validated, through the public entry points alone
(docs/own_task.md)."""

from __future__ import annotations

import json

import gymnasium as gym
import h5py
import pytest

pytest.importorskip("isaaclab")

import isaaclab.sim as sim_utils  # noqa: E402
from isaaclab.managers import ObservationGroupCfg as ObsGroup  # noqa: E402
from isaaclab.managers import ObservationTermCfg as ObsTerm  # noqa: E402
from isaaclab.utils import configclass, replace  # noqa: E402

from l2.lift import mdp  # noqa: E402
from l2.lift.config.so101.joint_pos_env_cfg import So101ScriptedLiftCubeEnvCfg  # noqa: E402

pytestmark = pytest.mark.sim

TASK = "Test-Own-Lift-Cylinder-SO101"
INSTRUCTION = "Pick up the blue cylinder."
JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")


@configclass
class OwnPolicyObsCfg(ObsGroup):
    """Another observation set than the shipped task's: absolute joints, the cylinder's position, the last action."""

    joints = ObsTerm(func=mdp.joint_pos)
    cylinder_position = ObsTerm(func=mdp.object_position_in_robot_root_frame)
    last_action = ObsTerm(func=mdp.last_action)

    def __post_init__(self):
        self.enable_corruption = False
        self.concatenate_terms = False


@configclass
class OwnLiftCylinderEnvCfg(So101ScriptedLiftCubeEnvCfg):
    """The SO-101 lift with a standing cylinder (3 cm across, 3 cm tall) for its object."""

    instruction: str = INSTRUCTION

    def __post_init__(self):
        super().__post_init__()
        spawn = self.scene.object.spawn
        self.scene.object = replace(
            self.scene.object,
            spawn=sim_utils.CylinderCfg(
                radius=0.015,
                height=0.03,
                rigid_props=spawn.rigid_props,
                mass_props=spawn.mass_props,
                collision_props=spawn.collision_props,
                physics_material=spawn.physics_material,
                visual_material=sim_utils.PreviewSurfaceCfg(diffuse_color=(0.1, 0.2, 0.9)),
            ),
        )
        self.observations.policy = OwnPolicyObsCfg()


gym.register(
    id=TASK,
    entry_point="isaaclab.envs:ManagerBasedRLEnv",
    kwargs={
        "env_cfg_entry_point": f"{__name__}:OwnLiftCylinderEnvCfg",
        # the shipped pick-and-lift expert, with the SO-101's parameters: it reads the scene's "object"
        "scripted_expert_entry_point": "l2.scripted.state_machine:pick_and_lift_expert",
        "pick_and_lift_cfg_entry_point": "l2.lift.config.so101.expert:SO101_PICK_AND_LIFT",
    },
    disable_env_checker=True,
)


def test_a_task_of_one_s_own_is_recorded_converted_without_a_mapping_and_validated(tmp_path, monkeypatch):
    from l2.format.validate import validate_file
    from l2.recording import sim
    from l2.scripted import run as scripted
    from l3 import convert
    from l3 import validate as l3_validate

    # --task MODULE:ID names this module to the run's processes in the environment: undone after the test, so that
    # the commands other tests of this worker start do not try to import it
    monkeypatch.setenv(sim.TASK_MODULES, "")

    demos = tmp_path / "scripted_own.hdf5"
    rc = scripted.main(
        ["--task", f"{__name__}:{TASK}", "--num_envs", "2", "--num_demos", "2", "--workers", "1"]
        + ["--output", str(demos), "presets=no_cameras"]
    )
    assert rc == 0
    report = validate_file(demos)
    assert report.ok, report.errors
    with h5py.File(demos) as f:
        assert json.loads(f["data"].attrs["env_args"])["env_name"] == TASK
        for name in f["data"]:
            demo = f["data"][name]
            assert demo.attrs["success"]
            assert set(demo["obs"]) == {"joints", "cylinder_position", "last_action"}

    dataset = tmp_path / "own_gr00t"
    assert convert.main([str(demos), "--output", str(dataset)]) == 0
    assert l3_validate.main([str(dataset)]) == 0
    info = json.loads((dataset / "meta" / "info.json").read_text())
    assert info["total_episodes"] == 2
    # what the recording says about its env names the columns: no mapping was written by hand
    assert info["robot_type"] == "so101"
    modality = json.loads((dataset / "meta" / "modality.json").read_text())
    assert {"joints", "cylinder_position"} <= set(modality["state"])
    joints = modality["state"]["joints"]
    state_names = info["features"]["observation.state"]["names"]
    assert state_names[joints["start"] : joints["end"]] == list(JOINTS)
    assert info["features"]["action"]["names"] == list(JOINTS)
    assert (dataset / "meta" / "l3_mapping.yaml").is_file()  # the mapping used, to edit and convert again
    tasks = [json.loads(line)["task"] for line in (dataset / "meta" / "tasks.jsonl").read_text().splitlines()]
    assert INSTRUCTION in tasks
