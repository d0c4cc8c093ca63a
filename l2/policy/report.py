"""The outcome of an evaluation: per-episode results, the success rate with its 95 % Wilson interval, timing."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a success rate (95 % for z = 1.96); (0, 1) for no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_text(successes: int, trials: int) -> str:
    """``"12/16 (75.0 %, 95 % CI 50.5-89.8 %)"``."""
    if trials == 0:
        return "0/0 (no episode finished)"
    lo, hi = wilson_interval(successes, trials)
    return f"{successes}/{trials} ({100 * successes / trials:.1f} %, 95 % CI {100 * lo:.1f}-{100 * hi:.1f} %)"


@dataclass
class EpisodeResult:
    episode: int
    """Index of the episode in this evaluation (with ``--reset-from``: the demo whose initial state it began in)."""
    env: int
    wave: int
    success: bool
    steps: int
    first_success_step: int | None
    """1-based step after which the task's ``success`` term fired (it ends the episode: equals ``steps``)."""
    termination: str
    """The termination term that ended it (``success``, ``time_out``, ``object_dropping``) or ``non_finite_action``."""


@dataclass
class EvaluationReport:
    policy: str
    task: str
    num_envs: int
    seed: int | None
    device: str
    config: str | None = None
    reset_from: str | None = None
    episodes_requested: int = 0
    results: list[EpisodeResult] = field(default_factory=list)
    policy_seconds: float = 0.0
    """Time spent asking the policy (inference, or the whole request/answer round trip of a server)."""
    sim_seconds: float = 0.0
    steps: int = 0
    """Batched env steps (each steps every env once)."""
    requests: int = 0
    interrupted: bool = False
    record: str | None = None
    videos: list[str] = field(default_factory=list)
    workers: int = 1
    """Processes the episodes ran in (``python -m l2.evaluate --workers``)."""
    frames_per_s: float | None = None
    """Env-frames/s over all of them (each process's own, added up), when more than one ran."""

    @property
    def successes(self) -> int:
        return sum(r.success for r in self.results)

    @property
    def success_rate(self) -> float | None:
        return self.successes / len(self.results) if self.results else None

    def to_json(self) -> dict:
        lo, hi = wilson_interval(self.successes, len(self.results))
        steps = max(self.steps, 1)
        return {
            "policy": self.policy,
            "task": self.task,
            "config": self.config,
            "reset_from": self.reset_from,
            "num_envs": self.num_envs,
            "seed": self.seed,
            "device": self.device,
            "episodes_requested": self.episodes_requested,
            "episodes": len(self.results),
            "successes": self.successes,
            "success_rate": self.success_rate,
            "wilson_95": [lo, hi],
            "non_finite_action_episodes": sum(r.termination == "non_finite_action" for r in self.results),
            "interrupted": self.interrupted,
            "timing": {
                "steps": self.steps,
                "requests": self.requests,
                "policy_ms_per_step": 1000 * self.policy_seconds / steps,
                "sim_ms_per_step": 1000 * self.sim_seconds / steps,
                "policy_share": self.policy_seconds / max(self.policy_seconds + self.sim_seconds, 1e-12),
                "env_frames_per_s": self.frames_per_s
                if self.frames_per_s is not None
                else self.steps * self.num_envs / max(self.policy_seconds + self.sim_seconds, 1e-12),
            },
            "workers": self.workers,
            "record": self.record,
            "videos": self.videos,
            "per_episode": [asdict(r) for r in self.results],
        }

    @classmethod
    def from_json(cls, doc: dict) -> EvaluationReport:
        """The report :meth:`to_json` wrote (its per-step times turned back into seconds)."""
        timing = doc["timing"]
        steps = max(timing["steps"], 1)
        return cls(
            policy=doc["policy"],
            task=doc["task"],
            num_envs=doc["num_envs"],
            seed=doc["seed"],
            device=doc["device"],
            config=doc["config"],
            reset_from=doc["reset_from"],
            episodes_requested=doc["episodes_requested"],
            results=[EpisodeResult(**r) for r in doc["per_episode"]],
            policy_seconds=timing["policy_ms_per_step"] * steps / 1000,
            sim_seconds=timing["sim_ms_per_step"] * steps / 1000,
            steps=timing["steps"],
            requests=timing["requests"],
            interrupted=doc["interrupted"],
            record=doc["record"],
            videos=doc["videos"],
            workers=doc.get("workers", 1),
            frames_per_s=timing["env_frames_per_s"],
        )

    @classmethod
    def combined(cls, parts: list[EvaluationReport], seed: int | None) -> EvaluationReport:
        """One report of an evaluation whose episodes ran in ``parts`` (one process each, in order): episodes in
        order, env ids numbered across the processes, times and requests added up, env-frames/s of all of them."""
        first = parts[0]
        report = cls(first.policy, first.task, 0, seed, first.device, first.config, first.reset_from)
        for part in parts:
            report.results += [replace(r, env=r.env + report.num_envs) for r in part.results]
            report.num_envs += part.num_envs
            report.episodes_requested += part.episodes_requested
            report.policy_seconds += part.policy_seconds
            report.sim_seconds += part.sim_seconds
            report.steps += part.steps
            report.requests += part.requests
            report.interrupted |= part.interrupted
            report.videos += part.videos
        report.results.sort(key=lambda r: r.episode)
        report.workers = len(parts)
        report.frames_per_s = sum(p.to_json()["timing"]["env_frames_per_s"] for p in parts)
        return report

    def write(self, path: str | Path) -> None:
        """Write the JSON report (beside the target, then renamed: a reader never sees half a report)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        partial.replace(path)

    def summary_rows(self) -> list[tuple[str, str]]:
        doc = self.to_json()
        timing = doc["timing"]
        ended: dict[str, int] = {}
        for r in self.results:
            ended[r.termination] = ended.get(r.termination, 0) + 1
        steps = sorted(r.steps for r in self.results)
        spread = f" in {self.workers} processes" if self.workers > 1 else ""
        rows = [
            (
                "success rate",
                rate_text(self.successes, len(self.results)) + (" (interrupted)" if self.interrupted else ""),
            ),
            ("episodes ended by", ", ".join(f"{k} {v}" for k, v in sorted(ended.items())) or "-"),
            (
                "episode length",
                f"median {steps[len(steps) // 2]} steps (min {steps[0]}, max {steps[-1]})" if steps else "-",
            ),
            (
                "time per step",
                f"policy {timing['policy_ms_per_step']:.1f} ms ({100 * timing['policy_share']:.0f} %), "
                f"simulation {timing['sim_ms_per_step']:.1f} ms; {timing['env_frames_per_s']:.0f} "
                f"env-frames/s ({self.num_envs} envs{spread}, {self.device})",
            ),
            ("policy", self.policy),
            (
                "task",
                self.task + (f", episodes from the initial states of {self.reset_from}" if self.reset_from else ""),
            ),
        ]
        if self.record:
            rows.append(("rollouts recorded", self.record))
        if self.videos:
            rows.append(("videos", ", ".join(self.videos)))
        return rows
