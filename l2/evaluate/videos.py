"""Videos of the evaluated episodes (``--videos``): one MP4 per camera of the first episodes, written as they run."""

from __future__ import annotations

from pathlib import Path


class VideoSink:
    """MP4s of the first ``count`` episodes, one per camera: ``DIR/episode_<i>_<camera>.mp4``."""

    def __init__(self, folder: Path, count: int, fps: int):
        from l3.mapping import VideoOptions

        # yuv420p: videos to watch, which every player and browser plays (not H.264's High 4:4:4)
        self.folder, self.count, self.fps, self.opts = folder, count, fps, VideoOptions(pix_fmt="yuv420p")
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

    def add(self, images: dict, running: list[bool]) -> None:
        """Each filmed env's frame of every camera, from ``images`` ``{camera: (num_envs, H, W, 3)}``."""
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
