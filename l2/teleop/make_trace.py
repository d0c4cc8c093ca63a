"""Make a device-input trace by letting a scripted "operator" drive a real teleop session.

The operator is a :class:`~isaaclab.devices.DeviceBase` that follows the task's scripted expert (its gym
registration's ``scripted_expert_entry_point``, :mod:`l2.scripted.expert`) the way a person on a keyboard would:
each poll, a step toward the expert's end-effector pose no larger than a key press gives
``[dx, dy, dz, rx, ry, rz, gripper]`` (each axis within ``POS_STEP``, the rotation within ``ROT_STEP``, both along
the way to the expert's pose so that they arrive together), the gripper as the expert commands it, plus a ``start``
event. The session records them with the same
:class:`~l2.teleop.trace.TraceRecorder` as ``run.py --record-trace``, so the trace replays through
``--teleop_device replay`` to the same demo. This is how ``config/teleop/lift_cube_trace.json`` was made::

    python -m l2.teleop.make_trace --output config/teleop/lift_cube_trace.json --seed 42

With ``--operator leader`` the operator is a leader arm instead (:class:`LeaderArmOperator`): the joint positions the
task's scripted expert reaches for, recorded as a ``joint`` trace, for a task whose action is joint positions::

    python -m l2.teleop.make_trace --task L2-Lift-Cube-SO101-JointPos-Teleop --operator leader \\
        --output config/teleop/so101_lift_cube_leader_trace.json --seed 42
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from isaaclab.devices import DeviceBase

from l2.format import cli_args
from l2.recording.errors import OneLineError
from l2.recording.sim import override_arg
from l2.teleop.devices import POS_STEP, ROT_STEP


class ScriptedOperator(DeviceBase):
    """The task's scripted expert at a keyboard: each poll, the step from the session's end-effector target toward
    the expert's that one key press allows (position and rotation together, along the way to the expert's pose), and
    the expert's gripper command."""

    def __init__(self, env, target, expert, pos_step: float = POS_STEP, rot_step: float = ROT_STEP):
        super().__init__()
        self.env, self.target, self.expert = env, target, expert  # target: the session's DeltaPoseAccumulator
        self.pos_step, self.rot_step = pos_step, rot_step
        self._callbacks: dict[str, Callable] = {}
        self._started = False

    def reset(self):
        self.expert.reset()

    def add_callback(self, key, func):
        self._callbacks[key] = func

    def advance(self) -> torch.Tensor:
        from isaaclab.utils.math import axis_angle_from_quat, quat_inv, quat_mul

        if not self._started:
            self._started = True
            self._callbacks["start"]()
        goal = self.expert.act(self.env)[0].to(self.target.pos.device, torch.float32)
        dpos = goal[:3] - self.target.pos[0]
        drot = axis_angle_from_quat(quat_mul(goal[3:7].unsqueeze(0), quat_inv(self.target.quat)))[0]
        # Both along the way to the expert's pose at once, as far as the larger of them allows in one press: an
        # operator lowering the jaws while still turning them would land them on the cube.
        presses = max(
            1.0, float(dpos.abs().max()) / self.pos_step, float(torch.linalg.vector_norm(drot)) / self.rot_step
        )
        return torch.cat([dpos / presses, drot / presses, goal[7:8]]).to(torch.float32)


class LeaderArmOperator(DeviceBase):
    """A leader arm in the hands of the scripted expert: each poll, the joint positions the task's scripted expert
    reaches for (its end-effector targets through the robot's IK), as a leader arm's joints send them to a follower
    (control ``joint``, as Isaac Lab's SO-101 joint-teleop variant takes a leader arm's)."""

    def __init__(self, env, expert):
        from l2.recording.task_space import TaskSpaceDriver

        super().__init__()
        self.env, self.expert = env, expert
        self.driver = TaskSpaceDriver(env)
        self._callbacks: dict[str, Callable] = {}
        self._started = False

    def reset(self):
        self.expert.reset()

    def add_callback(self, key, func):
        self._callbacks[key] = func

    def advance(self) -> torch.Tensor:
        if not self._started:
            self._started = True
            self._callbacks["start"]()
        return self.driver.action(self.expert.act(self.env))[0]


OPERATORS = ("keyboard", "leader")
"""``keyboard``: device-sized end-effector steps (control ``delta``); ``leader``: a leader arm's joint positions."""


def make_trace(
    output: str,
    seed: int,
    task: str | None = None,
    max_ticks: int = 1500,
    overrides: list[str] | tuple[str, ...] = (),
    operator: str = "keyboard",
) -> int:
    from l2.recording import sim
    from l2.recording.handler import configure_recording
    from l2.scripted.expert import check_expert, make_expert
    from l2.teleop.requirements import check_teleop_task, take_success_term
    from l2.teleop.run import DEFAULT_TASK
    from l2.teleop.session import TeleopSession
    from l2.teleop.trace import TraceRecorder

    task = task or DEFAULT_TASK
    control = "joint" if operator == "leader" else "delta"
    env_cfg = sim.load_env_cfg(task, "cpu", 1, seed, overrides)
    check_teleop_task(env_cfg, task, control, f"--operator {operator}")
    check_expert(task)
    take_success_term(env_cfg)
    with tempfile.TemporaryDirectory() as tmp:
        configure_recording(env_cfg, Path(tmp) / "teleop_trace_check.hdf5", task)
        env_cfg.recorders.export_in_close = False
        recorder = TraceRecorder(seed, task, operator, control, overrides=overrides)
        with sim.make_env(env_cfg, task) as env:
            session = TeleopSession(env, None, num_demos=1, control=control, recorder=recorder)
            expert = make_expert(task, env)
            if operator == "leader":
                session.device = LeaderArmOperator(env, expert)
            else:
                session.device = ScriptedOperator(env, session.target, expert)
            for event in ("start", "pause", "reset", "quit"):
                session.device.add_callback(event, session.callbacks()[event])
            session.begin_attempt()
            while not session.quit and session.stats.ticks < max_ticks:
                session.tick()
    trace = recorder.trace
    trace.events.append((len(trace.commands), "quit"))
    if session.stats.saved != 1:
        print(f"error: the scripted operator did not succeed at {task} in {max_ticks} ticks", file=sys.stderr)
        return 1
    trace.save(output)
    print(f"{output}: {len(trace.commands)} ticks, seed {seed}, one successful attempt of {task}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = cli_args.Parser(prog="python -m l2.teleop.make_trace", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--output",
        type=cli_args.output_file,
        default="config/teleop/lift_cube_trace.json",
        help="trace to write (default: %(default)s)",
    )
    parser.add_argument("--seed", type=cli_args.seed, default=42, help="the session's seed (default: %(default)s)")
    parser.add_argument(
        "--task",
        default=None,
        help="the teleop task; it needs a scripted expert (default: the Franka's, L2-Lift-Cube-Franka-IK-Abs-Teleop)",
    )
    parser.add_argument(
        "--operator",
        choices=OPERATORS,
        default="keyboard",
        help="keyboard: end-effector steps (control delta); leader: a leader arm's joint positions (control joint, "
        "for a task acting in joint positions, e.g. L2-Lift-Cube-SO101-JointPos-Teleop) (default: %(default)s)",
    )
    parser.add_argument(
        "--max_ticks", type=cli_args.positive_int, default=1500, help="give up after (default: %(default)s)"
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        type=override_arg,
        metavar="KEY=VALUE",
        help="cfg overrides and presets of the session, e.g. presets=no_cameras (faster; the trace "
        "replays the same with or without cameras)",
    )
    args = parser.parse_args(argv)
    try:
        return make_trace(args.output, args.seed, args.task, args.max_ticks, args.overrides, args.operator)
    except OneLineError as exc:
        cli_args.fail(str(exc))


if __name__ == "__main__":
    sys.exit(main())
