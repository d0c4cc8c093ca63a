"""The teleop session: device commands in, the task's own actions to the env, successful attempts saved.

End-effector device commands become an absolute target (``[x, y, z, qx, qy, qz, qw, gripper]``, robot root frame):
the action of a task that takes poses (the Franka's lift), or, through the robot's IK, the joint targets of one that
acts in joint space (the SO-101's lift and stack: :mod:`l2.recording.task_space`), which are then what the file
records. A leader arm's joint positions are the action as they are. What a task must provide for this is checked
on its cfg before the env is built (:mod:`l2.teleop.requirements`).

It follows Isaac Lab's ``record_demos.py``: the task's ``success`` term is evaluated by the session
(not the termination manager), an attempt is saved once success held for ``num_success_steps``
consecutive steps (``record_pre_reset`` without export, ``set_success_to_episodes(True)``,
``export_episodes``; the recorder flushes the file after each export), and the operator's
reset-and-discard ends the attempt without writing it to the main file.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from isaaclab.managers import SceneEntityCfg

from l2.teleop.accumulator import DeltaPoseAccumulator
from l2.teleop.trace import TraceRecorder


@dataclass
class SessionStats:
    saved: int = 0
    discarded: int = 0
    dropped: int = 0
    """Attempts ended by the task itself (a termination term, e.g. a cube fell off the table)."""
    steps: int = 0
    ticks: int = 0
    seconds: float = 0.0


class TeleopSession:
    """Runs one env with one device until ``quit``, ``num_demos`` saved demos, or :meth:`request_quit`.

    Args:
        env: the unwrapped teleop env (one env; its cfg's ``success_term``, and for ``delta`` control ``ee_home``:
            :func:`l2.teleop.requirements.check_teleop_task`).
        device: any ``DeviceBase``-like object with ``advance()`` and ``reset()``.
        control: ``"delta"`` (integrate ``[dx, dy, dz, rx, ry, rz, gripper]``), ``"absolute"`` (XR) or ``"joint"``
            (a leader arm's joint positions: the env's action as it is).
        start_running: start active (devices without a start control) or paused until ``start``.
        step_hz: ticks per second (None: as fast as the simulator goes).
        on_action: called with every action sent to the env (logging).
        on_instruction: called with each attempt's instruction when it begins (the browser view).
    """

    def __init__(
        self,
        env,
        device,
        *,
        num_success_steps: int = 10,
        num_demos: int = 0,
        control: str = "delta",
        start_running: bool = False,
        step_hz: float | None = None,
        recorder: TraceRecorder | None = None,
        on_action: Callable[[torch.Tensor], None] | None = None,
        on_instruction: Callable[[str], None] | None = None,
        render: bool = False,
        log=print,
    ):
        self.env, self.device = env, device
        self.num_success_steps, self.num_demos = num_success_steps, num_demos
        self.control, self.step_hz, self.recorder = control, step_hz, recorder
        self.on_action, self.on_instruction, self.render, self.log = on_action, on_instruction, render, log
        self.running = start_running
        self.quit = False
        self.stats = SessionStats()
        self.success_streak = 0
        self.instruction = ""
        """What the current attempt asks (printed when it begins)."""
        self._events: collections.deque[str] = collections.deque()
        self.success_term = env.cfg.success_term
        for value in self.success_term.params.values():
            if isinstance(value, SceneEntityCfg):
                value.resolve(env.scene)
        self.target = DeltaPoseAccumulator(env.device)
        if control != "joint":  # end-effector commands into the task's action
            from l2.recording.task_space import TaskSpaceDriver  # noqa: PLC0415

            self.driver = TaskSpaceDriver(env)
        from l2.recording.handler import dataset_handler  # noqa: PLC0415

        self.handler = dataset_handler(env)

    # -- controls (called from device callbacks, possibly from a device's thread) -----------------------
    def callbacks(self) -> dict[str, Callable[[], None]]:
        return {
            "start_pause": lambda: self._events.append("toggle"),
            "start": lambda: self._events.append("start"),
            "pause": lambda: self._events.append("pause"),
            "reset": lambda: self._events.append("reset"),
            "quit": lambda: self._events.append("quit"),
        }

    def request_quit(self) -> None:
        """Stop at the end of the current tick (safe from a signal handler)."""
        self._events.append("quit")

    # -- attempts -------------------------------------------------------------------------------------
    def begin_attempt(self, reset_env: bool = True) -> None:
        if reset_env:
            self.env.reset()
        if self.control == "delta":
            # A fixed home target: the frame sensor is not updated by a reset, and the same start makes
            # every attempt (and every replay) begin alike.
            home = torch.tensor(self.env.cfg.ee_home, device=self.env.device)
            self.target.reset(home[:3], home[3:])
        self.device.reset()
        self.success_streak = 0
        from l2.lift.variety import episode_language

        self.instruction = episode_language(self.env, 0)[0]
        self.log(f"instruction: {self.instruction}")  # drawn per attempt with presets=variety
        if self.on_instruction is not None:
            self.on_instruction(self.instruction)

    def _episode_length(self) -> int:
        actions = self.env.recorder_manager.get_episode(0).data.get("actions")
        return 0 if actions is None else len(actions)

    def save_attempt(self) -> None:
        rm = self.env.recorder_manager
        length = self._episode_length()
        rm.record_pre_reset([0], force_export_or_skip=False)
        rm.set_success_to_episodes([0], torch.tensor([[True]], dtype=torch.bool, device=self.env.device))
        rm.export_episodes([0])  # writes demo_<n> and flushes the file
        self.stats.saved += 1
        total = self.handler.get_num_episodes()
        self.log(f"saved demo_{total - 1}: {length} steps ({self.stats.saved} this session, {total} in the file)")
        self.begin_attempt()

    def discard_attempt(self) -> None:
        rm = self.env.recorder_manager
        length = self._episode_length()
        # success stays False: Isaac Lab routes the episode to the _failed file, or drops it
        rm.record_pre_reset([0], force_export_or_skip=False)
        rm.export_episodes([0])
        self.stats.discarded += 1
        if length:
            self.log(f"discarded the attempt ({length} steps)")
        self.begin_attempt()

    # -- main loop ------------------------------------------------------------------------------------
    def _handle(self, event: str) -> str | None:
        """Apply one control event; returns the name to record (toggle resolved) or None."""
        if event == "toggle":
            event = "pause" if self.running else "start"
        if event == "start" and not self.running:
            self.running = True
            self.log("running")
        elif event == "pause" and self.running:
            self.running = False
            self.log("paused")
        elif event == "reset":
            self.discard_attempt()
        elif event == "quit":
            self.quit = True
        else:
            return None
        return event

    def tick(self) -> None:
        command = self.device.advance()  # may fire callbacks (queued events)
        events = []
        while self._events and not self.quit:
            name = self._handle(self._events.popleft())
            if name:
                events.append(name)
        applied = self.running and not self.quit and command is not None
        if self.recorder is not None:
            self.recorder.add(command, events, applied)
        self.stats.ticks += 1
        if not applied:
            if self.render:
                self.env.sim.render()
            return
        if self.control == "joint":
            action = command.reshape(1, -1).to(self.env.device)
        else:
            pose = self.target.apply(command) if self.control == "delta" else self.target.set_absolute(command)
            action = self.driver.action(pose)
        if self.on_action is not None:
            self.on_action(action)
        self.env.step(action)
        self.stats.steps += 1
        terminations = self.env.termination_manager
        if terminations.dones[0]:
            # the task ended the attempt itself (e.g. a cube dropped): Isaac Lab exported it as a failure and reset
            self.stats.dropped += 1
            fired = [name for name in terminations.active_terms if bool(terminations.get_term(name)[0])]
            self.log(f"the task ended the attempt ({', '.join(fired)}): not saved")
            self.begin_attempt(reset_env=False)
            return
        if bool(self.success_term.func(self.env, **self.success_term.params)[0]):
            self.success_streak += 1
            if self.success_streak >= self.num_success_steps:
                self.save_attempt()
                if self.num_demos and self.stats.saved >= self.num_demos:
                    self.log(f"{self.num_demos} demos saved: done")
                    self.quit = True
        else:
            self.success_streak = 0

    def run(self) -> SessionStats:
        self.begin_attempt()
        period = 1.0 / self.step_hz if self.step_hz else 0.0
        start = next_tick = time.perf_counter()
        try:
            while not self.quit:
                self.tick()
                if period:
                    next_tick += period
                    delay = next_tick - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                    else:
                        next_tick = time.perf_counter()  # the simulator is slower than step_hz: no catch-up burst
        finally:
            self.stats.seconds = time.perf_counter() - start
        return self.stats
