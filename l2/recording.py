"""Recording wiring shared by every source: Isaac Lab's RecorderManager, writing our schema safely.

Isaac Lab's ``HDF5DatasetFileHandler.create`` opens its file with mode ``"w"`` and so truncates an
existing dataset. :class:`L2DatasetFileHandler` refuses that unless the user asked to overwrite, can
append to an existing file (numbering continues, ``data/total`` stays the sum), and stops writing
successful episodes once a quota is reached so that exactly N demos land even when several envs
succeed on the same step.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import h5py
from isaaclab.envs.mdp.recorders.recorders_cfg import (
    InitialStateRecorderCfg,
    PreStepActionsRecorderCfg,
    PreStepFlatPolicyObservationsRecorderCfg,
)
from isaaclab.managers import DatasetExportMode, RecorderManagerBaseCfg, RecorderTerm, RecorderTermCfg
from isaaclab.utils import configclass
from isaaclab.utils.datasets import EpisodeData, HDF5DatasetFileHandler

from l2 import schema

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv, ManagerBasedRLEnvCfg

OnExists = Literal["refuse", "overwrite", "append"]


class L2DatasetFileHandler(HDF5DatasetFileHandler):
    """Isaac Lab's HDF5 handler with a policy for existing files and an optional success quota."""

    def __init__(self, on_exists: OnExists = "refuse", max_successes: int | None = None):
        super().__init__()
        self.on_exists = on_exists
        self.max_successes = max_successes
        self.successes_written = 0
        self.file_path: str | None = None

    def create(self, file_path: str, env_name: str | None = None):
        if not file_path.endswith(".hdf5"):
            file_path += ".hdf5"
        self.file_path = file_path
        if os.path.exists(file_path):
            if self.on_exists == "refuse":
                raise FileExistsError(f"{file_path} exists; pass --append to add demos or --overwrite to replace it")
            if self.on_exists == "append":
                self._open_for_append(file_path, env_name)
                return
        super().create(file_path, env_name)

    def _open_for_append(self, file_path: str, env_name: str | None) -> None:
        with h5py.File(file_path, "r") as f:
            version = f.attrs.get(schema.ATTR_FORMAT_VERSION)
            if schema.DATA_GROUP not in f or version != schema.FORMAT_VERSION:
                raise ValueError(f"{file_path}: cannot append: not an L2 file with format_version=1")
            names = list(f[schema.DATA_GROUP].keys())
            old_env = json.loads(f[schema.DATA_GROUP].attrs.get(schema.ATTR_ENV_ARGS, "{}")).get("env_name")
        if env_name and old_env and old_env != env_name:
            raise ValueError(f"{file_path}:/data: cannot append {env_name} demos to a file of {old_env}")
        indices = [schema.demo_index(n) for n in names]
        if None in indices or sorted(indices) != list(range(len(indices))):
            raise ValueError(f"{file_path}:/data: cannot append: demo groups are not demo_0..demo_{len(names) - 1}")
        self.open(file_path, "a")

    def write_episode(self, episode: EpisodeData, demo_id: int | None = None, compression: bool = True):
        if episode.success and self.max_successes is not None:
            if self.successes_written >= self.max_successes:
                return
        super().write_episode(episode, demo_id, compression)
        self.successes_written += bool(episode.success)


class EpisodeSeedRecorder(RecorderTerm):
    """Stores the env seed on each finished episode (Isaac Lab itself never sets ``seed``)."""

    def record_pre_reset(self, env_ids: Sequence[int] | None):
        if self._env.cfg.seed is not None:
            for env_id in env_ids:
                self._env.recorder_manager.get_episode(env_id).seed = int(self._env.cfg.seed)
        return None, None


@configclass
class EpisodeSeedRecorderCfg(RecorderTermCfg):
    class_type: type = EpisodeSeedRecorder


@configclass
class L2RecorderManagerCfg(RecorderManagerBaseCfg):
    """What every L2 file holds: ``initial_state`` (for replay), ``actions``, ``obs/<term>`` and the seed."""

    record_initial_state = InitialStateRecorderCfg()
    record_pre_step_actions = PreStepActionsRecorderCfg()
    record_pre_step_policy_observations = PreStepFlatPolicyObservationsRecorderCfg()
    record_episode_seed = EpisodeSeedRecorderCfg()


def configure_recording(
    env_cfg: ManagerBasedRLEnvCfg,
    output: str | os.PathLike,
    task: str,
    on_exists: OnExists = "refuse",
    keep_failed: bool = False,
    max_successes: int | None = None,
    recorders: RecorderManagerBaseCfg | None = None,
) -> Path:
    """Point the env's RecorderManager at ``output`` (``<name>_failed.hdf5`` beside it with ``keep_failed``).

    Refuses an existing output (and failed file) up front unless ``on_exists`` says otherwise, so a
    user's dataset is never truncated by accident. Returns the output path.
    """
    output = Path(output)
    if output.suffix != ".hdf5":
        raise ValueError(f"{output}: the output must be an .hdf5 file")
    failed = output.with_name(output.stem + "_failed.hdf5")
    for path in (output, failed) if keep_failed else (output,):
        if path.exists() and on_exists == "refuse":
            raise FileExistsError(f"{path} exists; pass --append to add demos or --overwrite to replace it")
    cfg = recorders if recorders is not None else L2RecorderManagerCfg()
    cfg.dataset_export_dir_path = str(output.parent)
    cfg.dataset_filename = output.stem
    cfg.dataset_export_mode = (
        DatasetExportMode.EXPORT_SUCCEEDED_FAILED_IN_SEPARATE_FILES if keep_failed else DatasetExportMode.EXPORT_SUCCEEDED_ONLY
    )
    cfg.dataset_file_handler_class_type = functools.partial(
        L2DatasetFileHandler, on_exists=on_exists, max_successes=max_successes
    )
    env_cfg.recorders = cfg
    env_cfg.env_name = task  # RecorderManager writes it into data.attrs["env_args"]
    return output


def dataset_handler(env: ManagerBasedEnv) -> L2DatasetFileHandler:
    """The handler writing the successful-episode file (Isaac Lab keeps it private)."""
    return env.recorder_manager._dataset_file_handler
