"""A LeRobot policy checkpoint (ACT, Diffusion, ... trained by ``lerobot-train``) behind the policy-server
protocol. Runs in LeRobot's venv (no Isaac Lab).

The checkpoint was trained on a dataset L3 converted with a mapping config: ``observation.state`` is that
config's state keys concatenated in order, ``observation.images.<camera>`` its cameras, ``action`` its action
keys concatenated. This server rebuilds exactly those inputs from a GR00T observation (frames as float
(B, 3, H, W) in [0, 1], as LeRobot's training loop feeds them), runs LeRobot's own pre-processor, the
policy's whole action chunk and the post-processor (normalisation is theirs), and answers the chunk split
into the config's action keys.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from l2.policy.modality import ModalityAdapter
from l3 import layout
from l3.mapping import Mapping

STATE, ACTION = layout.STATE, layout.ACTION


class CheckpointError(ValueError):
    """A checkpoint that does not fit the mapping (or cannot be read), in one line."""


def pretrained_dir(path: str | Path) -> Path:
    """The ``pretrained_model`` folder of a checkpoint given as itself, its step folder or a run folder."""
    path = Path(path)
    for candidate in (path, path / "pretrained_model", path / "checkpoints" / "last" / "pretrained_model"):
        if (candidate / "config.json").is_file() and (candidate / "model.safetensors").is_file():
            return candidate
    raise CheckpointError(f"{path}: not a LeRobot checkpoint (no pretrained_model/config.json and model.safetensors)")


class LeRobotPolicy:
    def __init__(self, path: str | Path, mapping: Mapping, where: str = "the mapping config", device: str = "cpu"):
        import torch
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        self.path = pretrained_dir(path)
        self.torch, self.device = torch, torch.device(device)
        self.adapter = ModalityAdapter(mapping, where)
        self.mapping = mapping
        try:
            config = PreTrainedConfig.from_pretrained(self.path)
        except Exception as exc:  # noqa: BLE001 - whatever LeRobot raises, say it in one line
            raise CheckpointError(f"{self.path}: cannot read the policy config ({type(exc).__name__}: {exc})") from None
        config.device = device
        if hasattr(config, "pretrained_backbone_weights"):
            config.pretrained_backbone_weights = None  # the trained weights replace them; no download
        check_features(self.path, config, self.adapter)
        self.policy = get_policy_class(config.type).from_pretrained(self.path, config=config)
        self.policy.eval()
        self.pre, self.post = make_pre_post_processors(
            config, pretrained_path=str(self.path), preprocessor_overrides={"device_processor": {"device": device}}
        )
        self.horizon = int(getattr(config, "n_action_steps", 1) or 1)
        widths = layout.Layout(mapping).modality()["action"] if all(s.names for s in mapping.action) else None
        if widths is None:
            raise CheckpointError(f"{where}: every action key needs names (their widths split LeRobot's action)")
        self.action_slices = {key: (entry["start"], entry["end"]) for key, entry in widths.items()}

    def reset(self, options: dict | None = None) -> dict:
        self.policy.reset()
        return {"n_action_steps": self.horizon}

    def get_modality_config(self) -> dict:
        return {
            "state": self.adapter.state_widths(),
            "action": self.adapter.action_widths(),
            "video": [c.key for c in self.mapping.cameras],
        }

    def get_action(self, observation: dict, options: dict | None = None) -> tuple[dict, dict]:
        torch = self.torch
        state = observation.get("state") or {}
        video = observation.get("video") or {}
        batch = {
            STATE: torch.from_numpy(
                np.concatenate([np.asarray(state[s.key], np.float32)[:, -1] for s in self.mapping.state], axis=-1)
            )
        }
        for camera in self.mapping.cameras:
            frames = np.asarray(video[camera.key])[:, -1]  # (B, H, W, 3) uint8
            batch[layout.video_key(camera.key)] = torch.from_numpy(frames).permute(0, 3, 1, 2).float() / 255.0
        texts = next(iter((observation.get("language") or {}).values()), None)
        if texts is not None:
            batch["task"] = [t[-1] for t in texts]
        with torch.no_grad():
            chunk = self.policy.predict_action_chunk(self.pre(batch))  # (B, chunk, A), normalised
            actions = self.post(chunk)
        actions = actions[:, : self.horizon].to("cpu").numpy().astype(np.float32)
        return {key: np.ascontiguousarray(actions[..., a:b]) for key, (a, b) in self.action_slices.items()}, {}


def check_features(path: Path, config, adapter: ModalityAdapter) -> None:
    """Refuse a checkpoint whose inputs or action are not what the mapping sends and takes."""
    inputs = {k: tuple(f.shape) for k, f in config.input_features.items()}
    state_width = sum(w or 0 for w in adapter.state_widths().values())
    if STATE in inputs and inputs[STATE][0] != state_width:
        raise CheckpointError(
            f"{path}: the checkpoint's observation.state has {inputs[STATE][0]} values, "
            f"{adapter.where}'s state keys give {state_width}"
        )
    cameras = {layout.video_key(c.key) for c in adapter.mapping.cameras}
    images = {k for k in inputs if k.startswith(layout.VIDEO_PREFIX)}
    if images - cameras:
        raise CheckpointError(
            f"{path}: the checkpoint sees {sorted(images)}, {adapter.where} sends {sorted(cameras) or 'no camera'}"
        )
    action = config.output_features.get(ACTION)
    action_width = sum(w or 0 for w in adapter.action_widths().values())
    if action is None or tuple(action.shape)[0] != action_width:
        got = "no action" if action is None else f"{tuple(action.shape)[0]} action values"
        raise CheckpointError(
            f"{path}: the checkpoint answers {got}, {adapter.where}'s action keys take {action_width}"
        )
