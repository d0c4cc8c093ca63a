"""Record demonstrations of a task by teleoperation (live device or a replayed device trace).

Runs kit-less on the CPU by default (Newton/MuJoCo-Warp). The operator watches through one of Isaac
Lab's kit-less visualizers (``--visualizer newton`` opens an OpenGL window, ``viser`` serves a web
page) and drives with a keyboard read from this terminal, a SpaceMouse (hidapi), or, under Kit, a
gamepad or Isaac Lab's keyboard. An attempt is saved when the task's success term held for
``--num_success_steps`` steps; ``actions`` are the task's own, as its scripted and RL files record them.
Any task whose cfg provides what a session needs (docs/teleop.md) can be driven; one that does not is
refused in one line before the simulator starts.

Examples::

    python l2/teleop/run.py --teleop_device replay --trace config/teleop/lift_cube_trace.json --overwrite
    python l2/teleop/run.py --task L2-Stack-Cube-SO101-Teleop-v0 --teleop_device replay \
        --trace config/teleop/so101_stack_leader_trace.json --output data/demos/teleop_stack_cube_so101.hdf5
    python l2/teleop/run.py --teleop_device keyboard --visualizer newton --record-trace my_session.json
    python l2/teleop/run.py --teleop_device spacemouse --visualizer viser --append
    isaaclab.sh -p l2/teleop/run.py --teleop_device gamepad --visualizer kit --device cuda physics=physx
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from l2.format import cli_args
from l2.recording import cli, sim

DEFAULT_TASK = f"{sim.DEFAULT_TASK}-Teleop"
VISUALIZERS = ("none", "newton", "viser", "rerun", "kit")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from l2.teleop.devices import DEVICES

    parser = cli.runner_parser(__doc__)
    sim.add_sim_args(parser, num_envs=1, task=DEFAULT_TASK)
    cli.add_output_args(parser, source="teleop", num_demos=10, min_demos=0)
    group = parser.add_argument_group("teleoperation")
    group.add_argument(
        "--teleop_device", default="keyboard", choices=DEVICES, help="input device (default: %(default)s)"
    )
    group.add_argument(
        "--trace",
        type=cli_args.existing_file,
        default=None,
        help="device-input trace to play with --teleop_device replay",
    )
    group.add_argument(
        "--record-trace",
        "--record_trace",
        dest="record_trace",
        type=cli_args.output_file,
        default=None,
        help="write this session's device inputs and control events to a trace (JSON)",
    )
    group.add_argument(
        "--num_success_steps",
        type=cli_args.positive_int,
        default=10,
        help="consecutive steps the success term must hold before an attempt is saved (default: %(default)s)",
    )
    group.add_argument(
        "--step_hz",
        type=cli_args.positive_float,
        default=None,
        help="session ticks per second (default: the control rate for live devices, unthrottled for replay)",
    )
    group.add_argument(
        "--sensitivity",
        type=cli_args.positive_float,
        default=1.0,
        help="scale of the device steps (default: %(default)s)",
    )
    group.add_argument(
        "--visualizer",
        default="none",
        choices=VISUALIZERS,
        help="viewer: newton (OpenGL window), viser (web page), rerun: kit-less; kit: Isaac Sim's window "
        "(needs Isaac Sim; gives Isaac Lab's Se3Keyboard and Se3Gamepad) (default: %(default)s)",
    )
    group.add_argument(
        "--viewer_port",
        type=cli_args.port,
        default=8080,
        help="port of the viser web page, http://localhost:PORT (default: %(default)s)",
    )
    group.add_argument(
        "--log_actions",
        type=cli_args.output_file,
        default=None,
        help="also save every action sent to the env (.npz)",
    )
    args = parser.parse_args(argv)
    cli.fill_output(args)
    if args.num_envs != 1:
        parser.error("teleoperation drives one env (--num_envs 1)")
    if (args.teleop_device == "replay") != (args.trace is not None):
        parser.error("--trace goes with --teleop_device replay, and replay needs --trace")
    if args.teleop_device == "replay" and args.record_trace:
        parser.error("--record-trace records live sessions; a replay already has its trace")
    return args


def _visualizer_cfg(name: str, port: int):
    from l2.teleop.viewer import VIEW_EYE, VIEW_LOOKAT

    if name == "newton":
        from isaaclab_visualizers.newton import NewtonGLVisualizerCfg

        return NewtonGLVisualizerCfg(eye=VIEW_EYE, lookat=VIEW_LOOKAT)
    if name == "viser":
        from isaaclab_visualizers.viser import ViserVisualizerCfg

        return ViserVisualizerCfg(port=port, eye=VIEW_EYE, lookat=VIEW_LOOKAT)
    if name == "rerun":
        from isaaclab_visualizers.rerun import RerunVisualizerCfg

        return RerunVisualizerCfg(eye=VIEW_EYE, lookat=VIEW_LOOKAT)
    return None


def print_controls(device_name: str, device, extras) -> None:
    from l2.teleop.devices import CONTROLS, TERMINAL_CONTROLS

    c = CONTROLS[device_name]
    terminal = TERMINAL_CONTROLS if extras and device_name not in ("keyboard", "replay") else None

    def pick(mine, theirs):
        both = [x for x in (mine, theirs) if x]
        return " / terminal ".join(both) if both else "-"

    print(f"\n{device}\n  controls ({device_name}):")
    print(f"    start/pause        {pick(c.start_pause, terminal and terminal.start_pause)}")
    print(f"    reset + discard    {pick(c.reset, terminal and terminal.reset)}")
    print(
        f"    quit               {pick(c.quit, terminal and terminal.quit)}  (Ctrl-C also quits, keeping saved demos)"
    )
    print(f"    motion             {c.motion}\n", flush=True)


def collect(args: argparse.Namespace) -> int:
    import numpy as np

    from l2.recording.handler import dataset_handler
    from l2.teleop.devices import CONTROLS, create_device
    from l2.teleop.requirements import TeleopTaskError, check_teleop_task, take_success_term
    from l2.teleop.session import TeleopSession
    from l2.teleop.trace import TraceRecorder, load_trace, scene_presets
    from l2.teleop.viewer import frame_workspace, show_instruction

    trace = None
    if args.trace:
        try:
            trace = load_trace(args.trace)
        except (OSError, ValueError) as exc:
            cli.fail(str(exc))
        if trace.seed is not None and trace.seed != args.seed:
            print(f"replay: using the trace's seed {trace.seed} (the cube poses depend on it)")
            args.seed = trace.seed
        missing = [p for p in trace.presets if p not in scene_presets(args.overrides)]
        if missing:  # the scene the commands were given in (e.g. presets=variety)
            print(f"replay: using the trace's presets {','.join(missing)}")
            args.overrides = [*args.overrides, f"presets={','.join(missing)}"]
    env_cfg = sim.load_env_cfg(args.task, args.device, 1, args.seed, args.overrides)
    control = trace.control if trace else ("absolute" if args.teleop_device == "xr" else "delta")
    given_by = f"the trace {args.trace}" if trace else f"--teleop_device {args.teleop_device}"
    check_teleop_task(env_cfg, args.task, control, given_by, trace.command_dim if trace else None)
    take_success_term(env_cfg)
    output = cli.record_to(env_cfg, args)
    env_cfg.recorders.export_in_close = False  # an unfinished attempt is never written on exit
    viz = _visualizer_cfg(args.visualizer, args.viewer_port)
    if viz is not None:
        env_cfg.sim.visualizer_cfgs = [viz]
    launcher_args = {"headless": False, "visualizer": ["kit"]} if args.visualizer == "kit" else {}
    output.parent.mkdir(parents=True, exist_ok=True)

    log: list = []
    recorder = (
        TraceRecorder(args.seed, args.task, args.teleop_device, control, args.overrides) if args.record_trace else None
    )
    stats = already = None
    extras = []
    try:
        with sim.make_env(env_cfg, args.task, **launcher_args) as env:
            already = dataset_handler(env).get_num_episodes()
            if control == "joint" and trace.command_dim != env.action_manager.total_action_dim:
                raise TeleopTaskError(
                    f"{args.task} takes {env.action_manager.total_action_dim} joint positions, {given_by} gives "
                    f"{trace.command_dim}"
                )
            frame_workspace(env)
            step_hz = args.step_hz if args.step_hz is not None else (None if trace else 1.0 / env.step_dt)
            session = TeleopSession(
                env,
                None,
                num_success_steps=args.num_success_steps,
                num_demos=args.num_demos,
                control=control,
                step_hz=step_hz,
                recorder=recorder,
                render=args.visualizer != "none",
                on_action=(lambda a: log.append(a.cpu().numpy().copy())) if args.log_actions else None,
                on_instruction=(lambda text: show_instruction(env, text)) if args.visualizer == "viser" else None,
            )
            device, extras = create_device(
                args.teleop_device, session.callbacks(), env.device, args.sensitivity, trace=trace, env_cfg=env_cfg
            )
            session.device = device
            # Devices without a start control start running; the others wait for "start".
            session.running = CONTROLS[args.teleop_device].start_pause is None and not extras
            print_controls(args.teleop_device, device, extras)
            if already:
                print(f"appending to {output}: it holds {already} demos, the next is demo_{already}")

            def on_stop(request: cli.StopRequest) -> None:  # the first Ctrl-C: stop after this tick
                print(f"\ninterrupted ({request.name}): closing (saved demos are kept; again to abort now)", flush=True)
                session.request_quit()

            enter = getattr(device, "__enter__", None)  # IsaacTeleopDevice is a context manager
            if enter is not None:
                enter()
            try:
                with cli.stop_on_signals(on_stop):
                    stats = session.run()
            finally:
                if enter is not None:
                    device.__exit__(None, None, None)
    except KeyboardInterrupt:
        print("aborted", file=sys.stderr)
    finally:
        for extra in extras:
            extra.close()
        if recorder is not None:
            recorder.trace.save(args.record_trace)
            print(f"trace: {args.record_trace} ({len(recorder.trace.commands)} ticks)")
        if args.log_actions:
            np.savez_compressed(args.log_actions, actions=np.concatenate(log) if log else np.zeros((0, 8)))

    if stats is None:
        return 130
    rows = [
        ("demos saved", f"{stats.saved}" + (f" (file now holds {already + stats.saved})" if already else "")),
        (
            "attempts discarded",
            f"{stats.discarded}" + (f", {stats.dropped} ended by the task" if stats.dropped else ""),
        ),
        ("env steps", f"{stats.steps} in {stats.seconds:.1f} s ({stats.steps / max(stats.seconds, 1e-9):.1f} steps/s)"),
        ("file", str(output)),
        ("failed attempts", str(output.with_name(output.stem + "_failed.hdf5")) if args.keep_failed else "not kept"),
    ]
    cli.write_stats(
        args,
        demos=stats.saved,
        attempts=stats.saved + stats.discarded + stats.dropped,
        successes=stats.saved,
        frames=stats.steps,
        seconds=stats.seconds,
    )
    ok = True
    if output.exists():
        ok, verdict = cli.validator_verdict(output)
        rows.append(("validator", verdict))
    cli.print_summary(rows)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    return cli.run_reporting_errors(collect, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
