"""Camera frames -> H.264 yuv420p MP4 through PyAV (frame i presented at i/fps, from 0), converted to yuv420p for
the readers' conversion back (:func:`to_yuv420p`)."""

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

    ``tune=psnr`` (x264's adaptive quantization and psycho-visual optimizations off): those spend bits on what looks
    sharp rather than on what is close to the frame (PSNR per scene: docs/cameras.md).

    x264's macroblock-tree rate control is off: with it (x264 as bundled by PyAV 19) the same frames
    encoded in the same process came out with other bytes now and then (frames 2-3 of an episode, 4 of
    10 videos over 8 conversions), as if it read memory it had not written; without it, 0 of 10 over
    24 conversions. At our 2-frame GOP it saved bytes but cost PSNR (docs/cameras.md).
    """
    return {"crf": str(opts.crf), "preset": opts.preset, "tune": "psnr", "x264-params": "mbtree=0"}


READER_LUMA = 255 / 219
READER_CHROMA = ((0.0, 1.596027), (-0.391762, -0.812968), (2.017232, 0.0))
READER_OFFSET = (-223.87, 134.06, -277.73)
"""How the readers turn yuv420p back into RGB: channel c (R, G, B) of a pixel is
``READER_LUMA * Y + READER_CHROMA[c] . (U, V) + READER_OFFSET[c]``, rounded and clipped to 0..255, where U, V are
the one chroma sample of the pixel's 2x2 block (repeated, not interpolated). That is FFmpeg's swscale on its fast
path, which PyAV's ``to_ndarray(format="rgb24")`` takes, and torchvision's pyav backend with it: LeRobot's
``decode_video_frames`` (pyav) returns the same RGB to the bit (bench/video_quality.py checks it). The coefficients
are BT.601's, limited range; the offsets are swscale's, 0.9-1.5 below BT.601's own (that path rounds down), fitted
to its output; tests/test_l3_video.py fits them again against the installed PyAV."""

_FIX = 16
"""Fraction bits of the fixed-point coefficients of :func:`to_yuv420p`."""


def _fixed_point() -> tuple[tuple[int, ...], tuple[int, ...], int, int, int, int, int, int]:
    """The integer coefficients of :func:`to_yuv420p`, from the reader model in plain Python floats (the same on
    every machine). With C the 3x2 chroma matrix and P = I - 1/3 the projection that removes a change common to R,
    G and B (what Y adds): U, V = (C'PC)^-1 C'P (mean - offset); Y = (R + G + B - sum(offset) - sum(C) . (U, V)) /
    (3 * luma)."""
    c, o = READER_CHROMA, READER_OFFSET
    pc = [[c[i][k] - sum(c[j][k] for j in range(3)) / 3 for k in range(2)] for i in range(3)]  # P C
    m = [[sum(c[i][a] * pc[i][b] for i in range(3)) for b in range(2)] for a in range(2)]  # C'PC
    det = m[0][0] * m[1][1] - m[0][1] * m[1][0]
    inv = [[m[1][1] / det, -m[0][1] / det], [-m[1][0] / det, m[0][0] / det]]
    a = [[inv[r][0] * pc[i][0] + inv[r][1] * pc[i][1] for i in range(3)] for r in range(2)]  # (C'PC)^-1 (PC)'

    def fx(x: float) -> int:
        return round(x * (1 << _FIX))

    # U, V from the block's sum of 4 pixels; + 0.5 so that the shift rounds to nearest
    uw, vw = (tuple(fx(w / 4) for w in row) for row in a)
    u0, v0 = (fx(0.5 - sum(w * off for w, off in zip(row, o, strict=True))) for row in a)
    g = 1 / (3 * READER_LUMA)
    return uw, vw, u0, v0, fx(g), fx(0.5 - g * sum(o)), fx(g * sum(r[0] for r in c)), fx(g * sum(r[1] for r in c))


_UW, _VW, _U0, _V0, _YG, _Y0, _YU, _YV = _fixed_point()


def to_yuv420p(frames: np.ndarray) -> np.ndarray:
    """(n, H, W, 3) uint8 RGB, H and W even -> (n, H * 3 // 2, W) uint8 yuv420p: the Y plane, then U, then V, as
    ``av.VideoFrame.from_ndarray(..., format="yuv420p")`` takes them.

    Chosen for the readers' conversion back (:data:`READER_OFFSET`), least squares in RGB (what PSNR measures): each
    2x2 block's U, V are BT.601's chroma of the block's mean color, and each pixel's Y then puts its R + G + B where
    the frame has it, under that chroma (the three channels weighed equally, as PSNR weighs them). FFmpeg's own
    conversion (what PyAV does with RGB frames) takes each pixel's BT.601 luma instead and filters the chroma: at a
    colored edge the pixels of a block share one chroma and their luma does not make up for it. Integer
    arithmetic throughout: the same planes on every machine."""
    n, h, w, _ = frames.shape
    p = np.moveaxis(frames, -1, 1).astype(np.int32, order="C")  # (n, 3, H, W): each channel a plane
    rows = p[:, :, 0::2] + p[:, :, 1::2]
    block = rows[..., 0::2] + rows[..., 1::2]  # (n, 3, H/2, W/2): each 2x2 block's sums
    u = block[:, 0] * _UW[0] + block[:, 1] * _UW[1] + block[:, 2] * _UW[2] + _U0
    v = block[:, 0] * _VW[0] + block[:, 1] * _VW[1] + block[:, 2] * _VW[2] + _V0
    for plane in (u, v):
        np.right_shift(plane, _FIX, out=plane)
        np.clip(plane, 0, 255, out=plane)
    y = p[:, 0] + p[:, 1]
    y += p[:, 2]
    y *= _YG
    per_block = np.repeat(_Y0 - _YU * u - _YV * v, 2, axis=-1)  # (n, H/2, W): for both rows of each block
    y[:, 0::2] += per_block
    y[:, 1::2] += per_block
    np.right_shift(y, _FIX, out=y)
    np.clip(y, 0, 255, out=y)
    out = np.empty((n, h * w * 3 // 2), np.uint8)
    out[:, : h * w] = y.reshape(n, -1)
    out[:, h * w : h * w * 5 // 4] = u.reshape(n, -1)
    out[:, h * w * 5 // 4 :] = v.reshape(n, -1)
    return out.reshape(n, h * 3 // 2, w)


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
            for img in chunk:  # one frame at a time: its integers stay in the CPU's cache (faster than a chunk)
                frame = av.VideoFrame.from_ndarray(to_yuv420p(img[None])[0], format="yuv420p")
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
