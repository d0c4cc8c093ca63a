"""The episode loop: episodes run in waves of the env count, each counted once from its first step whatever its
length, its end (success, the termination that fired) reported as it comes; and the run with a progress bar."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from l2.evaluate.spec import NON_FINITE, EvaluationError
from l2.evaluate.videos import VideoSink
from l2.policy.report import EpisodeResult, EvaluationReport
from l2.recording import cli

if TYPE_CHECKING:
    import torch
    from isaaclab.envs import ManagerBasedRLEnv

    from l2.replay import Demo


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
        from l2.recording.camera_frames import camera_images

        self.cameras = list(camera_images(env))
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
                from l2.recording.camera_frames import camera_images

                self.videos.add(camera_images(env), running)
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


def run_with_progress(evaluator: Evaluator, episodes: int, first: int = 0, progress_file: str | None = None) -> bool:
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
