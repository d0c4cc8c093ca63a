"""Replay verification: do a file's demos still lift the cube when their recorded actions are replayed?
Rebuilds the task named in the file's ``env_args`` (cameras off), resets each env to a demo's
``initial_state``, applies the demo's recorded ``actions`` step by step and reports per demo whether
the task's ``success`` term fires, how far the cube ends from its recorded position, and how far the
arm strays from its recorded path (joints, and the end effector to first order). Several demos run at
once, one per env. Exit status 1 when fewer than ``--min-rate`` of the recorded successes reproduce.

Files of the RL variant (relative joint targets) hold the IK-absolute equivalent of the policy's
actions as ``actions``; they are replayed in the IK-absolute base task. What is compared and why:
``docs/replay.md``.

Examples::

    python -m l2.replay data/demos/scripted_lift_cube.hdf5
    python -m l2.replay data/demos/rl_lift_cube.hdf5 --episodes 0,3 --num_envs 2
    python -m l2.replay data/demos/teleop_lift_cube.hdf5 --min-rate 1.0
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np

from l2.format import cli_args, schema
from l2.recording import cli, sim

if TYPE_CHECKING:
    import torch
    from isaaclab.envs import ManagerBasedRLEnv, ManagerBasedRLEnvCfg
    from isaaclab.managers import TerminationTermCfg

INITIAL_STATE = "initial_state"
DEFAULT_MIN_RATE = 0.95
DEFAULT_HOLD_STEPS = 10
"""0.2 s at 50 Hz: how long a replay may hold a demo's last action for its success to fire."""


class ReplayError(ValueError):
    """A file that cannot be replayed, in one line naming the file and HDF5 path."""


@dataclass
class Demo:
    """What a replay needs of one recorded demo."""

    name: str
    actions: np.ndarray
    """(T, 8) IK-absolute actions, applied one per step."""
    initial_state: dict
    """``initial_state`` as Isaac Lab's ``InteractiveScene.get_state(is_relative=True)`` gives it, batch of 1."""
    success: bool
    joint_pos: np.ndarray | None
    """(T, J) recorded ``obs/joint_pos`` (before each action), when the file has it."""
    object_position: np.ndarray | None
    """(T, 3) recorded ``obs/object_position`` (cube in the robot root frame, before each action)."""
    scene: dict | None = None
    """The values ``presets=variety`` drew for the demo (its ``scene`` attribute), applied again at its start."""
    cameras: dict[str, tuple[str, str, tuple[int, ...]]] | None = None
    """For a replay that compares images: per camera, where its recorded frames are (file, dataset) and their
    shape; :meth:`read_frames` reads them when the demo's replay starts (not all demos' at once)."""

    def read_frames(self) -> dict[str, np.ndarray]:
        out = {}
        for camera, (file, dataset, _) in (self.cameras or {}).items():
            with h5py.File(file, "r") as f:
                out[camera] = f[dataset][()]
        return out


@dataclass
class DemoReplay:
    """The outcome of replaying one demo. Distances in m, joint deviations in rad (m for the fingers)."""

    name: str
    steps: int
    recorded_success: bool
    success_step: int | None
    """First step (1-based) after which the ``success`` term fired; None when it never did. Past ``steps``
    when it fired only while the env held the demo's last action (``hold_steps``)."""
    cube_error_final: float | None
    """Cube position at the last recorded sample (before the last action) vs. the recording."""
    cube_error_mean: float | None
    cube_error_max: float | None
    joint_deviation_max: float | None
    ee_deviation_max: float | None
    """End-effector deviation ``|J_v (q_recorded - q)|`` (arm joints), the largest over the demo."""
    psnr: dict[str, tuple[float, float]] | None = None
    """Per camera, ``(min, mean)`` PSNR (dB) of the replayed frames against the recorded ones (``images``)."""

    @property
    def reproduced(self) -> bool:
        return self.success_step is not None

    def line(self) -> str:
        def mm(value: float | None) -> str:
            return "n/a" if value is None else f"{value * 1000:.2f} mm"

        outcome = f"success at step {self.success_step}/{self.steps}" if self.reproduced else "NO success"
        if self.reproduced and self.success_step > self.steps:
            outcome += " (after the demo's end, holding its last action)"
        if not self.recorded_success:
            outcome += " (recorded as a failure)"
        elif not self.reproduced:
            outcome += " (recorded as a success)"
        joints = "n/a" if self.joint_deviation_max is None else f"{self.joint_deviation_max:.4f} rad"
        images = "".join(
            f"; {c} PSNR min {lo:.1f} dB, mean {mean:.1f} dB" for c, (lo, mean) in (self.psnr or {}).items()
        )
        return (
            f"{self.name:>9}  {outcome}; cube final {mm(self.cube_error_final)} (mean {mm(self.cube_error_mean)},"
            f" max {mm(self.cube_error_max)}); ee max {mm(self.ee_deviation_max)}; joints max {joints}{images}"
        )


# ------------------------------------------------------------------------------------------ reading
def _read_group(group: h5py.Group) -> dict:
    return {k: _read_group(v) if isinstance(v, h5py.Group) else v[()] for k, v in group.items()}


def read_demos(
    path: str | Path, episodes: Sequence[int] | None = None, images: bool = False
) -> tuple[str, str, list[Demo]]:
    """``(env_name, task to replay in, demos)`` of an L2 file (see :func:`replay_task`); only what a replay
    needs is read (camera frames only with ``images``).

    Raises :class:`ReplayError` for a file that does not validate, of another task, or lacking what a
    replay needs.
    """
    from l2.format.l2file import L2File
    from l2.format.validate import validate_file

    path = str(path)
    report = validate_file(path)
    if not report.ok:
        raise ReplayError(str(report.violations[0]))
    with L2File(path, guard=False) as f:  # validate_file read it through
        data = f.data
        env_name = f.env_name
        if not env_name:
            raise ReplayError(f"{path}:/{schema.DATA_GROUP}: env_args names no env_name: nothing to rebuild")
        task = replay_task(env_name, path)
        names = f.demos
        if episodes is not None:
            missing = [i for i in episodes if schema.demo_name(i) not in data]
            if missing:
                raise ReplayError(
                    f"{path}:/{schema.DATA_GROUP}/{schema.demo_name(missing[0])}: no such demo "
                    f"(the file has {len(names)})"
                )
            names = [schema.demo_name(i) for i in episodes]
        demos = []
        for name in names:
            group = data[name]
            if INITIAL_STATE not in group:
                raise ReplayError(
                    f"{path}:/{schema.DATA_GROUP}/{name}/{INITIAL_STATE}: missing, the demo cannot be "
                    "put back in its initial state"
                )
            obs = group.get(schema.OBS, {})
            demos.append(
                Demo(
                    name=name,
                    actions=group[schema.ACTIONS][()],
                    initial_state=_read_group(group[INITIAL_STATE]),
                    success=bool(group.attrs.get(schema.ATTR_SUCCESS, False)),
                    joint_pos=obs["joint_pos"][()] if "joint_pos" in obs else None,
                    object_position=obs["object_position"][()] if "object_position" in obs else None,
                    scene=json.loads(group.attrs[schema.ATTR_SCENE]) if schema.ATTR_SCENE in group.attrs else None,
                    cameras={c: (path, obs[c].name, obs[c].shape) for c in obs if _is_image(obs[c])}
                    if images
                    else None,
                )
            )
    return env_name, task, demos


def _is_image(node) -> bool:
    """Whether an ``obs/<term>`` node holds camera frames: ``(T, H, W, 3)`` uint8."""
    return isinstance(node, h5py.Dataset) and node.ndim == 4 and node.shape[-1] == 3 and node.dtype == np.uint8


# ------------------------------------------------------------------------------------------- the env
def replay_task(env_name: str, path: str | Path = "") -> str:
    """The gym id to replay a file of ``env_name`` in: that task, whose action the file records, except for an RL
    variant, whose files hold what its robot's other sources record as ``actions`` (the IK-absolute pose on the
    Franka, the joint targets on the SO-101): the task its registration names as ``demo_task``.

    Raises :class:`ReplayError` for a task that is not registered."""
    import gymnasium as gym

    from l2.recording import sim

    sim.register_tasks()
    spec = gym.registry.get(env_name)
    if spec is None or not spec.kwargs.get("env_cfg_entry_point"):
        raise ReplayError(
            f"{path}:/{schema.DATA_GROUP}: env_args env_name {env_name!r} is no registered Isaac Lab task: cannot "
            f"rebuild its env (a task of your own: name its package in {sim.TASK_MODULES})"
        )
    return spec.kwargs.get("demo_task", env_name)


def replay_env_cfg(
    task: str, device: str, num_envs: int, overrides: Sequence[str] = (), cameras: bool = False
) -> tuple[ManagerBasedRLEnvCfg, TerminationTermCfg]:
    """The task's cfg for replay, and its ``success`` term: cameras off (unless ``cameras``), and no
    termination, so that no env is reset in the middle of a demo; the replay evaluates ``success`` itself after
    every step, as the teleop variant does."""
    from l2.lift.camera_cfg import NO_CAMERAS
    from l2.recording import sim

    presets = [] if cameras else [f"presets={NO_CAMERAS}"]
    env_cfg = sim.load_env_cfg(task, device, num_envs, seed=None, overrides=[*presets, *overrides])
    success = getattr(env_cfg, "success_term", None) or env_cfg.terminations.success
    for name in list(vars(env_cfg.terminations)):
        setattr(env_cfg.terminations, name, None)
    return env_cfg, success


def _policy_term(env: ManagerBasedRLEnv, name: str):
    """The cfg of the ``policy`` group's term ``name`` (its function and parameters resolved), or None."""
    manager = env.observation_manager
    names = manager.active_terms.get("policy", [])
    return manager._group_obs_term_cfgs["policy"][names.index(name)] if name in names else None


def _stack_states(states: list[dict], to_tensor: Callable[[np.ndarray], torch.Tensor]) -> dict:
    first = states[0]
    if isinstance(first, dict):
        return {k: _stack_states([s[k] for s in states], to_tensor) for k in first}
    return to_tensor(np.concatenate(states, axis=0))


class DemoReplayer:
    """Replays demos in an env built by :func:`replay_env_cfg`, one demo per env at a time.

    A demo whose ``success`` has not fired by its last action is given up to ``hold_steps`` more steps
    holding that action (see ``docs/replay.md``: recorded demos end on the very step their success
    fired, and a replay in another env of the scene can be a step late). Envs whose demo has ended hold
    its last action until the next demo is put in them; the others are unaffected (MuJoCo-Warp steps
    every env's world on its own)."""

    def __init__(self, env: ManagerBasedRLEnv, success_term: TerminationTermCfg, hold_steps: int = 0):
        from isaaclab.managers import SceneEntityCfg

        from l2.recording.task_space import shadow_ik_term

        self.env = env
        self.success_term = success_term
        self.hold_steps = hold_steps
        for value in success_term.params.values():
            if isinstance(value, SceneEntityCfg):
                value.resolve(env.scene)
        self._ik = shadow_ik_term(env)  # the end effector's Jacobian, for its deviation from the recorded path
        self._joint_pos = _policy_term(env, "joint_pos")  # what obs/joint_pos records (absolute, or relative)
        self._has_object = "object" in env.scene.rigid_objects
        self.seconds = 0.0
        """Wall time of the last :meth:`replay` (env building excluded)."""
        self.env_steps = 0
        """Env steps of the last :meth:`replay` (demo steps, idle envs not counted)."""

    def replay(self, demos: Sequence[Demo], on_done: Callable[[DemoReplay], None] | None = None) -> list[DemoReplay]:
        import torch
        from isaaclab_tasks.contrib.lift.mdp import object_position_in_robot_root_frame

        from l2.recording.camera_frames import camera_images

        env, n = self.env, self.env.num_envs
        robot, arm_ids = self._ik._asset, self._ik._joint_ids
        pending = collections.deque(range(len(demos)))
        slot = [-1] * n  # demo index running in each env
        step = [0] * n
        errors: list[dict[str, list[float]]] = [{} for _ in range(n)]
        first_success: list[int | None] = [None] * n
        psnr: list[dict[str, list[float]]] = [{} for _ in range(n)]
        recorded: list[dict[str, np.ndarray]] = [{} for _ in range(n)]  # the running demo's frames (--images)
        results: list[DemoReplay | None] = [None] * len(demos)
        actions = torch.zeros(n, demos[0].actions.shape[1] if demos else 8, device=env.device)
        clock, self.env_steps = time.perf_counter(), 0

        def start(env_ids: Sequence[int]) -> None:
            started = []
            for e in env_ids:
                slot[e] = pending.popleft() if pending else -1
                if slot[e] >= 0:
                    step[e], errors[e], first_success[e] = 0, collections.defaultdict(list), None
                    psnr[e] = collections.defaultdict(list)
                    recorded[e] = demos[slot[e]].read_frames()
                    started.append(e)
            if started:
                state = _stack_states(
                    [demos[slot[e]].initial_state for e in started], lambda a: torch.from_numpy(a).to(env.device)
                )
                env.reset_to(state, env_ids=torch.tensor(started, device=env.device), is_relative=True)
                from l2.lift import variety

                scene = variety.scene_term(env)  # the reset drew a new scene: put the demo's back
                if scene is not None:
                    scene.apply(env, started, [demos[slot[e]].scene for e in started])

        env.reset()
        start(range(n))
        while any(s >= 0 for s in slot):
            active = [e for e in range(n) if slot[e] >= 0]
            q = self._joint_pos.func(env, **self._joint_pos.params) if self._joint_pos else robot.data.joint_pos.torch
            q = q.cpu().numpy()
            cube = object_position_in_robot_root_frame(env).cpu().numpy() if self._has_object else None
            jac_v = self._ik._compute_frame_jacobian()[:, :3].cpu().numpy()
            for e in active:
                demo, t = demos[slot[e]], step[e]
                if t >= len(demo.actions):  # holding the last action (hold_steps): nothing recorded to compare
                    continue
                if demo.object_position is not None and cube is not None:
                    errors[e]["cube"].append(float(np.linalg.norm(cube[e] - demo.object_position[t])))
                if demo.joint_pos is not None:
                    dq = demo.joint_pos[t] - q[e]
                    errors[e]["joints"].append(float(np.abs(dq).max()))
                    errors[e]["ee"].append(float(np.linalg.norm(jac_v[e] @ dq[arm_ids])))
                actions[e] = torch.from_numpy(demo.actions[t])
            env.step(actions)
            self.env_steps += len(active)
            success = self.success_term.func(env, **self.success_term.params).cpu().numpy()
            images = camera_images(env) if any(recorded[e] for e in active) else {}
            ended = []
            for e in active:
                step[e] += 1
                for camera, frames in recorded[e].items():  # obs after step t = frame t + 1
                    if step[e] < len(frames) and camera in images:
                        psnr[e][camera].append(image_psnr(images[camera][e].cpu().numpy(), frames[step[e]]))
                if success[e] and first_success[e] is None:
                    first_success[e] = step[e]
                length = len(demos[slot[e]].actions)
                if step[e] >= length and (first_success[e] is not None or step[e] >= length + self.hold_steps):
                    results[slot[e]] = self._result(demos[slot[e]], first_success[e], errors[e], psnr[e])
                    if on_done is not None:
                        on_done(results[slot[e]])
                    ended.append(e)
            start(ended)
        self.seconds = time.perf_counter() - clock
        return results

    @staticmethod
    def _result(
        demo: Demo, success_step: int | None, errors: dict[str, list[float]], psnr: dict[str, list[float]]
    ) -> DemoReplay:
        def stat(key: str, fn) -> float | None:
            return float(fn(errors[key])) if errors.get(key) else None

        return DemoReplay(
            name=demo.name,
            steps=len(demo.actions),
            recorded_success=demo.success,
            success_step=success_step,
            cube_error_final=stat("cube", lambda v: v[-1]),
            cube_error_mean=stat("cube", np.mean),
            cube_error_max=stat("cube", np.max),
            joint_deviation_max=stat("joints", np.max),
            ee_deviation_max=stat("ee", np.max),
            psnr={c: (float(min(v)), float(np.mean(v))) for c, v in psnr.items() if v} or None,
        )


def _psnr_rows(results: Sequence[DemoReplay]) -> list[tuple[str, str]]:
    """Summary rows of an ``--images`` replay: per camera, the lowest frame's PSNR and the median of the demos'
    mean PSNRs."""
    rows = []
    for camera in dict.fromkeys(c for r in results for c in (r.psnr or {})):
        lows, means = zip(*(r.psnr[camera] for r in results if r.psnr and camera in r.psnr), strict=True)
        rows.append(
            (f"{camera} PSNR", f"lowest frame {min(lows):.1f} dB, median of demo means {np.median(means):.1f} dB")
        )
    return rows


def image_psnr(a: np.ndarray, b: np.ndarray) -> float:
    """PSNR (dB) of two uint8 images (99 dB for identical ones)."""
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else min(99.0, 10 * np.log10(255.0**2 / mse))


def replay_demos(
    demos: Sequence[Demo],
    task: str,
    device: str = "cpu",
    num_envs: int = 1,
    overrides: Sequence[str] = (),
    on_done: Callable[[DemoReplay], None] | None = None,
    hold_steps: int = 0,
) -> tuple[list[DemoReplay], DemoReplayer]:
    """Build the replay env of ``task`` (see :func:`replay_task`) with at most ``num_envs`` envs and replay
    ``demos`` in it; the results, in the order of ``demos``, and the replayer (its timing)."""
    from l2.lift.variety import VARIETY
    from l2.recording import sim

    if any(d.scene is not None for d in demos):  # recorded with presets=variety: the same scene to replay in
        if not all(d.scene is not None for d in demos):
            raise ReplayError("the demos to replay mix presets=variety scenes and plain ones: replay them apart")
        overrides = [*overrides, f"presets={VARIETY}"]
    cameras = next((d.cameras for d in demos if d.cameras), None)
    if cameras:  # the cameras rendered at the recorded size
        overrides = [
            *overrides,
            *(
                f"env.scene.{c}.{k}={v}"
                for c, (_, _, shape) in cameras.items()
                for k, v in (("height", shape[1]), ("width", shape[2]))
            ),
        ]
    env_cfg, success = replay_env_cfg(task, device, max(1, min(num_envs, len(demos))), overrides, cameras=bool(cameras))
    with sim.make_env(env_cfg, task) as env:
        replayer = DemoReplayer(env, success, hold_steps)
        return replayer.replay(demos, on_done), replayer


# ---------------------------------------------------------------------------------------------- CLI
def _episodes(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of demo indices: {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of demo indices: {text!r}")
    return values


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = cli.runner_parser(__doc__, "python -m l2.replay")
    parser.add_argument("file", type=cli_args.existing_file, help="L2 HDF5 file (scripted, teleop or RL demos)")
    parser.add_argument(
        "--episodes",
        type=_episodes,
        default=None,
        metavar="I,J,...",
        help="demo indices to replay, e.g. 0,3,7 (default: every demo)",
    )
    parser.add_argument(
        "--min-rate",
        type=cli_args.fraction,
        default=DEFAULT_MIN_RATE,
        help="exit 1 when fewer than this share of the recorded successes reproduce (default: %(default)s)",
    )
    parser.add_argument(
        "--hold-steps",
        type=cli_args.non_negative_int,
        default=DEFAULT_HOLD_STEPS,
        help="steps a demo's last action is held when its success has not fired by then: a demo "
        "ends on the step its success fired, which a replay can reach a step late "
        "(default: %(default)s; 0: strict)",
    )
    group = parser.add_argument_group("simulation")
    group.add_argument(
        "--num_envs",
        type=cli_args.positive_int,
        default=4,
        help="demos replayed at once, one per env (default: %(default)s)",
    )
    group.add_argument(
        "--device", type=sim.device_arg, default="cpu", help="cpu, cuda or cuda:N (default: %(default)s)"
    )
    group.add_argument(
        "overrides",
        nargs="*",
        type=sim.override_arg,
        metavar="KEY=VALUE",
        help="Isaac Lab cfg overrides and presets (presets=no_cameras is added unless --images)",
    )
    parser.add_argument(
        "--images",
        action="store_true",
        help="also render the cameras and compare every replayed frame with the recorded one (PSNR)",
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    try:
        env_name, task, demos = read_demos(args.file, args.episodes, images=args.images)
    except ReplayError as exc:
        cli.fail(str(exc))
    if not demos:
        cli.fail(f"{args.file}:/{schema.DATA_GROUP}: no demos to replay")
    print(
        f"replaying {len(demos)} demo(s) of {env_name} in {task} ({args.device}, "
        f"{min(args.num_envs, len(demos))} envs)",
        flush=True,
    )
    start = time.perf_counter()
    with tqdm(total=len(demos), unit="demo", desc="replay", dynamic_ncols=True, mininterval=0.5) as bar:

        def done(result: DemoReplay) -> None:
            bar.write(result.line())
            bar.update(1)

        results, replayer = replay_demos(demos, task, args.device, args.num_envs, args.overrides, done, args.hold_steps)
    seconds = time.perf_counter() - start
    recorded = [r for r in results if r.recorded_success]
    reproduced = sum(r.reproduced for r in recorded)
    late = sum(r.reproduced and r.success_step > r.steps for r in recorded)
    rate = reproduced / len(recorded) if recorded else None
    worst = [r.cube_error_final for r in recorded if r.cube_error_final is not None]
    ee = [r.ee_deviation_max for r in recorded if r.ee_deviation_max is not None]
    cli.print_summary(
        [
            (
                "reproduced",
                f"{reproduced}/{len(recorded)} recorded successes"
                + (f" ({100 * rate:.1f} %, minimum {100 * args.min_rate:.0f} %)" if recorded else "")
                + (f"; {late} of them only after the demo's end (--hold-steps {args.hold_steps})" if late else ""),
            ),
            (
                "failures replayed",
                f"{sum(r.reproduced for r in results if not r.recorded_success)}/{len(results) - len(recorded)} lifted",
            ),
            (
                "cube final error",
                f"median {1000 * np.median(worst):.1f} mm, max {1000 * max(worst):.1f} mm"
                if worst
                else "n/a (no obs/object_position)",
            ),
            (
                "ee deviation",
                f"median of maxima {1000 * np.median(ee):.1f} mm, max {1000 * max(ee):.1f} mm"
                if ee
                else "n/a (no obs/joint_pos)",
            ),
            *_psnr_rows(results),
            ("file", f"{args.file} ({env_name}, replayed in {task})"),
            (
                "wall time",
                f"{seconds:.1f} s: env built in {seconds - replayer.seconds:.1f} s, replay "
                f"{replayer.seconds:.1f} s ({replayer.env_steps / max(replayer.seconds, 1e-9):.1f} env-steps/s, "
                f"{min(args.num_envs, len(demos))} envs, {args.device})",
            ),
        ]
    )
    if rate is not None and rate < args.min_rate:
        print(
            f"error: {reproduced}/{len(recorded)} recorded successes reproduced, below --min-rate {args.min_rate}",
            file=sys.stderr,
        )
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    return cli.run_reporting_errors(run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
