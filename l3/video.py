"""Camera frames -> H.264 yuv420p MP4 through PyAV (frame i presented at i/fps, from 0)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from l3.mapping import VideoOptions
from l3.stats import PixelStats


def encoder_options(opts: VideoOptions) -> dict[str, str]:
    """libx264 private options.

    x264's macroblock-tree rate control is off: with it (x264 as bundled by PyAV 19) the same frames
    encoded in the same process came out with other bytes now and then (frames 2-3 of an episode, 4 of
    10 videos over 8 conversions), as if it read memory it had not written; without it, 0 of 10 over
    24 conversions. At our 2-frame GOP it saved bytes but cost PSNR (docs/cameras.md).
    """
    return {"crf": str(opts.crf), "preset": opts.preset, "x264-params": "mbtree=0"}


def encode(
    path: str | Path, chunks: Iterable[np.ndarray], fps: int, opts: VideoOptions, stats: PixelStats | None = None
) -> int:
    """Encode (n, H, W, 3) uint8 RGB chunks into one MP4; returns the number of frames written."""
    count = 0
    with av.open(str(path), mode="w", format="mp4") as container:
        stream = None
        for chunk in chunks:
            if stream is None:
                h, w = chunk.shape[1:3]
                stream = container.add_stream(opts.codec, rate=fps)
                stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
                stream.time_base = Fraction(1, fps)
                stream.codec_context.time_base = Fraction(1, fps)
                stream.codec_context.gop_size = opts.gop
                # One encoder thread: x264's automatic frame threads gave different bytes from run to run
                # (and from machine to machine); one thread is reproducible and, at these frame sizes,
                # about 8 % slower (parallelism comes from --workers instead).
                stream.codec_context.thread_count = 1
                stream.options = encoder_options(opts)
            if stats is not None:
                stats.add(chunk)
            for img in chunk:
                frame = av.VideoFrame.from_ndarray(img, format="rgb24")
                frame.pts = count
                count += 1
                container.mux(stream.encode(frame))
        if stream is not None:
            container.mux(stream.encode(None))
    return count


def probe(path: str | Path) -> dict:
    """Codec, pix_fmt, size, frame count (packets, no decoding) and presentation times in seconds."""
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        pts = sorted(float(p.pts * p.time_base) for p in c.demux(s) if p.pts is not None)
        return {
            "codec": s.codec_context.name,
            "pix_fmt": s.codec_context.pix_fmt,
            "width": s.codec_context.width,
            "height": s.codec_context.height,
            "frames": len(pts),
            "pts": pts,
            "audio": len(c.streams.audio) > 0,
        }


def decode(path: str | Path) -> Iterator[np.ndarray]:
    """The frames of an MP4 as (H, W, 3) uint8 RGB arrays, in presentation order."""
    with av.open(str(path)) as c:
        for frame in c.decode(video=0):
            yield frame.to_ndarray(format="rgb24")


def psnr(reference: np.ndarray, decoded: np.ndarray) -> np.ndarray:
    """Per-frame PSNR (dB) of decoded (n, H, W, 3) uint8 frames against the reference frames (inf: identical)."""
    diff = reference.astype(np.float64) - decoded.astype(np.float64)
    mse = np.mean(diff * diff, axis=tuple(range(1, diff.ndim)))
    with np.errstate(divide="ignore"):
        return 10.0 * np.log10(255.0**2 / mse)


class BackgroundEncoder:
    """Encode frames into one MP4 as they come (one at a time, from a simulation loop), in a thread of its own:
    x264 runs beside the caller, and only a few frames are held in memory."""

    def __init__(self, path: str | Path, fps: int, opts: VideoOptions, max_pending: int = 8):
        import queue
        import threading

        self.path = Path(path)
        self.frames = 0
        self._queue: queue.Queue = queue.Queue(maxsize=max_pending)
        self._error: BaseException | None = None

        def frames():
            while (chunk := self._queue.get()) is not None:
                yield chunk

        def run() -> None:
            try:
                self.frames = encode(self.path, frames(), fps, opts)
            except BaseException as exc:  # noqa: BLE001 - re-raised by close() in the caller's thread
                self._error = exc

        self._thread = threading.Thread(target=run, name=f"encode-{self.path.name}", daemon=True)
        self._thread.start()

    def _put(self, item) -> None:
        import queue

        while self._thread.is_alive():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def add(self, frame: np.ndarray) -> None:
        """Queue one (H, W, 3) uint8 RGB frame (dropped once the encoder has failed: :meth:`close` says why)."""
        self._put(np.ascontiguousarray(frame)[None])

    def close(self) -> int:
        """Finish the file; the number of frames written."""
        self._put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self.frames
