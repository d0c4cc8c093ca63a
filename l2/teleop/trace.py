"""Device-input traces: record a live session's device outputs and control events, replay them later.

A trace is a small JSON file::

    {
      "format": "l2-teleop-trace", "version": 1,
      "task": "L2-Lift-Cube-Franka-IK-Abs-Teleop",   # informative
      "seed": 42,                                     # env seed: the cube poses depend on it
      "control": "delta",                             # "delta": commands are [dx,dy,dz,rx,ry,rz,gripper]
                                                      # "absolute": [x,y,z,qx,qy,qz,qw,gripper] (XR)
                                                      # "joint": the robot's joint positions, as a
                                                      #   leader arm sends them (the env's action)
      "device": "keyboard",                           # the live device it came from (informative)
      "presets": ["variety"],                         # optional: the scene's presets, applied on replay
      "commands": [[0.005, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], ...],   # one per session tick
      "events": [[0, "start"], [212, "reset"], [480, "quit"]]      # [tick, name], in tick order
    }

A tick is one poll of the device by the session. Events of a tick are handled before its command;
the command is applied (and the env stepped) only while the session is running. Paused ticks
without events are not recorded, so a trace is as long as the time spent driving. Event names:
``start``, ``pause``, ``reset`` (reset and discard the current attempt), ``quit``. When the
commands run out, the replay device sends ``quit``.

:class:`ReplayDevice` is a :class:`~isaaclab.devices.DeviceBase` like the live devices, so a replay
goes through the same session code (accumulation, success counting, saving) as a live session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from isaaclab.devices import DeviceBase

from l2.format import atomic

FORMAT = "l2-teleop-trace"
VERSION = 1
EVENTS = ("start", "pause", "reset", "quit")


CONTROLS = ("delta", "absolute", "joint")
"""What a trace's commands are: end-effector deltas, absolute end-effector poses, or joint positions."""


@dataclass
class Trace:
    commands: list[list[float]] = field(default_factory=list)
    events: list[tuple[int, str]] = field(default_factory=list)
    seed: int | None = None
    task: str | None = None
    control: str = "delta"
    device: str | None = None
    presets: list[str] = field(default_factory=list)
    """The presets the session ran with that shape what the operator saw and did (e.g. ``variety``: the scene
    the commands were given in); a replay runs with them too. Camera presets are left out (the trace replays
    the same with or without cameras)."""

    @property
    def command_dim(self) -> int | None:
        """Values per command (``joint``: the robot's joints, as many as its first command has)."""
        if self.control == "joint":
            return len(self.commands[0]) if self.commands else None
        return 7 if self.control == "delta" else 8

    def idle_command(self) -> list[float]:
        """A command for a tick that applies none (paused, or past the end): no motion, gripper open; for joint
        control, the last command (a leader arm at rest stays where it is)."""
        if self.control == "joint":
            if not self.commands:
                raise ValueError("a joint-control trace starts with a command, not a paused tick")
            return list(self.commands[-1])
        return [0.0] * (self.command_dim - 1) + [1.0]

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "task": self.task,
            "seed": self.seed,
            "control": self.control,
            "device": self.device,
            "presets": self.presets,
            "commands": self.commands,
            "events": [[int(t), name] for t, name in self.events],
        }

    @classmethod
    def from_json(cls, data: dict) -> Trace:
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise ValueError(f"not an {FORMAT} v{VERSION} file")
        trace = cls(
            commands=[list(map(float, c)) for c in data["commands"]],
            events=[(int(t), str(name)) for t, name in data.get("events", [])],
            seed=data.get("seed"),
            task=data.get("task"),
            control=data.get("control", "delta"),
            device=data.get("device"),
            presets=[str(p) for p in data.get("presets", [])],
        )
        trace.check()
        return trace

    def check(self) -> None:
        if self.control not in CONTROLS:
            raise ValueError(f"control must be one of {', '.join(CONTROLS)}, not {self.control!r}")
        bad = [i for i, c in enumerate(self.commands) if len(c) != self.command_dim]
        if bad:
            raise ValueError(f"command {bad[0]} has {len(self.commands[bad[0]])} values, expected {self.command_dim}")
        for tick, name in self.events:
            if name not in EVENTS:
                raise ValueError(f"unknown event {name!r} at tick {tick} (known: {', '.join(EVENTS)})")
            if not 0 <= tick <= len(self.commands):
                raise ValueError(f"event {name!r} at tick {tick} is outside the trace (0..{len(self.commands)})")
        if [t for t, _ in self.events] != sorted(t for t, _ in self.events):
            raise ValueError("events are not in tick order")

    def save(self, path: str | os.PathLike) -> None:
        """Write atomically (a temporary file renamed), so an interrupted write leaves no torn trace."""
        data = self.to_json()
        rows = lambda items: ",\n    ".join(json.dumps(x, separators=(",", ":")) for x in items)  # noqa: E731
        head = json.dumps({k: v for k, v in data.items() if k not in ("commands", "events")}, indent=2)[:-2]
        atomic.write_text(
            path,
            f'{head},\n  "events": [\n    {rows(data["events"])}\n  ],\n'
            f'  "commands": [\n    {rows(data["commands"])}\n  ]\n}}\n',
        )


def load_trace(path: str | os.PathLike) -> Trace:
    try:
        return Trace.from_json(json.loads(Path(path).read_text()))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: {exc}") from exc


def _short(value: np.float32) -> float:
    """The shortest decimal that reads back as the same float32 (0.005, not 0.004999999888241291)."""
    short = float(str(np.float32(value)))
    return short if np.float32(short) == np.float32(value) else float(value)


class TraceRecorder:
    """Collects the ticks of a live session (see the module doc for which ticks are kept)."""

    def __init__(self, seed: int | None, task: str, device: str, control: str = "delta", overrides: Sequence[str] = ()):
        self.trace = Trace(seed=seed, task=task, device=device, control=control, presets=scene_presets(overrides))

    def add(self, command: torch.Tensor | None, events: list[str], applied: bool) -> None:
        if not (events or applied):
            return
        tick = len(self.trace.commands)
        self.trace.events.extend((tick, name) for name in events)
        if applied:
            self.trace.commands.append([_short(v) for v in command.reshape(-1).cpu().numpy()])
        elif events:  # events on a paused tick still need a tick of their own
            self.trace.commands.append(self.trace.idle_command())


class ReplayDevice(DeviceBase):
    """Plays a :class:`Trace` back: one recorded command per :meth:`advance`, events through callbacks."""

    def __init__(self, trace: Trace, sim_device: str = "cpu"):
        super().__init__()
        self.trace = trace
        self._sim_device = sim_device
        self._tick = 0
        self._callbacks: dict[str, Callable] = {}
        self._events: dict[int, list[str]] = {}
        for tick, name in trace.events:
            self._events.setdefault(tick, []).append(name)

    def __str__(self) -> str:
        return f"Replay of a {len(self.trace.commands)}-tick trace (seed {self.trace.seed})"

    def reset(self):
        """Nothing to reset: the trace already holds the gripper state the operator had."""

    def add_callback(self, key: str, func: Callable):
        self._callbacks[key] = func

    @property
    def finished(self) -> bool:
        return self._tick >= len(self.trace.commands)

    def advance(self) -> torch.Tensor:
        names = self._events.get(self._tick, []) + (["quit"] if self.finished else [])
        for name in names:
            if name in self._callbacks:
                self._callbacks[name]()
        command = self.trace.idle_command() if self.finished else self.trace.commands[self._tick]
        self._tick += 1
        return torch.tensor(command, dtype=torch.float32, device=self._sim_device)


def scene_presets(overrides: Sequence[str]) -> list[str]:
    """The ``presets=`` names in ``overrides`` that a trace keeps (all but the camera preset)."""
    from l2.lift.camera_cfg import NO_CAMERAS

    names = [n for o in overrides if o.startswith("presets=") for n in o.split("=", 1)[1].split(",") if n]
    return [n for n in dict.fromkeys(names) if n != NO_CAMERAS]
