"""Teleop devices: Isaac Lab's own classes where they run, a terminal keyboard for kit-less sessions.

===============  ==========================================  ====================================
``--teleop_device``  class                                       runs
===============  ==========================================  ====================================
keyboard         ``isaaclab.devices.Se3Keyboard`` under Kit;  Kit (Isaac Sim) / kit-less terminal
                 :class:`TerminalKeyboard` without Kit
spacemouse       ``isaaclab.devices.Se3SpaceMouse`` (hidapi)  kit-less and Kit
gamepad          ``isaaclab.devices.Se3Gamepad`` (carb input) Kit only
xr               ``isaaclab_teleop.IsaacTeleopDevice``        Kit + XR runtime (+ ``isaacteleop``)
replay           :class:`l2.teleop.trace.ReplayDevice`         anywhere
===============  ==========================================  ====================================

All delta devices output ``[dx, dy, dz, rx, ry, rz, gripper]`` per poll; the session integrates them
(:mod:`l2.teleop.accumulator`). Session controls (start/pause, reset-and-discard, quit) are bound with
``add_callback`` on every device that has spare inputs, and the terminal's control keys work alongside
any live device when the session runs in a terminal.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from isaaclab.devices import DeviceBase
from scipy.spatial.transform import Rotation

POS_STEP = 0.005
"""End-effector step (m) per poll at full deflection / per key press, before ``--sensitivity``."""
ROT_STEP = 0.03
"""Rotation step (rad) per poll at full deflection / per key press, before ``--sensitivity``."""

LIVE_DEVICES = ("keyboard", "spacemouse", "gamepad", "xr")
DEVICES = (*LIVE_DEVICES, "replay")


@dataclass(frozen=True)
class Controls:
    """Which input of a device sends which session event, for the help printed at start."""

    start_pause: str | None
    reset: str | None
    quit: str | None
    motion: str


TERMINAL_CONTROLS = Controls("Space", "R", "Esc", "")
CONTROLS = {
    "keyboard": Controls(
        "Space",
        "R",
        "Esc",
        "W/S x, A/D y, Q/E z, Z/X roll, T/G pitch, C/V yaw, K toggle gripper"
        " (terminal: each key press nudges; hold a key to move)",
    ),
    "spacemouse": Controls(None, "right button", None, "push/pull/twist the cap; left button toggles the gripper"),
    "gamepad": Controls(
        "Y",
        "B",
        "Back (MENU1)",
        "left stick x/y, right stick up/down z and left/right yaw, D-pad roll/pitch, X toggles the gripper",
    ),
    "xr": Controls(
        "START (XR UI)", "RESET (XR UI)", "STOP (XR UI) pauses; quit from the terminal", "hand/controller pose"
    ),
    "replay": Controls("trace", "trace", "trace (end of trace)", "trace"),
}


def kit_running() -> bool:
    """True when Isaac Sim's Kit app runs in this process (its input system is then available)."""
    try:
        import omni.kit.app  # noqa: PLC0415

        return omni.kit.app.get_app() is not None
    except Exception:  # noqa: BLE001  (no Isaac Sim installed, or not started)
        return False


class TerminalKeyboard(DeviceBase):
    """Kit-less keyboard: reads keys from the controlling terminal (cbreak mode, no echo).

    Same key map and output as Isaac Lab's ``Se3Keyboard``, but a terminal sends key presses only
    (no releases; a held key repeats at the terminal's auto-repeat rate), so each press adds one step
    to the next :meth:`advance` instead of setting a velocity until release. ``K`` toggles the gripper.
    Any other key can be bound with :meth:`add_callback` (``"SPACE"``, ``"ESCAPE"``, letters upper-case).
    Ctrl-C keeps raising SIGINT. With ``motion=False`` only the callbacks are served (control keys next
    to a SpaceMouse or gamepad).
    """

    _MOTION = {
        "W": (0, 1.0),
        "S": (0, -1.0),
        "A": (1, 1.0),
        "D": (1, -1.0),
        "Q": (2, 1.0),
        "E": (2, -1.0),
        "Z": (3, 1.0),
        "X": (3, -1.0),
        "T": (4, 1.0),
        "G": (4, -1.0),
        "C": (5, 1.0),
        "V": (5, -1.0),
    }

    def __init__(
        self,
        pos_step: float = POS_STEP,
        rot_step: float = ROT_STEP,
        motion: bool = True,
        sim_device: str = "cpu",
        stream=None,
    ):
        super().__init__()
        import termios  # noqa: PLC0415  (POSIX only)

        self._stream = stream or sys.stdin
        self._fd = self._stream.fileno()
        if not os.isatty(self._fd):
            raise OSError("the kit-less keyboard reads the terminal: run the session in an interactive terminal")
        self.pos_step, self.rot_step, self.motion = pos_step, rot_step, motion
        self._sim_device = sim_device
        self._lock = threading.Lock()
        self._pending = np.zeros(6)
        self._close_gripper = False
        self._callbacks: dict[str, Callable] = {}
        self._saved_attrs = termios.tcgetattr(self._fd)
        attrs = termios.tcgetattr(self._fd)
        attrs[3] &= ~(termios.ICANON | termios.ECHO)  # cbreak: keys arrive at once, ISIG (Ctrl-C) stays
        attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self._fd, termios.TCSANOW, attrs)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read_keys, name="terminal-keyboard", daemon=True)
        self._thread.start()

    def __str__(self) -> str:
        return "Terminal keyboard (kit-less): " + (CONTROLS["keyboard"].motion if self.motion else "session keys only")

    def close(self) -> None:
        """Stop reading and restore the terminal (also done at interpreter exit by :meth:`__del__`)."""
        import termios  # noqa: PLC0415

        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(timeout=1.0)
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved_attrs)

    def __del__(self):
        with contextlib.suppress(Exception):  # the terminal may be gone at interpreter exit
            self.close()

    def reset(self):
        with self._lock:
            self._pending[:] = 0.0
            self._close_gripper = False

    def add_callback(self, key: str, func: Callable):
        self._callbacks[key.upper()] = func

    def advance(self) -> torch.Tensor:
        with self._lock:
            delta, self._pending = self._pending, np.zeros(6)
            gripper = -1.0 if self._close_gripper else 1.0
        rot_vec = Rotation.from_euler("XYZ", delta[3:]).as_rotvec()
        command = np.concatenate([delta[:3], rot_vec, [gripper]])
        return torch.tensor(command, dtype=torch.float32, device=self._sim_device)

    def _read_keys(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(self._fd, 64).decode(errors="ignore")
            except OSError:
                return
            for key in _split_keys(chunk):
                self._on_key(key)

    def _on_key(self, key: str) -> None:
        if self.motion and key in self._MOTION:
            axis, sign = self._MOTION[key]
            with self._lock:
                self._pending[axis] += sign * (self.pos_step if axis < 3 else self.rot_step)
        elif self.motion and key == "K":
            with self._lock:
                self._close_gripper = not self._close_gripper
        if key in self._callbacks:
            self._callbacks[key]()


def _split_keys(chunk: str) -> list[str]:
    """Key names in a chunk read from the terminal: escape sequences (arrows, F-keys) are dropped,
    a lone Esc is ``"ESCAPE"``, Space is ``"SPACE"``, letters are upper-case."""
    keys, i = [], 0
    while i < len(chunk):
        char = chunk[i]
        if char == "\x1b" and i + 1 < len(chunk) and chunk[i + 1] in "[O":
            i += 2
            while i < len(chunk) and not (chunk[i].isalpha() or chunk[i] == "~"):
                i += 1
        elif char == "\x1b":
            keys.append("ESCAPE")
        elif char == " ":
            keys.append("SPACE")
        else:
            keys.append(char.upper())
        i += 1
    return keys


def create_device(
    name: str, callbacks: dict[str, Callable], sim_device: str, sensitivity: float = 1.0, trace=None, env_cfg=None
) -> tuple[DeviceBase, list[DeviceBase]]:
    """Build the device ``name`` with the session callbacks (``start_pause``, ``reset``, ``quit``,
    and for replay ``start``/``pause``) bound to its inputs.

    Returns the motion device and any extra input devices (the terminal's control keys) to close
    at the end.
    """
    pos, rot = POS_STEP * sensitivity, ROT_STEP * sensitivity
    extras: list[DeviceBase] = []
    if name == "replay":
        from l2.teleop.trace import ReplayDevice  # noqa: PLC0415

        device = ReplayDevice(trace, sim_device=sim_device)
        for event in ("start", "pause", "reset", "quit"):
            device.add_callback(event, callbacks[event])
        return device, extras

    def terminal_controls(motion: bool) -> TerminalKeyboard:
        kb = TerminalKeyboard(pos, rot, motion=motion, sim_device=sim_device)
        kb.add_callback("SPACE", callbacks["start_pause"])
        kb.add_callback("R", callbacks["reset"])
        kb.add_callback("ESCAPE", callbacks["quit"])
        return kb

    if name == "keyboard":
        if kit_running():
            from isaaclab.devices import Se3Keyboard, Se3KeyboardCfg  # noqa: PLC0415

            device = Se3Keyboard(Se3KeyboardCfg(pos_sensitivity=pos, rot_sensitivity=rot, sim_device=sim_device))
            device.add_callback("SPACE", callbacks["start_pause"])
            device.add_callback("R", callbacks["reset"])
            device.add_callback("ESCAPE", callbacks["quit"])
            return device, extras
        device = terminal_controls(motion=True)
        return device, [device]
    if name == "spacemouse":
        from isaaclab.devices import Se3SpaceMouse, Se3SpaceMouseCfg  # noqa: PLC0415

        device = Se3SpaceMouse(Se3SpaceMouseCfg(pos_sensitivity=pos, rot_sensitivity=rot, sim_device=sim_device))
        device.add_callback("R", callbacks["reset"])  # right button (the left one toggles the gripper)
    elif name == "gamepad":
        if not kit_running():
            raise RuntimeError(
                "Isaac Lab's Se3Gamepad reads Kit's carb input: run the session with Kit (Isaac Sim), "
                "e.g. physics=physx, or use --teleop_device keyboard|spacemouse kit-less"
            )
        import carb  # noqa: PLC0415
        from isaaclab.devices import Se3Gamepad, Se3GamepadCfg  # noqa: PLC0415

        device = Se3Gamepad(Se3GamepadCfg(pos_sensitivity=pos, rot_sensitivity=rot, sim_device=sim_device))
        device.add_callback(carb.input.GamepadInput.Y, callbacks["start_pause"])
        device.add_callback(carb.input.GamepadInput.B, callbacks["reset"])
        device.add_callback(carb.input.GamepadInput.MENU1, callbacks["quit"])
    elif name == "xr":
        device = _create_xr_device(env_cfg, sim_device, callbacks)
    else:
        raise ValueError(f"unknown teleop device {name!r} (known: {', '.join(DEVICES)})")
    if sys.stdin.isatty():
        extras.append(terminal_controls(motion=False))
    return device, extras


def _create_xr_device(env_cfg, sim_device: str, callbacks: dict[str, Callable]):
    """XR through ``isaaclab_teleop``: the env cfg must carry an ``isaac_teleop`` (IsaacTeleopCfg) whose
    pipeline outputs the absolute ``[x, y, z, qx, qy, qz, qw, gripper]`` action in the robot root frame."""
    teleop_cfg = getattr(env_cfg, "isaac_teleop", None)
    if teleop_cfg is None:
        raise RuntimeError(
            "--teleop_device xr needs an IsaacTeleopCfg on the env cfg (attribute isaac_teleop) with an Isaac Capture "
            "pipeline that outputs [x, y, z, qx, qy, qz, qw, gripper] in the robot root frame; see docs/teleop.md"
        )
    from isaaclab_teleop import create_isaac_teleop_device  # noqa: PLC0415

    return create_isaac_teleop_device(
        teleop_cfg,
        sim_device=sim_device,
        callbacks={"START": callbacks["start"], "STOP": callbacks["pause"], "RESET": callbacks["reset"]},
    )
