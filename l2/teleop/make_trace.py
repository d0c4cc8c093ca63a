"""Make a device-input trace by letting a scripted "operator" drive a real teleop session.

The operator is a :class:`~isaaclab.devices.DeviceBase` that looks at the cube and outputs what a
person on a keyboard would: small clipped steps ``[dx, dy, dz, rx, ry, rz, gripper]`` (above the cube,
down to it, close, lift) plus a ``start`` event. The session records them with the same
:class:`~l2.teleop.trace.TraceRecorder` as ``run.py --record-trace``, so the trace replays through
``--teleop_device replay`` to the same demo. This is how ``config/teleop/lift_cube_trace.json`` was made::

    python -m l2.teleop.make_trace --output config/teleop/lift_cube_trace.json --seed 42
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from isaaclab.devices import DeviceBase

from l2.format import cli_args
from l2.recording.sim import OneLineError, override_arg
from l2.teleop.devices import POS_STEP, ROT_STEP

# (phase, height of the end effector above the cube centre, gripper, ticks to hold after reaching it)
PHASES = [("above", 0.10, 1.0, 15), ("descend", 0.0, 1.0, 15), ("close", 0.0, -1.0, 20), ("lift", 0.18, -1.0, 10_000)]


class ScriptedOperator(DeviceBase):
    """Drives the session's end-effector target to the cube and lifts it, in device-sized steps."""

    def __init__(self, env, target, pos_step: float = POS_STEP, rot_step: float = ROT_STEP):
        super().__init__()
        self.env, self.target = env, target  # target: the session's DeltaPoseAccumulator (read only)
        self.pos_step, self.rot_step = pos_step, rot_step
        self._callbacks: dict[str, Callable] = {}
        self.reset()
        self._started = False

    def reset(self):
        self.phase, self.hold = 0, 0

    def add_callback(self, key, func):
        self._callbacks[key] = func

    def _cube_and_yaw_quat(self):
        from l2.lift import mdp
        from l2.scripted.state_machine import PickAndLiftStateMachine

        cube = mdp.object_pose_in_robot_root_frame(self.env)
        return cube[0, :3], PickAndLiftStateMachine(1, "cpu").grasp_orientation(cube[:, 3:])[0]

    def advance(self) -> torch.Tensor:
        from isaaclab.utils.math import axis_angle_from_quat, quat_inv, quat_mul

        if not self._started:
            self._started = True
            self._callbacks["start"]()
        name, height, gripper, hold_ticks = PHASES[self.phase]
        cube, grasp_quat = self._cube_and_yaw_quat()
        goal = cube + torch.tensor([0.0, 0.0, height])
        if name in ("close", "lift"):
            goal[:2] = self.target.pos[0, :2]  # keep x, y once grasped
        dpos = torch.clamp(goal - self.target.pos[0], -self.pos_step, self.pos_step)
        drot = axis_angle_from_quat(quat_mul(grasp_quat.unsqueeze(0), quat_inv(self.target.quat)))[0]
        drot = drot * min(1.0, self.rot_step / max(float(torch.linalg.vector_norm(drot)), 1e-9))
        if name in ("close", "lift"):
            drot = torch.zeros(3)
        reached = float(torch.linalg.vector_norm(goal - self.target.pos[0])) < 1e-4
        if name == "close" or reached:  # then hold the target while the arm catches up
            self.hold += 1
            if self.hold >= hold_ticks and self.phase + 1 < len(PHASES):
                self.phase, self.hold = self.phase + 1, 0
        return torch.cat([dpos, drot, torch.tensor([gripper])]).to(torch.float32)


def make_trace(
    output: str, seed: int, task: str | None = None, max_ticks: int = 1500, overrides: list[str] | tuple[str, ...] = ()
) -> int:
    from l2.recording import sim
    from l2.recording.handler import configure_recording
    from l2.teleop.run import DEFAULT_TASK
    from l2.teleop.session import TeleopSession
    from l2.teleop.trace import TraceRecorder

    task = task or DEFAULT_TASK
    env_cfg = sim.load_env_cfg(task, "cpu", 1, seed, overrides)
    with tempfile.TemporaryDirectory() as tmp:
        configure_recording(env_cfg, Path(tmp) / "teleop_trace_check.hdf5", task)
        env_cfg.recorders.export_in_close = False
        recorder = TraceRecorder(seed, task, "keyboard", overrides=overrides)
        with sim.make_env(env_cfg, task) as env:
            session = TeleopSession(env, None, num_demos=1, recorder=recorder)
            session.device = ScriptedOperator(env, session.target)
            for event in ("start", "pause", "reset", "quit"):
                session.device.add_callback(event, session.callbacks()[event])
            session.begin_attempt()
            while not session.quit and session.stats.ticks < max_ticks:
                session.tick()
    trace = recorder.trace
    trace.events.append((len(trace.commands), "quit"))
    if session.stats.saved != 1:
        print(f"error: the scripted operator did not lift the cube in {max_ticks} ticks", file=sys.stderr)
        return 1
    trace.save(output)
    print(f"{output}: {len(trace.commands)} ticks, seed {seed}, lifts the cube")
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
        "overrides",
        nargs="*",
        type=override_arg,
        metavar="KEY=VALUE",
        help="cfg overrides and presets of the session, e.g. presets=no_cameras (faster; the trace "
        "replays the same with or without cameras)",
    )
    args = parser.parse_args(argv)
    try:
        return make_trace(args.output, args.seed, overrides=args.overrides)
    except OneLineError as exc:
        cli_args.fail(str(exc))


if __name__ == "__main__":
    sys.exit(main())
