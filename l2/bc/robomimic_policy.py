"""A robomimic checkpoint behind the policy-server protocol (runs in robomimic's venv: no Isaac Lab).

The checkpoint's observation keys are the L2 obs terms it was trained on (``joint_pos``, ...); the mapping
config names the same terms as its state keys, so the served policy takes exactly what the evaluation sends.
Its action is the L2 file's ``actions`` row, split into the mapping's action keys by the same
:meth:`l3.mapping.Slice.take` that L3 converts with. A BC-RNN's hidden state starts at zero on ``reset``
and again every ``rnn.horizon`` steps, as robomimic's own rollouts do (it was trained on windows of that
length from a zero state). A checkpoint trained on scaled actions (:mod:`l2.bc.action_scale`) has its
prediction scaled back into the data's units.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from l2.bc import action_scale
from l2.policy.modality import ModalityAdapter
from l3.mapping import Mapping


class CheckpointError(ValueError):
    """A checkpoint that does not fit the mapping (or cannot be read), in one line."""


class RobomimicPolicy:
    def __init__(self, path: str | Path, mapping: Mapping, where: str = "the mapping config", device: str = "cpu"):
        import torch
        from robomimic.utils import file_utils

        self.path = Path(path)
        if not self.path.is_file():
            raise CheckpointError(f"{self.path}: no such robomimic checkpoint")
        try:
            rollout, ckpt = file_utils.policy_from_checkpoint(
                ckpt_path=str(self.path), device=torch.device(device), verbose=False
            )
        except Exception as exc:  # noqa: BLE001 - whatever robomimic raises, say it in one line
            raise CheckpointError(f"{self.path}: not a robomimic checkpoint ({type(exc).__name__}: {exc})") from None
        self.torch, self.device = torch, torch.device(device)
        shapes = ckpt["shape_metadata"]
        self.obs_keys = list(shapes["all_obs_keys"])
        self.obs_widths = {k: int(np.prod(shapes["all_shapes"][k])) for k in self.obs_keys}
        self.adapter = ModalityAdapter(mapping, where)
        check_layout(self.path, self.obs_widths, int(shapes["ac_dim"]), self.adapter)
        self.mapping = mapping
        self.algo = rollout.policy
        self.net = self.algo.nets["policy"]
        self.net.eval()
        config = json.loads(ckpt["config"])
        rnn = config["algo"].get("rnn", {})
        self.rnn_horizon = int(rnn["horizon"]) if rnn.get("enabled") else None
        self.normalization = ckpt.get("obs_normalization_stats") or {}
        self.action_scale = (ckpt.get(action_scale.KEY) or {}).get(action_scale.ACTIONS)
        self._rnn_state = None
        self._steps = 0

    def reset(self, options: dict | None = None) -> dict:
        self._rnn_state, self._steps = None, 0
        return {"rnn_horizon": self.rnn_horizon}

    def get_modality_config(self) -> dict:
        return {"state": self.obs_widths, "action": self.adapter.action_widths()}

    def get_action(self, observation: dict, options: dict | None = None) -> tuple[dict, dict]:
        torch = self.torch
        state = (observation or {}).get("state") or {}
        missing = [k for k in self.obs_keys if k not in state]
        if missing:
            raise CheckpointError(f"the observation has no state.{missing[0]} (it sent {sorted(state)})")
        obs = {}
        for key in self.obs_keys:
            value = np.asarray(state[key], np.float32)[:, -1]  # (B, T, D): the latest frame
            if key in self.normalization:
                stats = self.normalization[key]
                value = (value - np.asarray(stats["mean"])[0]) / np.asarray(stats["std"])[0]
            obs[key] = torch.from_numpy(np.ascontiguousarray(value, np.float32)).to(self.device)
        batch = next(iter(obs.values())).shape[0]
        with torch.no_grad():
            if self.rnn_horizon is not None:
                if self._rnn_state is None or self._steps % self.rnn_horizon == 0:
                    self._rnn_state = self.net.get_rnn_init_state(batch_size=batch, device=self.device)
                action, self._rnn_state = self.net.forward_step(obs, rnn_state=self._rnn_state)
            else:
                action = self.net(obs)
        self._steps += 1
        row = action.cpu().numpy().astype(np.float32)  # (B, ac_dim): one L2 ``actions`` row per env
        if self.action_scale is not None:
            row = action_scale.unnormalize(row, self.action_scale)
        return {s.key: s.take(row)[:, None, :] for s in self.mapping.action}, {"step": self._steps}


def check_layout(path: Path, obs_widths: dict[str, int], action_dim: int, adapter: ModalityAdapter) -> None:
    """Refuse a checkpoint whose observation keys or widths, or action width, are not the mapping's."""
    state = adapter.state_widths()
    for key, width in obs_widths.items():
        if key not in state:
            raise CheckpointError(
                f"{path}: the checkpoint observes {key} ({width}), which {adapter.where} does not "
                f"send (its state keys: {', '.join(state)})"
            )
        if state[key] is not None and state[key] != width:
            raise CheckpointError(
                f"{path}: the checkpoint observes {key} of width {width}, {adapter.where} sends {state[key]}"
            )
    widths = adapter.action_widths()
    mapped = sum(w or 0 for w in widths.values())
    if action_dim != mapped:
        raise CheckpointError(
            f"{path}: the checkpoint acts with {action_dim} values, {adapter.where}'s action keys "
            f"take {mapped} ({', '.join(f'{k} {w}' for k, w in widths.items())})"
        )
