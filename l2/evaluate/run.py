"""One evaluation in this process: everything that can be refused is refused before the simulator starts, then
the env, the actor, the episode loop and the report (and the recorded rollouts, with ``--record``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from l2.evaluate.actors import RslRlActor, ServedActor, connect
from l2.evaluate.episodes import Evaluator, run_with_progress
from l2.evaluate.spec import DEFAULT_EPISODES, POLICY_SOURCE, EvaluationError
from l2.evaluate.videos import VideoSink
from l2.format import schema
from l2.policy.report import EvaluationReport, rate_text
from l2.recording import cli, sim

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv

    from l2.replay import Demo


def _read_demos(path: str):
    from l2.replay import ReplayError, read_demos

    try:
        return read_demos(path)
    except ReplayError as exc:
        raise EvaluationError(str(exc)) from None
    except OSError as exc:
        raise EvaluationError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _check_initial_states(env: ManagerBasedRLEnv, demos: list[Demo], path: str, task: str) -> None:
    """Refuse demos whose initial state does not name the scene entities of ``task`` (a file of another task)."""
    want = env.scene.get_state(is_relative=True)
    have = demos[0].initial_state
    for kind, entities in want.items():
        for name, state in entities.items():
            got = have.get(kind, {}).get(name)
            if got is None:
                raise EvaluationError(
                    f"{path}:/{schema.DATA_GROUP}/{demos[0].name}/initial_state: has no "
                    f"{kind}/{name}, which {task} resets (a file of another task?)"
                )
            for key, value in state.items():
                if key in got and tuple(got[key].shape[1:]) != tuple(value.shape[1:]):
                    raise EvaluationError(
                        f"{path}:/{schema.DATA_GROUP}/{demos[0].name}/initial_state/{kind}/{name}/"
                        f"{key}: shape {got[key].shape[1:]}, {task} has {tuple(value.shape[1:])}"
                    )


def _with_presets(overrides: list[str], needs_cameras: bool) -> list[str]:
    from l2.lift.camera_cfg import NO_CAMERAS

    return list(overrides) if needs_cameras else [f"presets={NO_CAMERAS}", *overrides]


def evaluate(args: argparse.Namespace) -> int:
    spec = args.policy
    report = EvaluationReport(policy=str(spec), task="", num_envs=0, seed=args.seed, device=args.device)
    demos = None
    if args.reset_from:
        env_name, replay_task, demos = _read_demos(args.reset_from)
        if not demos:
            raise EvaluationError(f"{args.reset_from}:/{schema.DATA_GROUP}: no demos to start episodes from")
        report.reset_from = args.reset_from
    episodes = args.episodes or (len(demos) if demos is not None else DEFAULT_EPISODES)
    if demos is not None and args.first_episode + episodes > len(demos):
        raise EvaluationError(f"--episodes {episodes}: {args.reset_from} holds {len(demos)} demos to start from")
    if spec.kind == "rsl_rl":
        from l2.rl.train import DEFAULT_TASK as RL_TASK

        task = args.task or RL_TASK
    else:
        task = args.task or (replay_task if demos is not None else sim.DEFAULT_TASK)
    num_envs = max(1, min(args.num_envs, episodes))
    report.task, report.num_envs, report.episodes_requested = task, num_envs, episodes

    # Everything that can be refused is refused before the simulator starts (5-25 s on a CPU).
    adapter = client = checkpoint = None
    if spec.served:
        from l2.policy.modality import ModalityAdapter
        from l3.config_file import load_mapping
        from l3.errors import ConfigError

        try:
            mapping = load_mapping(args.config)
        except ConfigError as exc:
            raise EvaluationError(str(exc)) from None
        report.config = str(args.config)
        adapter = ModalityAdapter(mapping, where=str(args.config))
        client = connect(spec, args, mapping, str(args.config))
    else:
        from l2.rl import checkpoint as ckpt

        try:
            checkpoint = ckpt.load(spec.target, args.device)
        except ckpt.LayoutError as exc:
            raise EvaluationError(str(exc)) from None
    needs_cameras = bool(args.videos or args.record or (adapter is not None and adapter.mapping.cameras))
    env_cfg = sim.load_env_cfg(task, args.device, num_envs, args.seed, _with_presets(args.overrides, needs_cameras))
    if args.record:
        from l2.recording.handler import EpisodeGateRecorderCfg, configure_recording

        recorders = None
        if spec.kind == "rsl_rl":
            from l2.rl.recorders import rl_recorders

            recorders = rl_recorders(env_cfg)
        try:
            output = configure_recording(
                env_cfg,
                args.record,
                task,
                cli.on_exists(args),
                keep_failed=args.keep_failed,
                recorders=recorders,
                source=POLICY_SOURCE,
            )
        except (FileExistsError, ValueError) as exc:
            raise EvaluationError(str(exc)) from None
        env_cfg.recorders.record_evaluation_gate = EpisodeGateRecorderCfg()  # last term: runs after the frames'
        report.record = str(output)

    print(f"evaluating {spec} in {task}: {episodes} episodes, {num_envs} envs ({args.device})", flush=True)
    interrupted = False
    with sim.make_env(env_cfg, task) as env:
        env.reset()
        if demos is not None:
            _check_initial_states(env, demos, args.reset_from, task)
        if adapter is not None:
            from l2.policy.modality import ModalityError

            try:
                adapter.check_action_layout({schema.ACTIONS: env.action_manager.total_action_dim})
            except ModalityError as exc:
                raise EvaluationError(str(exc)) from None
            actor = ServedActor(client, adapter, env.action_manager.total_action_dim, args.one_env_per_request)
        else:
            from l2.rl.checkpoint import LayoutError

            try:
                actor = RslRlActor(env, spec.target, checkpoint, _agent_cfg(task, args))
            except LayoutError as exc:
                raise EvaluationError(str(exc)) from None
        videos = VideoSink(Path(args.videos), args.video_episodes, round(1 / env.step_dt)) if args.videos else None
        evaluator = Evaluator(env, actor, report, args.action_horizon, demos, videos)
        interrupted = run_with_progress(evaluator, episodes, args.first_episode, args.progress_file)
        if videos is not None:
            videos.abort()  # episodes cut short by Ctrl-C
            report.videos = videos.written
        report.requests = actor.requests
    report.interrupted = interrupted
    return finish(args, report)


def _agent_cfg(task: str, args: argparse.Namespace):
    from l2.rl.train import load_agent_cfg

    return load_agent_cfg(task, args.device, args.seed)


def finish(args: argparse.Namespace, report: EvaluationReport) -> int:
    if args.report:
        report.write(args.report)
    rows = report.summary_rows()
    if args.report:
        rows.append(("report", str(args.report)))
    cli.print_summary(rows)
    if report.interrupted:
        return 130
    rate = report.success_rate or 0.0
    if args.min_success is not None and rate < args.min_success:
        print(
            f"error: success rate {rate_text(report.successes, len(report.results))} is below --min-success "
            f"{args.min_success}",
            file=sys.stderr,
        )
        return 1
    return 0
