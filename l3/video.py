"""Camera frames -> H.264 yuv420p MP4 through PyAV (frame i presented at i/fps, from 0)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO

import av
import numpy as np

from l2.format.l2file import one_line
from l3 import layout
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
    path: str | Path | BinaryIO,
    chunks: Iterable[np.ndarray],
    fps: int,
    opts: VideoOptions,
    stats: PixelStats | None = None,
) -> int:
    """Encode (n, H, W, 3) uint8 RGB chunks into one MP4 (a path, or a binary file object); returns the number of
    frames written."""
    count = 0
    with av.open(path if hasattr(path, "write") else str(path), mode="w", format="mp4") as container:
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


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    """File descriptor 2 points at /dev/null inside the block (what C libraries print there goes nowhere)."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def option_problem(opts: VideoOptions) -> tuple[str, str] | None:
    """Whether PyAV takes ``opts``: None, or the first option it refuses as ``(key, why)``. The codec must be an
    H.264 encoder (what the dataset's videos are); then one tiny frame is encoded in memory with the gop, the crf
    and the preset added in turn, so that the first refusal names its option."""
    try:
        codec = av.Codec(opts.codec, "w")
    except Exception as exc:  # noqa: BLE001 - PyAV's errors for an unknown name vary by version
        return "codec", f"{opts.codec!r} is not an encoder this PyAV/FFmpeg has ({one_line(str(exc))})"
    if codec.type != "video" or codec.canonical_name != layout.VIDEO_CODEC:
        return "codec", f"{opts.codec!r} encodes {codec.canonical_name}, not {layout.VIDEO_CODEC} (e.g. libx264)"
    base = VideoOptions(codec=opts.codec)
    steps = (
        ("gop", replace(base, gop=opts.gop)),
        ("crf", replace(base, gop=opts.gop, crf=opts.crf)),
        ("preset", opts),
    )
    frame = np.zeros((1, 16, 16, 3), np.uint8)
    for key, tried in steps:
        try:
            with _stderr_silenced():  # x264 prints its own complaint (x264 [error]: ...) to the process's stderr
                encode(io.BytesIO(), [frame], 10, tried)
        except Exception as exc:  # noqa: BLE001 - whatever PyAV or the encoder says, it refused the option
            why = getattr(exc, "strerror", None) or str(exc)
            return key, f"{getattr(opts, key)!r} refused by {opts.codec} ({one_line(why)})"
    return None


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
