"""Closed-loop evaluation: run a policy in the lift task, measure its success rate, keep its rollouts.

The policy is an rsl_rl checkpoint run in-process (by default the shipped PPO policy), any server that
speaks Isaac-GR00T's policy-server protocol (a fine-tuned GR00T N1.6 on a GPU machine, or ``python -m
l2.serve``), or the recorded actions of a GR00T LeRobot dataset (``replay:``, served in-process over the
same protocol). A served policy sees the env's obs terms through the mapping config L3 built its training
dataset with (modality keys, columns, quaternion order, cameras, instruction), and its action chunk goes
back to the env's action through the inverse of the same config (docs/evaluate.md).

Episodes run in waves of --num_envs: the envs start their episodes together (one ``reset`` request per
wave) and an env whose episode has ended holds still until the wave is over, so every episode is counted
once, from its first step, whatever its length.

Examples::

    python -m l2.evaluate                                     # the shipped PPO policy, 16 episodes
    python -m l2.evaluate --episodes 64 --num_envs 32 --report outputs/eval/ppo.json --videos outputs/eval
    python -m l2.evaluate --policy server:gpu-box:5555 --episodes 50 --num_envs 10
    python -m l2.evaluate --policy replay:outputs/lift_cube_gr00t --reset-from data/demos/scripted_lift_cube.hdf5
    python -m l2.evaluate --policy rsl_rl:logs/rl/run/model_119.pt --record data/demos/policy_lift_cube.hdf5
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from l2.format import cli_args, schema
from l2.policy.report import EpisodeResult, EvaluationReport, rate_text
from l2.recording import cli, sim
from l2.recording.cli import AUTO, workers_arg
from l2.recording.workers import usable_cores

if TYPE_CHECKING:
    import torch
    from isaaclab.envs import ManagerBasedRLEnv

    from l2.policy.modality import ModalityAdapter
    from l2.policy.protocol import PolicyClient
    from l2.replay import Demo

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = REPO / "config" / "lift_cube.yaml"
DEFAULT_EPISODES = 16
POLICY_SOURCE = "policy"
"""The source tag of recorded evaluation rollouts (``--record``), which L3 tags their episodes with."""
NON_FINITE = "non_finite_action"


class EvaluationError(sim.OneLineError):
    """A problem to report in one line (exit status 2)."""


@dataclass(frozen=True)
class PolicySpec:
    kind: str
    """``rsl_rl``, ``server`` or ``replay``."""
    target: str
    """The checkpoint, ``host:port`` or the dataset folder."""

    @property
    def served(self) -> bool:
        return self.kind in ("server", "replay")

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}"


def parse_policy(text: str | None) -> PolicySpec:
    """``rsl_rl:PATH``, ``server:HOST:PORT`` or ``replay:DATASET``."""
    kind, _, target = text.partition(":")
    if kind not in ("rsl_rl", "server", "replay") or not target:
        raise argparse.ArgumentTypeError(f"--policy {text!r}: expected rsl_rl:PATH, server:HOST:PORT or replay:DATASET")
    try:
        if kind == "server":
            cli_args.host_port(target)
        elif kind == "rsl_rl":
            cli_args.existing_file(target)
        else:
            cli_args.existing_folder(target)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"--policy {text!r}: {exc}") from None
    return PolicySpec(kind, target)


# ------------------------------------------------------------------------------------------ policies
class RslRlActor:
    """An rsl_rl checkpoint's deterministic actor, in-process, one action per step."""

    def __init__(self, env: ManagerBasedRLEnv, path: str, checkpoint: dict, agent_cfg):
        from l2.rl.checkpoint import inference_policy

        self.vec_env, self.policy = inference_policy(env, path, checkpoint, agent_cfg)
        self.clip = agent_cfg.clip_actions
        self.requests = 0

    def reset(self, episodes: list[int] | None, batch: int) -> None:
        pass

    def chunk(self, env: ManagerBasedRLEnv, step: int) -> torch.Tensor:
        import torch

        with torch.inference_mode():
            action = self.policy(self.vec_env.get_observations())
        if self.clip is not None:
            action = torch.clamp(action, -self.clip, self.clip)
        self.requests += 1
        return action[:, None]


def obs_terms(obs_buf: dict) -> dict[str, np.ndarray]:
    """The env's current observation as the L2 file names its terms: ``{"obs/<term>": (num_envs, ...)}``."""
    terms = {}
    for value in obs_buf.values():
        if isinstance(value, dict):
            for term, tensor in value.items():
                terms[f"{schema.OBS}/{term}"] = tensor.detach().cpu().numpy()
    return terms


def _one_item(observation: dict, index: int) -> dict:
    """Batch item ``index`` of a GR00T observation, as a batch of one."""
    return {
        "video": {k: v[index : index + 1] for k, v in observation["video"].items()},
        "state": {k: v[index : index + 1] for k, v in observation["state"].items()},
        "language": {k: v[index : index + 1] for k, v in observation["language"].items()},
    }


class ServedActor:
    """A policy behind the protocol: observations built and actions mapped back by a :class:`ModalityAdapter`."""

    def __init__(self, client: PolicyClient, adapter: ModalityAdapter, action_dim: int, one_env_per_request: bool):
        self.client = client
        self.adapter = adapter
        self.action_dims = {schema.ACTIONS: action_dim}
        self.one_env_per_request = one_env_per_request
        self.episodes: list[int] | None = None
        self.requests = 0

    def reset(self, episodes: list[int] | None, batch: int) -> None:
        self.episodes = episodes
        if not self.one_env_per_request:
            self.client.reset({"episode_index": episodes} if episodes is not None else {})
            self.requests += 1

    def chunk(self, env: ManagerBasedRLEnv, step: int) -> torch.Tensor:
        import torch

        observation = self.adapter.observation(obs_terms(env.obs_buf))
        batch = env.num_envs
        if self.one_env_per_request:
            parts = []
            for e in range(batch):
                if self.episodes is not None:  # a replay server answers one episode at a time: say which, and where
                    self.client.reset({"episode_index": self.episodes[e], "step_index": step})
                    self.requests += 1
                action, _ = self.client.get_action(_one_item(observation, e), {"episode_step": [step]})
                parts.append(self.adapter.env_actions(action, self.action_dims, 1)[schema.ACTIONS])
                self.requests += 1
            chunk = np.concatenate(parts)
        else:
            action, _ = self.client.get_action(observation, {"episode_step": [step] * batch})
            chunk = self.adapter.env_actions(action, self.action_dims, batch)[schema.ACTIONS]
            self.requests += 1
        return torch.from_numpy(chunk).to(env.device)


# ------------------------------------------------------------------------------------------ the loop
class VideoSink:
    """MP4s of the first ``count`` episodes, one per camera: ``DIR/episode_<i>_<camera>.mp4``."""

    def __init__(self, folder: Path, count: int, fps: int):
        from l3.mapping import VideoOptions

        self.folder, self.count, self.fps, self.opts = folder, count, fps, VideoOptions()
        self.open: dict[int, dict] = {}  # env -> {camera: encoder}
        self.written: list[str] = []

    def start(self, env_id: int, episode: int, cameras: list[str]) -> None:
        from l3.video import BackgroundEncoder

        if episode < self.count and cameras:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.open[env_id] = {
                c: BackgroundEncoder(self.folder / f"episode_{episode:03d}_{c}.mp4", self.fps, self.opts)
                for c in cameras
            }

    def add(self, obs_buf: dict, running: list[bool]) -> None:
        images = obs_buf.get("cameras") or {}
        for env_id, encoders in self.open.items():
            if running[env_id]:
                for camera, encoder in encoders.items():
                    encoder.add(images[camera][env_id].cpu().numpy())

    def finish(self, env_id: int, keep: bool = True) -> None:
        for encoder in self.open.pop(env_id, {}).values():
            encoder.close()
            if keep:
                self.written.append(str(encoder.path))
            else:
                encoder.path.unlink(missing_ok=True)

    def abort(self) -> None:
        for env_id in list(self.open):
            self.finish(env_id, keep=False)


class Evaluator:
    """Runs episodes in waves of ``env.num_envs`` and fills ``report`` as they end."""

    def __init__(
        self,
        env: ManagerBasedRLEnv,
        actor,
        report: EvaluationReport,
        action_horizon: int | None = None,
        demos: list[Demo] | None = None,
        videos: VideoSink | None = None,
        on_result=None,
    ):
        from l2.recording.handler import EpisodeGateRecorder

        self.env, self.actor, self.report = env, actor, report
        self.action_horizon = action_horizon
        self.demos = demos
        self.videos = videos
        self.on_result = on_result
        terms = getattr(env.recorder_manager, "_terms", {})
        self.gate = next((t for t in terms.values() if isinstance(t, EpisodeGateRecorder)), None)
        self.cameras = list((env.obs_buf.get("cameras") or {}).keys()) if isinstance(env.obs_buf, dict) else []
        self.stop_requested = False
        """Set from a signal handler: the run stops after the step in progress (the env is never cut mid-step, so
        a recorded file is never left with half an episode)."""

    def run(self, episodes: int, first: int = 0) -> bool:
        """Run the episodes ``first .. first + episodes - 1``; False when :attr:`stop_requested` ended the run
        early."""
        n = self.env.num_envs
        for wave in range(math.ceil(episodes / n)):
            if not self._wave(wave, list(range(first + wave * n, first + min(episodes, (wave + 1) * n)))):
                return False
        return True

    def _count(self, env_ids, value: bool) -> None:
        if self.gate is not None:
            self.gate.counted[env_ids] = value

    def _reset(self, episodes: list[int]) -> None:
        import torch

        from l2.replay import _stack_states

        env = self.env
        self._count(slice(None), False)  # what the envs ran since their counted episode ended is not written
        env.reset()
        if self.demos is not None:
            state = _stack_states(
                [self.demos[i].initial_state for i in episodes], lambda a: torch.from_numpy(a).to(env.device)
            )
            env.reset_to(state, env_ids=torch.arange(len(episodes), device=env.device), is_relative=True)
        self._count(slice(0, len(episodes)), True)

    def _wave(self, wave: int, episodes: list[int]) -> bool:
        import torch

        env, report = self.env, self.report
        n = len(episodes)
        clock = time.perf_counter()
        self._reset(episodes)
        report.sim_seconds += time.perf_counter() - clock
        padded = episodes + [episodes[-1]] * (env.num_envs - n)  # idle envs of a short last wave: any episode
        clock = time.perf_counter()
        self.actor.reset(padded if self.demos is not None else None, env.num_envs)
        report.policy_seconds += time.perf_counter() - clock
        running = [True] * n + [False] * (env.num_envs - n)
        if self.videos is not None:
            for e in range(n):
                self.videos.start(e, episodes[e], self.cameras)
        chunk, k, step = None, 0, 0
        while any(running):
            if self.stop_requested:
                return False
            if chunk is None or k >= self._execute(chunk):
                clock = time.perf_counter()
                chunk, k = self.actor.chunk(env, step), 0
                report.policy_seconds += time.perf_counter() - clock
            action = chunk[:, k].to(env.device, torch.float32)
            k += 1
            hold = env.action_manager.action.clone()  # the last action each env took (always finite)
            finite = torch.isfinite(action).all(dim=-1).cpu().tolist()
            broken = [e for e in range(n) if running[e] and not finite[e]]
            if broken:  # that episode ends as a failure, now (written to --keep-failed's file like any failure)
                for e in broken:
                    self._end(wave, e, episodes[e], step, success=False, termination=NON_FINITE, running=running)
                env.reset(env_ids=torch.tensor(broken, device=env.device))
                self._count(broken, False)
            idle = torch.tensor([not (running[e] and finite[e]) for e in range(env.num_envs)], device=env.device)
            action = torch.where(idle[:, None], hold, action)
            if self.videos is not None:
                self.videos.add(env.obs_buf, running)
            clock = time.perf_counter()
            env.step(action)
            report.sim_seconds += time.perf_counter() - clock
            report.steps += 1
            step += 1
            done = env.reset_buf.cpu().tolist()
            ended = [e for e in range(n) if running[e] and done[e]]
            if ended:
                success = env.termination_manager.get_term("success").cpu().tolist()
                fired = {
                    name: env.termination_manager.get_term(name).cpu().tolist()
                    for name in env.termination_manager.active_terms
                }
                for e in ended:
                    why = next((name for name, values in fired.items() if values[e]), "unknown")
                    self._end(wave, e, episodes[e], step, bool(success[e]), why, running)
                self._count(ended, False)
        return True

    def _execute(self, chunk: torch.Tensor) -> int:
        """How many actions of a chunk are applied before the next request."""
        return min(self.action_horizon or chunk.shape[1], chunk.shape[1])

    def _end(
        self, wave: int, env_id: int, episode: int, steps: int, success: bool, termination: str, running: list[bool]
    ) -> None:
        running[env_id] = False
        result = EpisodeResult(
            episode=episode,
            env=env_id,
            wave=wave,
            success=success,
            steps=steps,
            first_success_step=steps if success else None,
            termination=termination,
        )
        self.report.results.append(result)
        if self.videos is not None:
            self.videos.finish(env_id)
        if self.on_result is not None:
            self.on_result(result)


# ------------------------------------------------------------------------------------------- set-up
def _connect(spec: PolicySpec, args: argparse.Namespace, mapping, where: str):
    """A client of the policy (for ``replay:``, of an in-process server started here), answering ``ping``."""
    from l2.policy.protocol import PolicyClient, PolicyServer, ProtocolError
    from l2.policy.replay import DatasetError, DatasetReplayPolicy

    if spec.kind == "replay":
        try:
            policy = DatasetReplayPolicy(spec.target, mapping, where=where)
        except DatasetError as exc:
            raise EvaluationError(str(exc)) from None
        server = PolicyServer(policy, host="127.0.0.1", port=0, api_token=args.api_token)
        server.start_thread()
        client = PolicyClient("127.0.0.1", server.port, args.timeout, args.api_token)
    else:
        host, _, port = spec.target.rpartition(":")
        client = PolicyClient(host, int(port), args.timeout, args.api_token)
    try:
        client.ping()
    except ProtocolError as exc:
        raise EvaluationError(str(exc)) from None
    return client


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
        client = _connect(spec, args, mapping, str(args.config))
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
        interrupted = _run_with_progress(evaluator, episodes, args.first_episode, args.progress_file)
        if videos is not None:
            videos.abort()  # episodes cut short by Ctrl-C
            report.videos = videos.written
        report.requests = actor.requests
    report.interrupted = interrupted
    return _finish(args, report)


PER_PROCESS = ("workers", "episodes", "num_envs", "seed", "report", "record", "append", "overwrite", "videos")
"""The arguments each process of a spread evaluation gets its own value of (``--min-success`` is the driver's)."""


def evaluate_spread(args: argparse.Namespace, workers: int, episodes: int) -> int:
    """The evaluation in ``workers`` processes, each running its share of the episodes (in order: process k runs the
    k-th block, from the k-th block of ``--reset-from``'s demos) on its share of the envs; one progress bar, one
    report, the rollouts of ``--record`` merged into the one file (l2.recording.workers), videos from the first."""
    import json
    import shutil
    import tempfile

    from l2.recording import workers as spread
    from l2.recording.output import check_output
    from l2.recording.shards import last_error, shard_seed, shard_targets
    from l2.tools.merge import MergeError

    record = Path(args.record).absolute() if args.record else None
    if record is not None:
        try:
            check_output(record, cli.on_exists(args), args.keep_failed)
        except (FileExistsError, ValueError) as exc:
            raise EvaluationError(str(exc)) from None
    folder = Path(tempfile.mkdtemp(prefix=".l2-evaluate-", dir=record.parent if record else None))
    counts, envs = shard_targets(episodes, workers), shard_targets(min(args.num_envs, episodes), workers)
    shared = spread.command_line(args._parser, args, (*PER_PROCESS, "min_success"))
    commands, logs = [], []
    for k in range(workers):
        cmd = ["-m", "l2.evaluate", "--workers", "1", "--episodes", str(counts[k]), "--num_envs", str(envs[k])]
        cmd += ["--first-episode", str(sum(counts[:k])), "--seed", str(shard_seed(args.seed, k, 0))]
        cmd += ["--report", str(folder / f"shard_{k}.json"), "--progress-file", str(folder / f"progress_{k}")]
        if record is not None:
            cmd += ["--record", str(folder / f"shard_{k}.hdf5")]
        if args.videos and k == 0:  # its episodes are the evaluation's first
            cmd += ["--videos", args.videos]
        commands.append(cmd + shared)
        logs.append(folder / f"shard_{k}.log")

    def finished() -> int:
        return sum(int(p.read_text() or 0) for p in folder.glob("progress_*"))

    try:
        print(f"evaluating {args.policy}: {episodes} episodes in {workers} processes", flush=True)
        codes, stopped = spread.run_processes(
            commands, logs, finished, episodes, desc=f"evaluate x{workers}", unit="episode"
        )
        refused = [(k, last_error(log)) for k, (code, log) in enumerate(zip(codes, logs, strict=True)) if code == 2]
        if refused:  # every process meets the same problem: said once, naming the user's file, not a shard
            k, line = refused[0]
            if record is not None:
                shard = folder / f"shard_{k}.hdf5"
                line = line.replace(str(shard), str(args.record)).replace(shard.name, record.name)
            raise EvaluationError(line)
        crashed = [(k, code) for k, code in enumerate(codes) if code not in (0, 130, 143)]
        if crashed:
            k, code = crashed[0]
            kept = folder.with_name(folder.name.replace(".l2-evaluate-", "l2-evaluate-failed-"))
            folder.rename(kept)
            folder = kept
            raise EvaluationError(f"evaluation process {k} ended with status {code}; its log: {kept / logs[k].name}")
        parts = [
            EvaluationReport.from_json(json.loads((folder / f"shard_{k}.json").read_text())) for k in range(workers)
        ]
        report = EvaluationReport.combined(parts, args.seed)
        if record is not None:
            shards = [folder / f"shard_{k}.hdf5" for k in range(workers)]
            try:
                spread.merge_into(record, shards, args.append, report.num_envs)
                if args.keep_failed:
                    failed = [p.with_name(p.stem + "_failed.hdf5") for p in shards]
                    failed_file = record.with_name(record.stem + "_failed.hdf5")
                    spread.merge_into(failed_file, failed, args.append, report.num_envs)
            except MergeError as exc:  # rollouts unlike the --append file's demos: nothing written
                raise EvaluationError(str(exc)) from None
            report.record = str(args.record)
        report.interrupted = report.interrupted or stopped is not None
    finally:
        if "failed" not in folder.name:
            shutil.rmtree(folder, ignore_errors=True)
    return _finish(args, report)


def _planned_episodes(args: argparse.Namespace) -> int:
    if args.episodes:
        return args.episodes
    if args.reset_from:
        from l2.format.l2file import L2File, L2FileError

        try:
            with L2File(args.reset_from) as f:
                return len(f.demos)
        except (L2FileError, OSError) as exc:
            raise EvaluationError(str(exc)) from None
    return DEFAULT_EPISODES


def _workers(args: argparse.Namespace) -> int:
    """Evaluation processes for this run (``--workers`` resolved)."""
    if args.first_episode or args.progress_file:  # a worker of a spread evaluation
        return 1
    replay = args.policy.kind == "replay"
    if args.workers == AUTO:  # a served policy may keep state between requests (a reset, a replayed episode)
        if not str(args.device).startswith("cpu") or args.policy.served:
            return 1
        return max(1, min(usable_cores(), args.num_envs, _planned_episodes(args)))
    if args.workers > 1:
        if replay:
            raise EvaluationError(f"--workers {args.workers}: a replay: policy serves one process; use --workers 1")
        episodes = _planned_episodes(args)
        if args.workers > min(args.num_envs, episodes):
            raise EvaluationError(
                f"--workers {args.workers}: each process needs at least one env and one episode "
                f"(--num_envs {args.num_envs}, {episodes} episodes)"
            )
    return args.workers


def _agent_cfg(task: str, args: argparse.Namespace):
    from l2.rl.train import load_agent_cfg

    return load_agent_cfg(task, args.device, args.seed)


def _run_with_progress(evaluator: Evaluator, episodes: int, first: int = 0, progress_file: str | None = None) -> bool:
    """Run the evaluation with a progress bar (and the count of finished episodes in ``progress_file``, for the
    driver of several processes); True when Ctrl-C (or SIGTERM) cut it short."""
    from tqdm import tqdm

    from l2.policy.modality import ModalityError
    from l2.policy.protocol import ProtocolError

    with tqdm(total=episodes, unit="episode", desc="evaluate", dynamic_ncols=True, mininterval=0.5) as bar:

        def on_result(result: EpisodeResult) -> None:
            report = evaluator.report
            bar.set_postfix(success=f"{report.successes}/{len(report.results)}", refresh=False)
            bar.update(1)
            if progress_file:
                Path(progress_file).write_text(str(len(report.results)))

        def stop(request: cli.StopRequest) -> None:
            evaluator.stop_requested = True

        evaluator.on_result = on_result
        try:
            with cli.stop_on_signals(stop):
                finished = evaluator.run(episodes, first)
        except (ProtocolError, ModalityError) as exc:
            raise EvaluationError(str(exc)) from None
        if not finished:
            bar.write("interrupted: the report covers the episodes finished so far")
    return not finished


def _finish(args: argparse.Namespace, report: EvaluationReport) -> int:
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


# ---------------------------------------------------------------------------------------------- CLI
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = cli.runner_parser(__doc__, "python -m l2.evaluate")
    group = parser.add_argument_group("policy")
    group.add_argument(
        "--policy",
        type=parse_policy,
        default=None,
        metavar="SPEC",
        help="rsl_rl:PATH (an rsl_rl checkpoint), server:HOST:PORT (a GR00T policy server) or "
        "replay:DATASET (a GR00T LeRobot dataset's actions) (default: the task's shipped PPO policy)",
    )
    group.add_argument(
        "--config",
        type=cli_args.existing_file,
        default=str(DEFAULT_CONFIG),
        help="served policies: the L3 mapping config the training dataset was converted with "
        "(default: config/lift_cube.yaml)",
    )
    group.add_argument(
        "--action-horizon",
        type=cli_args.positive_int,
        default=None,
        metavar="H",
        help="actions of each answered chunk to apply before asking again (default: the whole chunk)",
    )
    group.add_argument(
        "--one-env-per-request",
        action="store_true",
        help="one request per env (batch of 1), for servers that answer one episode per call "
        "(Isaac-GR00T's replay policy); default: one request for all envs",
    )
    group.add_argument(
        "--timeout",
        type=cli_args.positive_float,
        default=60.0,
        help="seconds to wait for each server answer (default: %(default)s)",
    )
    group.add_argument("--api-token", default=None, help="the token a server was started with")
    group = parser.add_argument_group("episodes")
    group.add_argument(
        "--episodes",
        type=cli_args.positive_int,
        default=None,
        metavar="N",
        help=f"episodes to run (default: {DEFAULT_EPISODES}; with --reset-from, one per demo)",
    )
    group.add_argument(
        "--reset-from",
        type=cli_args.existing_file,
        default=None,
        metavar="L2FILE",
        help="start episode i in demo i's initial_state of this L2 file (paired comparisons, replays)",
    )
    group.add_argument(
        "--min-success",
        type=cli_args.fraction,
        default=None,
        metavar="RATE",
        help="exit 1 when the success rate is below this (e.g. 0.8)",
    )
    group = parser.add_argument_group("outputs")
    group.add_argument(
        "--report",
        type=cli_args.output_file,
        default=None,
        metavar="FILE.json",
        help="write the report (per episode) as JSON",
    )
    group.add_argument(
        "--videos",
        type=cli_args.output_folder,
        default=None,
        metavar="DIR",
        help="write MP4s of the first episodes, per camera",
    )
    group.add_argument(
        "--video-episodes",
        type=cli_args.positive_int,
        default=2,
        metavar="M",
        help="how many episodes --videos films (default: %(default)s)",
    )
    group.add_argument(
        "--record",
        type=cli_args.output_file,
        default=None,
        metavar="FILE",
        help="record the rollouts in the L2 schema (source tag 'policy'), e.g. data/demos/policy_lift_cube.hdf5",
    )
    group.add_argument(
        "--keep-failed", action="store_true", help="also record failed rollouts, to <FILE stem>_failed.hdf5"
    )
    exists = group.add_mutually_exclusive_group()
    exists.add_argument("--overwrite", action="store_true", help="replace an existing --record file")
    exists.add_argument("--append", action="store_true", help="add rollouts to an existing --record file")
    sim.add_sim_args(
        parser,
        num_envs=16,
        task=None,
        task_help="gym id of the task (default: the RL task for rsl_rl policies; the --reset-from file's "
        f"task, else {sim.DEFAULT_TASK}, for served policies)",
    )
    parser.add_argument(
        "--workers",
        type=workers_arg,
        default=AUTO,
        metavar="K",
        help="evaluation processes, each running its share of the episodes with its share of the envs; one report "
        "(default: auto = one per usable CPU core on the CPU for in-process policies, at most num_envs and the "
        "episodes; 1 on CUDA and for served policies, whose server may keep state between requests; K > 1 with "
        "server: only for a server that answers each request on its own)",
    )
    parser.add_argument("--first-episode", type=int, default=0, help=argparse.SUPPRESS)  # a worker's share
    parser.add_argument("--progress-file", default=None, help=argparse.SUPPRESS)
    args = cli.parse(parser, argv)
    if args.policy is None:
        from l2.rl.checkpoint import shipped_model
        from l2.rl.train import DEFAULT_TASK as RL_TASK

        args.policy = PolicySpec("rsl_rl", str(shipped_model(args.task or RL_TASK)))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        _check_config(args.config)  # read by served policies only, but a bad one given is refused for every policy
        count = _workers(args)
        if count > 1:
            _preflight(args)
            return evaluate_spread(args, count, _planned_episodes(args))
        return evaluate(args)
    except sim.OneLineError as exc:  # an EvaluationError, or the task's cfg refusing an override
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _check_config(path: str) -> None:
    from l3.config_file import load_mapping
    from l3.errors import ConfigError

    try:
        load_mapping(path)
    except ConfigError as exc:
        raise EvaluationError(str(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:  # a file that is not text
        raise EvaluationError(f"{path}: not a mapping config ({type(exc).__name__})") from None


def _preflight(args: argparse.Namespace) -> None:
    """What a spread evaluation is refused for before its processes start: an rsl_rl checkpoint that is not one, and
    the task's presets and overrides (a --reset-from file's task, when --task is not given, each process reads)."""
    if args.policy.kind == "rsl_rl":
        from l2.rl import checkpoint as ckpt
        from l2.rl.train import DEFAULT_TASK as RL_TASK

        try:
            ckpt.load(args.policy.target, "cpu")
        except ckpt.LayoutError as exc:
            raise EvaluationError(str(exc)) from None
        sim.parse_task_cfg(args.task or RL_TASK, args.device, args.num_envs, args.overrides)
    elif args.task or not args.reset_from:
        sim.parse_task_cfg(args.task or sim.DEFAULT_TASK, args.device, args.num_envs, args.overrides)


if __name__ == "__main__":
    sys.exit(main())
