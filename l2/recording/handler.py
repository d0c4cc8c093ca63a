"""Recording wiring shared by every source: Isaac Lab's RecorderManager, writing our schema safely.

Isaac Lab's ``HDF5DatasetFileHandler.create`` opens its file with mode ``"w"`` and so truncates an
existing dataset. :class:`L2DatasetFileHandler` refuses that unless the user asked to overwrite, can
append to an existing file (numbering continues, ``data/total`` stays the sum; demos whose obs terms
differ from the file's are refused), stops writing successful episodes once a quota is reached so that
exactly N demos land even when several envs succeed on the same step, writes the camera frames that
:mod:`l2.recording.camera_frames` streamed to disk, and writes each episode whole or not at all.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import functools
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
from isaaclab.envs.mdp.recorders.recorders_cfg import (
    InitialStateRecorderCfg,
    PreStepActionsRecorderCfg,
    PreStepFlatPolicyObservationsRecorderCfg,
)
from isaaclab.managers import DatasetExportMode, RecorderManagerBaseCfg, RecorderTerm, RecorderTermCfg
from isaaclab.utils import configclass
from isaaclab.utils.datasets import EpisodeData, HDF5DatasetFileHandler

from l2.format import atomic, schema
from l2.format import metadata as file_metadata
from l2.format.journal import JournaledFile
from l2.format.l2file import L2File, L2FileError, describe_obs_layout, obs_layout
from l2.recording.camera_frames import CameraFramesRecorder, CameraFramesRecorderCfg, SpooledFrames, image_groups
from l2.recording.errors import RecordingError, RecordingIOError
from l2.recording.output import OnExists, check_output

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv, ManagerBasedRLEnvCfg

WRITE_HEADROOM = 1 << 20
"""Free bytes an episode's write needs beyond its data (HDF5 metadata, chunk indices, attributes)."""


class L2DatasetFileHandler(HDF5DatasetFileHandler):
    """Isaac Lab's HDF5 handler with a policy for existing files and an optional success quota."""

    def __init__(
        self,
        on_exists: OnExists = "refuse",
        max_successes: int | None = None,
        source: str | None = None,
        joins: str | None = None,
        env_args: dict | None = None,
    ):
        super().__init__()
        self.extra_env_args = dict(env_args or {})
        """Added to the ``env_args`` Isaac Lab writes (what ``actions`` holds when not an end-effector pose; what the
        recording says about its env, :func:`add_file_metadata`)."""
        self.on_exists = on_exists
        self.max_successes = max_successes
        self.source = source
        """Written as each demo's ``source`` attribute (which L3 tags the episode with), when given."""
        self.joins = joins
        """The file this one's demos will be merged into (a worker's shard: l2.recording.workers), whose demos'
        obs terms this run must record."""
        self.successes_written = 0
        self.file_path: str | None = None
        self._layout_checked = False
        self._metadata_fitted = False
        self._defer_env_args = False
        self._pending_env_args: dict = {}
        self._to_create: tuple[str, str | None] | None = None
        self._creating: str | None = None
        """The new file being made, until its first demo is in (then it is renamed to ``file_path``)."""
        self._created = False
        """This run made the file."""
        self._abandoned = False
        self._reserved = False
        self._journal: JournaledFile | None = None
        """The undo journal of the file appended to (a file being made needs none: it is renamed into place)."""

    def create(self, file_path: str, env_name: str | None = None):
        if not file_path.endswith(".hdf5"):
            file_path += ".hdf5"
        self.file_path = file_path
        if os.path.exists(file_path):
            if self.on_exists == "refuse":
                raise FileExistsError(f"{file_path} exists; pass --append to add demos or --overwrite to replace it")
            if self.on_exists == "append":
                self._open_for_append(file_path, env_name)
                self._defer_env_args = True
                return
        # Made with the first demo: a run that writes none (an error before it, no success) leaves no
        # file, and --overwrite replaces the old file only once there is something to replace it with.
        # Its folder is made now: the camera frame spool goes beside it from the first step.
        os.makedirs(os.path.dirname(file_path) or ".", exist_ok=True)
        self._to_create = (file_path, env_name)
        self._defer_env_args = True

    def _create_now(self) -> None:
        # Built beside the target with its first demo, and renamed into place (_publish_created): a kill or a
        # full disk at any moment leaves the old state or a valid file, never a half-created HDF5 file.
        file_path, env_name = self._to_create
        self._creating = file_path.removesuffix(".hdf5") + ".creating.hdf5"
        self._to_create = None
        try:
            super().create(self._creating, env_name)
        except Exception as exc:
            raise RecordingIOError(atomic.os_error(exc) or OSError(str(exc)), self.file_path) from exc

    def _publish_created(self) -> None:
        super().close()
        atomic.publish(self._creating, self.file_path)
        self._creating = None
        self._created = True
        self.open(self.file_path, "a")

    def open(self, file_path: str, mode: str = "r"):
        if mode == "r":
            return super().open(file_path, mode)
        # Every flush all or nothing: a kill -9 in the middle of an episode's write leaves the file as the last
        # flush left it (l2.format.journal), not a file HDF5 can no longer open.
        self._journal = JournaledFile(file_path)
        try:
            super().open(self._journal, "r+")
        except BaseException:
            self._journal.close()
            self._journal = None
            raise

    def flush(self):
        if self._to_create is None and not self._abandoned:
            super().flush()
            if self._journal is not None:
                self._journal.commit()

    def close(self):
        if self._abandoned:
            return
        super().close()
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        if self._creating is not None:  # its first demo was refused: no file
            Path(self._creating).unlink(missing_ok=True)
            self._creating = None

    def abandon(self) -> str:
        """After a failed write: close the file without writing anything more (it keeps what the last flush put
        on disk; a file being made is removed), and say what it holds now."""
        if self._abandoned or self.file_path is None:
            return ""
        self._abandoned = True
        if self._journal is not None:  # its writes dropped, then rolled back to the last flush
            self._journal.discard()
            with contextlib.suppress(Exception):
                self._hdf5_file_stream.close()
            self._hdf5_file_stream = None
            self._journal.close()
            self._journal = None
        if self._hdf5_file_stream is not None:
            atomic.abandon_hdf5(self._hdf5_file_stream)
            self._hdf5_file_stream = None
            # Opened and closed again, untouched, to clear the "open for writing" flag the abandoned handle left
            # in the superblock (one byte in place: it needs no free space).
            with contextlib.suppress(Exception):
                h5py.File(self._creating or self.file_path, "r+").close()
        if self._reserved:
            with contextlib.suppress(OSError):
                atomic.release_space(self._creating or self.file_path)
        if self._creating is not None:
            Path(self._creating).unlink(missing_ok=True)
        path, written = Path(self.file_path), self.successes_written
        if not path.exists() or (not self._created and self.on_exists != "append"):
            return f"{path.name}: not written" + (" (the existing file is untouched)" if path.exists() else "")
        from l2.format.validate import validate_file

        report = validate_file(path)
        if not report.ok:
            return f"{path.name}: damaged ({report.violations[0]})"
        ours = "all" if report.episodes == written else str(written)
        return f"{path.name} intact: {report.episodes} demos" + (f" ({ours} from this run)" if written else "")

    def add_env_args(self, env_args: dict):
        # Isaac Lab calls this before every export; written together with the episode (or not at all).
        env_args = {**env_args, **self.extra_env_args}
        if self._defer_env_args:
            self._pending_env_args.update(env_args)
        else:
            super().add_env_args(env_args)

    def _open_for_append(self, file_path: str, env_name: str | None) -> None:
        try:
            f = L2File(file_path)
        except L2FileError as exc:
            raise ValueError(f"{file_path}: cannot append: not an L2 file with format_version=1 ({exc})") from None
        with f:
            if f.h5.attrs.get(schema.ATTR_FORMAT_VERSION) != schema.FORMAT_VERSION:
                raise ValueError(f"{file_path}: cannot append: not an L2 file with format_version=1")
            names = list(f.data.keys())
            try:
                old_env = f.env_name
            except L2FileError as exc:
                raise ValueError(f"cannot append: {exc}") from None
        if env_name and old_env and old_env != env_name:
            raise ValueError(f"{file_path}:/data: cannot append {env_name} demos to a file of {old_env}")
        indices = [schema.demo_index(n) for n in names]
        if None in indices or sorted(indices) != list(range(len(indices))):
            raise ValueError(f"{file_path}:/data: cannot append: demo groups are not demo_0..demo_{len(names) - 1}")
        self.open(file_path, "a")

    def write_episode(self, episode: EpisodeData, demo_id: int | None = None, compression: bool = True):
        """Isaac Lab's write plus the episode's streamed frames; on any error the file stays as it was."""
        if episode.success and self.max_successes is not None and self.successes_written >= self.max_successes:
            return
        if episode.is_empty():
            return
        streamed = _pop_streamed(episode.data)
        need = _nbytes(episode.data) + sum(f.stored_bytes for f in streamed.values()) + WRITE_HEADROOM
        self._check_free_space(need)
        if self._to_create is not None:
            self._create_now()
        self._reserve(need)
        if not self._layout_checked:
            self._check_layout(_episode_obs_layout(episode.data, streamed))
        data = self._hdf5_data_group
        name = schema.demo_name(self._demo_count if demo_id is None else demo_id)
        existed, count, total = name in data, self._demo_count, data.attrs[schema.ATTR_TOTAL]
        env_args = data.attrs.get(schema.ATTR_ENV_ARGS)
        if not self._metadata_fitted:
            self._fit_metadata(episode.data, streamed)
        try:
            if self._pending_env_args:
                super().add_env_args(self._pending_env_args)
            super().write_episode(episode, demo_id, compression)
            demo = data[name]
            if self.source is not None:
                demo.attrs[schema.ATTR_SOURCE] = self.source
            for attr, value in (
                (schema.ATTR_INSTRUCTION, episode_instruction(episode)),
                (schema.ATTR_SCENE, episode_scene(episode)),
            ):
                if value is not None:
                    demo.attrs[attr] = value
            for path, frames in streamed.items():
                samples = int(demo.attrs[schema.ATTR_NUM_SAMPLES])
                if frames.shape[0] != samples:
                    raise ValueError(f"{path} has {frames.shape[0]} frames for {samples} samples")
                parent, _, term = path.rpartition("/")
                frames.copy_to(demo.require_group(parent), term)
        except Exception as exc:
            if (error := atomic.os_error(exc)) is not None:  # undoing it would write too: abandon() instead
                raise RecordingIOError(error, self.file_path) from exc
            if not existed and name in data:
                del data[name]
            data.attrs[schema.ATTR_TOTAL] = total
            if env_args is not None:
                data.attrs[schema.ATTR_ENV_ARGS] = env_args
            self._demo_count = count
            raise RecordingError(
                f"{self.file_path}:/data/{name}: the episode could not be written ({exc}); "
                "the file is as it was before it"
            ) from exc
        self._pending_env_args = {}
        # On disk now, not after the other envs' episodes of this step (Isaac Lab flushes once per export
        # call): a kill -9 later in the step loses nothing that was written.
        try:
            self.flush()
            if self._reserved:
                atomic.release_space(self._creating or self.file_path)
                self._reserved = False
            if self._creating is not None:
                self._publish_created()
        except Exception as exc:
            raise RecordingIOError(atomic.os_error(exc) or OSError(str(exc)), self.file_path) from exc
        self.successes_written += bool(episode.success)

    def _fit_metadata(self, data: dict, streamed: dict[str, SpooledFrames]) -> None:
        """Leave out of the file's metadata (:func:`add_file_metadata`) the column names and cameras that this run's
        first episode does not bear out, with a warning: a file never names its columns wrongly."""
        self._metadata_fitted = True
        meta = file_metadata.read(self.extra_env_args)
        shapes = {schema.ACTIONS: tuple(data[schema.ACTIONS].shape)} if schema.ACTIONS in data else {}
        obs = data.get(schema.OBS, {})
        shapes.update({f"{schema.OBS}/{k}": tuple(v.shape) for k, v in obs.items() if hasattr(v, "shape")})
        shapes.update({path: tuple(frames.shape) for path, frames in streamed.items()})
        for path, message in file_metadata.fit_problems(meta, shapes):
            print(f"warning: {self.file_path}: not recorded: {message}", file=sys.stderr, flush=True)
            for args in (self.extra_env_args, self._pending_env_args):
                args.get(schema.ENV_ARGS_COLUMNS, {}).pop(path, None)
                args.get(schema.ENV_ARGS_CAMERAS, {}).pop(path.removeprefix(f"{schema.OBS}/"), None)
        for args in (self.extra_env_args, self._pending_env_args):
            for key in (schema.ENV_ARGS_COLUMNS, schema.ENV_ARGS_CAMERAS):
                if key in args and not args[key]:
                    del args[key]

    def _check_free_space(self, need: int) -> None:
        """Stop before writing an episode (``need`` bytes at most) that the disk has no room for: a write that
        fails half-way cannot be undone (undoing writes too, and the HDF5 library may crash on a failed flush),
        while one never started leaves the file as the last demo left it."""
        if atomic.free_bytes(self.file_path) < need:
            full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.file_path)
            raise RecordingIOError(full, self.file_path, need)

    def _reserve(self, need: int) -> None:
        """Reserve the episode's bytes on disk before writing them (:func:`l2.format.atomic.reserve_space`): a
        disk that another process fills after the check above still has room for this episode."""
        path = self._creating or self.file_path
        try:
            self._reserved = atomic.reserve_space(path, need)
        except OSError as exc:
            raise RecordingIOError(exc, self.file_path, need) from None

    def check_obs_shapes(self, layout: dict[str, tuple]) -> None:
        """Refuse, before any step, a run whose obs terms (names, shapes) differ from the demos of the file it
        appends to; ``layout`` is what the env will record (:func:`expected_obs_layout`). The dtypes are checked
        with the first demo (:meth:`_check_layout`)."""
        first = self._hdf5_data_group.get(schema.demo_name(0)) if self._hdf5_file_stream is not None else None
        path = self.file_path
        if first is None and self.joins is not None:
            with L2File(self.joins, guard=False, locking=False) as f:  # validated by the driver
                first, path = (f.group(f.demos[0]) if f.demos else None), self.joins
                existing = obs_layout(first) if first is not None else None
        elif first is not None:
            existing = obs_layout(first)
        if first is None:
            return
        if {k: shape for k, (shape, _) in existing.items()} != {k: shape for k, (shape, _) in layout.items()}:
            raise RecordingError(self._layout_message(existing, layout, path))

    def _check_layout(self, layout: dict[str, tuple]) -> None:
        """Refuse demos whose obs terms (names, shapes, dtypes) differ from the demos already in the file."""
        first = self._hdf5_data_group.get(schema.demo_name(0))
        existing = obs_layout(first) if first is not None else layout
        if existing != layout:
            raise RecordingError(self._layout_message(existing, layout, self.file_path))
        self._layout_checked = True

    def _layout_message(self, existing: dict, layout: dict, path: str) -> str:
        """What differs between the file's obs terms and this run's, e.g. ``its demos record table_cam[224x224x3]
        uint8, which this run does not``."""
        only_file = {k: v for k, v in existing.items() if k not in layout}
        only_run = {k: v for k, v in layout.items() if k not in existing}
        changed = [k for k in existing if k in layout and existing[k] != layout[k]]
        parts = [f"its demos record {describe_obs_layout(only_file)}, which this run does not"] if only_file else []
        parts += [f"this run records {describe_obs_layout(only_run)}, which its demos do not"] if only_run else []
        parts += [
            f"{k} is {describe_obs_layout({'': existing[k]})} in its demos, {describe_obs_layout({'': layout[k]})} "
            "in this run"
            for k in changed
        ]
        return f"{path}: cannot append: {'; '.join(parts)} (write to another file, or --overwrite)"


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


class EpisodeLanguageRecorder(RecorderTerm):
    """Stores on each finished episode its instruction and, with ``presets=variety``, the scene values drawn for
    it (:func:`l2.lift.variety.episode_language`); the handler writes them as the demo's attributes."""

    def record_pre_reset(self, env_ids: Sequence[int] | None):
        from l2.lift.variety import episode_language

        for env_id in range(self._env.num_envs) if env_ids is None else env_ids:
            episode = self._env.recorder_manager.get_episode(int(env_id))
            episode.instruction, episode.scene = episode_language(self._env, int(env_id))
        return None, None


@configclass
class EpisodeLanguageRecorderCfg(RecorderTermCfg):
    class_type: type = EpisodeLanguageRecorder


def episode_instruction(episode: EpisodeData) -> str | None:
    return getattr(episode, "instruction", None)


def episode_scene(episode: EpisodeData) -> str | None:
    return getattr(episode, "scene", None)


class EpisodeGateRecorder(RecorderTerm):
    """Drops, instead of exporting, the episodes of envs whose ``counted`` flag is off: an evaluation counts a
    fixed set of episodes, and what an env runs after its counted episode ended is never written."""

    def __init__(self, cfg: RecorderTermCfg, env: ManagerBasedEnv):
        import torch

        super().__init__(cfg, env)
        self.counted = torch.zeros(env.num_envs, dtype=torch.bool)
        """Set by the evaluation for the envs running a counted episode; off until then (the resets that build
        the env and its wrappers export nothing)."""

    def record_pre_reset(self, env_ids: Sequence[int] | None):
        # Runs after the other terms' pre-reset (it is the last term), before Isaac Lab exports: an emptied
        # episode is skipped by the export, and its streamed frames are released by the reset that follows.
        for env_id in range(self._env.num_envs) if env_ids is None else env_ids:
            if not self.counted[int(env_id)]:
                self._env.recorder_manager.get_episode(int(env_id)).data = {}
        return None, None


@configclass
class EpisodeGateRecorderCfg(RecorderTermCfg):
    class_type: type = EpisodeGateRecorder


@configclass
class L2RecorderManagerCfg(RecorderManagerBaseCfg):
    """What every L2 file holds: ``initial_state`` (for replay), ``actions``, ``obs/<term>`` of the policy
    (state) and camera groups, the seed, the instruction (and with ``presets=variety`` the scene values)."""

    record_initial_state = InitialStateRecorderCfg()
    record_pre_step_actions = PreStepActionsRecorderCfg()
    record_pre_step_policy_observations = PreStepFlatPolicyObservationsRecorderCfg()
    record_camera_frames = CameraFramesRecorderCfg()
    record_episode_seed = EpisodeSeedRecorderCfg()
    record_episode_language = EpisodeLanguageRecorderCfg()


def configure_recording(
    env_cfg: ManagerBasedRLEnvCfg,
    output: str | os.PathLike,
    task: str,
    on_exists: OnExists = "refuse",
    keep_failed: bool = False,
    max_successes: int | None = None,
    recorders: RecorderManagerBaseCfg | None = None,
    source: str | None = None,
    joins: str | None = None,
) -> Path:
    """Point the env's RecorderManager at ``output`` (``<name>_failed.hdf5`` beside it with ``keep_failed``),
    tagging each demo with ``source`` when given; ``joins``: see :attr:`L2DatasetFileHandler.joins`.

    Refuses an existing output (and failed file) up front unless ``on_exists`` says otherwise, so a
    user's dataset is never truncated by accident. Returns the output path.
    """
    output = check_output(output, on_exists, keep_failed)
    if max_successes:
        warn_if_short_of_space(env_cfg, output, max_successes)
    cfg = recorders if recorders is not None else L2RecorderManagerCfg()
    cfg.dataset_export_dir_path = str(output.parent)
    cfg.dataset_filename = output.stem
    cfg.dataset_export_mode = (
        DatasetExportMode.EXPORT_SUCCEEDED_FAILED_IN_SEPARATE_FILES
        if keep_failed
        else DatasetExportMode.EXPORT_SUCCEEDED_ONLY
    )
    extra = {} if records_ee_poses(env_cfg, cfg) else {schema.ENV_ARGS_ACTION_SPACE: schema.JOINT_POSITION_ACTIONS}
    cfg.dataset_file_handler_class_type = functools.partial(
        L2DatasetFileHandler,
        on_exists=on_exists,
        max_successes=max_successes,
        source=source,
        joins=joins,
        env_args=extra,
    )
    env_cfg.recorders = cfg
    env_cfg.env_name = task  # RecorderManager writes it into data.attrs["env_args"]
    return output


def add_file_metadata(env: ManagerBasedEnv) -> None:
    """Once the env is built: what its files will say about it beside ``env_name`` (robot, control rate, cameras,
    column names, relative datasets: :func:`l2.recording.metadata.describe`), written with their first demo."""
    from l2.recording.metadata import describe

    handlers = _file_handlers(getattr(env, "recorder_manager", None))
    if not handlers:
        return
    terms = [getattr(term, "class_type", None) for term in vars(env.cfg.recorders).values()]
    if any(getattr(cls, "records_ee_poses", False) for cls in terms):
        actions = "ee_pose"
    elif any(getattr(cls, "records_joint_targets", False) for cls in terms):
        actions = "joint_targets"
    else:
        actions = "env"
    try:
        meta = describe(env, ("policy", SCENE_GROUP), image_groups(env), actions)
    except Exception as exc:  # an env laid out as none before: the demos are still worth recording
        print(f"warning: the file will not say what its columns are ({exc!r})", file=sys.stderr, flush=True)
        return
    for handler in handlers:
        handler.extra_env_args.update(copy.deepcopy(meta))  # each handler fits its own (_fit_metadata)


def records_ee_poses(env_cfg: ManagerBasedRLEnvCfg, recorders: RecorderManagerBaseCfg) -> bool:
    """Whether the file's ``actions`` will be IK-absolute end-effector poses (the env's own action, or the pose a
    recorder term writes for it, one whose class says ``records_ee_poses``) rather than joint-position targets."""
    from isaaclab.envs.mdp.actions.actions_cfg import DifferentialInverseKinematicsActionCfg

    terms = (getattr(term, "class_type", None) for term in vars(recorders).values())
    if any(getattr(cls, "records_ee_poses", False) for cls in terms):
        return True
    arm = env_cfg.actions.arm_action
    return isinstance(arm, DifferentialInverseKinematicsActionCfg) and not arm.controller.use_relative_mode


def _pop_streamed(data: dict, prefix: str = "") -> dict[str, SpooledFrames]:
    """Remove the streamed frames from an episode's data: ``{"obs/table_cam": SpooledFrames, ...}``."""
    out = {}
    for key, value in list(data.items()):
        if isinstance(value, SpooledFrames):
            out[prefix + key] = data.pop(key)
        elif isinstance(value, dict):
            out.update(_pop_streamed(value, f"{prefix}{key}/"))
    return out


CAMERA_BYTES_PER_PIXEL = 0.18
"""A camera frame's bytes in the file per pixel, gzip-compressed, about: 13 KiB for the 224x224 table camera and
2 KiB for the wrist camera (docs/benchmarks.md), so ~0.09 per pixel (of 3 bytes) each, two cameras on average."""
STATE_BYTES_PER_STEP = 1024
"""A step's state terms, actions and their chunk overhead in the file, about (they are ~60 float32)."""


def demo_bytes_at_most(env_cfg: ManagerBasedRLEnvCfg) -> tuple[int, int]:
    """``(bytes, steps)``: about how much one demo can take in the file, an episode of the longest length."""
    from isaaclab.sensors import CameraCfg

    steps = math.ceil(env_cfg.episode_length_s / (env_cfg.sim.dt * env_cfg.decimation))
    pixels = sum(cam.width * cam.height for cam in vars(env_cfg.scene).values() if isinstance(cam, CameraCfg))
    return int(steps * (STATE_BYTES_PER_STEP + CAMERA_BYTES_PER_PIXEL * pixels)), steps


def warn_if_short_of_space(env_cfg: ManagerBasedRLEnvCfg, output: Path, num_demos: int) -> None:
    """A warning (the run goes on) when the output's filesystem may not hold ``num_demos`` demos and the camera
    spool of the running episodes: a full disk ends the run at the demo that does not fit."""
    per_demo, steps = demo_bytes_at_most(env_cfg)
    need, free = per_demo * (num_demos + env_cfg.scene.num_envs), atomic.free_bytes(output)
    if free < need:
        print(
            f"warning: {output}: {free / 1e6:.1f} MB free on that filesystem; {num_demos} demos may take up to "
            f"{need / 1e6:.0f} MB ({per_demo / 1e6:.1f} MB per demo of up to {steps} steps, and the running "
            "episodes' frames)",
            file=sys.stderr,
            flush=True,
        )


def _nbytes(data: dict) -> int:
    """Bytes of an episode's tensors (uncompressed: at most what they take in the file)."""
    return sum(_nbytes(v) if isinstance(v, dict) else v.numel() * v.element_size() for v in data.values())


SCENE_GROUP = "scene"
"""Observation group of state terms recorded beside a concatenated policy group (RL rollouts with
``presets=variety``), written as ``obs/<term>`` like the policy's own."""


def expected_obs_layout(env: ManagerBasedEnv) -> dict[str, tuple]:
    """The obs layout (:func:`l2.format.l2file.obs_layout`) that the env's recorders will write, known once the
    env is built: the ``policy`` and ``scene`` groups' terms (float32) and the image groups' images (uint8)."""
    manager = env.observation_manager
    layout = {}
    groups = [("policy", "float32"), (SCENE_GROUP, "float32"), *((group, "uint8") for group in image_groups(env))]
    for group, dtype in groups:
        if group in manager.active_terms:
            for name, shape in zip(manager.active_terms[group], manager.group_obs_term_dim[group], strict=True):
                layout[name] = (tuple(shape), dtype)
    return dict(sorted(layout.items()))


def check_append_layout(env: ManagerBasedEnv) -> None:
    """Refuse at once a run appending demos whose obs terms the file's demos do not have (see
    :meth:`L2DatasetFileHandler.check_obs_shapes`); nothing to do for a new file or without recorders."""
    handlers = _file_handlers(getattr(env, "recorder_manager", None))
    if handlers:
        layout = expected_obs_layout(env)
        for handler in handlers:
            handler.check_obs_shapes(layout)


def _episode_obs_layout(data: dict, streamed: dict[str, SpooledFrames]) -> dict[str, tuple]:
    """What :func:`l2.format.l2file.obs_layout` will read back from this episode once written."""
    layout = {}

    def walk(node: dict, prefix: str) -> None:
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}/")
            else:
                layout[prefix + key] = (tuple(value.shape[1:]), str(value[:0].cpu().numpy().dtype))

    walk(data.get(schema.OBS, {}), "")
    for path, frames in streamed.items():
        if path.startswith(schema.OBS + "/"):
            layout[path[len(schema.OBS) + 1 :]] = (tuple(frames.shape[1:]), "uint8")
    return dict(sorted(layout.items()))


def close_after_io_error(env: ManagerBasedEnv) -> str:
    """Remove the camera spool and abandon the env's dataset files (:meth:`L2DatasetFileHandler.abandon`): what
    is kept, e.g. ``scripted_lift_cube.hdf5 intact: 6 demos (2 from this run); the episodes in flight were not
    written``."""
    manager = env.recorder_manager
    for term in getattr(manager, "_terms", {}).values():
        if isinstance(term, CameraFramesRecorder):
            term.close(None)
    kept = [h.abandon() for h in _file_handlers(manager)]
    return "; ".join([k for k in kept if k] + ["the episodes in flight were not written"])


def dataset_handler(env: ManagerBasedEnv) -> L2DatasetFileHandler:
    """The handler writing the successful-episode file (Isaac Lab keeps it private)."""
    return env.recorder_manager._dataset_file_handler


def _file_handlers(manager) -> list[L2DatasetFileHandler]:
    """The recorder manager's L2 file handlers (none when it records nothing)."""
    names = ("_dataset_file_handler", "_failed_episode_dataset_file_handler")
    return [h for h in (getattr(manager, n, None) for n in names) if isinstance(h, L2DatasetFileHandler)]
