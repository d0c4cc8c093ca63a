"""Camera frames -> H.264 MP4 through PyAV (frame i presented at i/fps, from 0), yuv420p or yuv444p, converted for the
readers' conversion back (:func:`to_yuv420p`, :func:`to_yuv444p`); ``pix_fmt: auto`` picks per camera
(:func:`choose_pix_fmt`)."""

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
    """libx264 private options of resolved ``opts`` (:meth:`VideoOptions.resolved`: a crf).

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
READER_OFFSET_444 = (-222.90, 135.59, -276.79)
"""The offsets of the readers' yuv444p -> RGB (swscale's other path, with each pixel's own U, V): BT.601's own,
rounded to nearest; the coefficients are those of yuv420p."""

_FIX = 16
"""Fraction bits of the fixed-point coefficients of :func:`to_yuv420p` and :func:`to_yuv444p`."""


def _fixed_point(
    offset: tuple[float, ...], pixels: int
) -> tuple[tuple[int, ...], tuple[int, ...], int, int, int, int, int, int]:
    """The integer coefficients of a conversion whose chroma sample covers ``pixels`` pixels, for the reader model
    with ``offset``, in plain Python floats (the same on every machine). With C the 3x2 chroma matrix and P = I - 1/3
    the projection that removes a change common to R, G and B (what Y adds): U, V = (C'PC)^-1 C'P (mean - offset);
    Y = (R + G + B - sum(offset) - sum(C) . (U, V)) / (3 * luma)."""
    c, o = READER_CHROMA, offset
    pc = [[c[i][k] - sum(c[j][k] for j in range(3)) / 3 for k in range(2)] for i in range(3)]  # P C
    m = [[sum(c[i][a] * pc[i][b] for i in range(3)) for b in range(2)] for a in range(2)]  # C'PC
    det = m[0][0] * m[1][1] - m[0][1] * m[1][0]
    inv = [[m[1][1] / det, -m[0][1] / det], [-m[1][0] / det, m[0][0] / det]]
    a = [[inv[r][0] * pc[i][0] + inv[r][1] * pc[i][1] for i in range(3)] for r in range(2)]  # (C'PC)^-1 (PC)'

    def fx(x: float) -> int:
        return round(x * (1 << _FIX))

    # U, V from the sum over the sample's pixels; + 0.5 so that the shift rounds to nearest
    uw, vw = (tuple(fx(w / pixels) for w in row) for row in a)
    u0, v0 = (fx(0.5 - sum(w * off for w, off in zip(row, o, strict=True))) for row in a)
    g = 1 / (3 * READER_LUMA)
    return uw, vw, u0, v0, fx(g), fx(0.5 - g * sum(o)), fx(g * sum(r[0] for r in c)), fx(g * sum(r[1] for r in c))


_COEF = {"yuv420p": _fixed_point(READER_OFFSET, 4), "yuv444p": _fixed_point(READER_OFFSET_444, 1)}


def _chroma(sums: np.ndarray, pix_fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """U, V (int32) from (n, 3, h, w) int32 sums of R, G, B over each chroma sample's pixels."""
    uw, vw, u0, v0 = _COEF[pix_fmt][:4]
    u = sums[:, 0] * uw[0] + sums[:, 1] * uw[1] + sums[:, 2] * uw[2] + u0
    v = sums[:, 0] * vw[0] + sums[:, 1] * vw[1] + sums[:, 2] * vw[2] + v0
    for plane in (u, v):
        np.right_shift(plane, _FIX, out=plane)
        np.clip(plane, 0, 255, out=plane)
    return u, v


def _luma_sum(p: np.ndarray, pix_fmt: str) -> np.ndarray:
    """Each pixel's R + G + B of (n, 3, H, W) int32 planes, weighed for its Y (before the chroma's share)."""
    y = p[:, 0] + p[:, 1]
    y += p[:, 2]
    y *= _COEF[pix_fmt][4]
    return y


def _chroma_share(u: np.ndarray, v: np.ndarray, pix_fmt: str) -> np.ndarray:
    """What Y takes off (fixed-point) for the chroma U, V under it."""
    y0, yu, yv = _COEF[pix_fmt][5:]
    return y0 - yu * u - yv * v


def _finish(plane: np.ndarray) -> np.ndarray:
    np.right_shift(plane, _FIX, out=plane)
    return np.clip(plane, 0, 255, out=plane)


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
    u, v = _chroma(rows[..., 0::2] + rows[..., 1::2], "yuv420p")  # from each 2x2 block's sums
    y = _luma_sum(p, "yuv420p")
    per_block = np.repeat(_chroma_share(u, v, "yuv420p"), 2, axis=-1)  # (n, H/2, W): for both rows of each block
    y[:, 0::2] += per_block
    y[:, 1::2] += per_block
    _finish(y)
    out = np.empty((n, h * w * 3 // 2), np.uint8)
    out[:, : h * w] = y.reshape(n, -1)
    out[:, h * w : h * w * 5 // 4] = u.reshape(n, -1)
    out[:, h * w * 5 // 4 :] = v.reshape(n, -1)
    return out.reshape(n, h * 3 // 2, w)


def to_yuv444p(frames: np.ndarray) -> np.ndarray:
    """(n, H, W, 3) uint8 RGB -> (n, 3, H, W) uint8 yuv444p planes (Y, U, V), as
    ``av.VideoFrame.from_ndarray(..., format="yuv444p")`` takes them.

    :func:`to_yuv420p`'s least squares with a chroma sample per pixel, for the readers' yuv444p conversion back
    (:data:`READER_OFFSET_444`): each pixel's U, V rounded, then its Y for its R + G + B under them. Integer
    arithmetic throughout: the same planes on every machine (FFmpeg's own conversion picks its code by CPU)."""
    p = np.moveaxis(frames, -1, 1).astype(np.int32, order="C")
    u, v = _chroma(p, "yuv444p")
    y = _luma_sum(p, "yuv444p")
    y += _chroma_share(u, v, "yuv444p")
    out = np.empty(p.shape, np.uint8)
    out[:, 0], out[:, 1], out[:, 2] = _finish(y), u, v
    return out


AUTO_MIN_CAP_DB = 43.0
"""``pix_fmt: auto`` keeps yuv420p for a camera whose frames' yuv420p cap (:func:`yuv420p_cap`) is at least this;
below it, yuv444p. A video's squared error is about the cap's plus the encoder's; at crf 18 the encoder's alone came
to 43.6 dB and more on the shipped scenes (MSE 2.8), so a cap of 43 dB (MSE 3.3) leaves the video at 40 dB (MSE 6.5)
or more, where the Franka's variety scene (cap 40-42 dB per episode) came to 39.0-40.5 dB
(docs/cameras.md#video-quality-per-scene)."""
EXACT_DB = 100.0
"""What :func:`yuv420p_cap` counts a frame read back exactly as (its PSNR is infinite)."""
_CAP_FRAMES = 16
"""Frames converted and read back at a time by :func:`yuv420p_cap` (its arrays stay a few MB)."""


def read_yuv420p(planes: np.ndarray) -> np.ndarray:
    """(n, H * 3 // 2, W) yuv420p planes -> (n, H, W, 3) uint8 RGB as the readers' model has it
    (:data:`READER_OFFSET`), without PyAV."""
    n, h3, w = planes.shape
    h = h3 * 2 // 3
    y = planes[:, :h].astype(np.float32) * np.float32(READER_LUMA)
    u, v = planes[:, h:].reshape(n, 2, h // 2, w // 2).astype(np.float32).transpose(1, 0, 2, 3)
    out = np.empty((n, h, w, 3), np.uint8)
    for c, ((cu, cv), off) in enumerate(zip(READER_CHROMA, READER_OFFSET, strict=True)):
        # the chroma's share at its own resolution, then spread over its 2x2 pixels
        rgb = np.repeat(np.repeat(cu * u + cv * v + np.float32(off), 2, axis=1), 2, axis=2)
        rgb += y
        out[..., c] = np.clip(np.rint(rgb, out=rgb), 0, 255, out=rgb)
    return out


def yuv420p_cap(chunks: Iterable[np.ndarray]) -> float:
    """Mean PSNR (dB) over the frames of (n, H, W, 3) uint8 RGB ``chunks`` (H, W even) of their yuv420p
    (:func:`to_yuv420p`) read back by the readers' model, with no encoder: the most a yuv420p video of them gives.
    A frame read back exactly counts as :data:`EXACT_DB`."""
    scores = [
        psnr(part, read_yuv420p(to_yuv420p(part)))
        for chunk in chunks
        for part in (chunk[i : i + _CAP_FRAMES] for i in range(0, len(chunk), _CAP_FRAMES))
    ]
    return float(np.mean(np.minimum(np.concatenate(scores), EXACT_DB))) if scores else EXACT_DB


def choose_pix_fmt(chunks: Iterable[np.ndarray]) -> tuple[str, float]:
    """The pixel format ``pix_fmt: auto`` picks for a camera from its frames, and their yuv420p cap (dB)."""
    cap = yuv420p_cap(chunks)
    return ("yuv420p" if cap >= AUTO_MIN_CAP_DB else "yuv444p"), cap


CONVERSIONS = {"yuv420p": to_yuv420p, "yuv444p": to_yuv444p}
"""(n, H, W, 3) uint8 RGB -> the planes of each pixel format, as PyAV takes them."""


def _add_stream(container: av.container.OutputContainer, hw: tuple[int, int], fps: int, opts: VideoOptions):
    """The video stream of resolved ``opts`` (a pixel format, a crf) for (H, W) frames."""
    stream = container.add_stream(opts.codec, rate=fps)
    stream.width, stream.height, stream.pix_fmt = hw[1], hw[0], opts.pix_fmt
    stream.time_base = Fraction(1, fps)
    stream.codec_context.time_base = Fraction(1, fps)
    stream.codec_context.gop_size = opts.gop
    # One encoder thread: x264's automatic frame threads gave different bytes from run to run
    # (and from machine to machine); one thread is reproducible and, at these frame sizes,
    # about 8 % slower (parallelism comes from --workers instead).
    stream.codec_context.thread_count = 1
    stream.options = encoder_options(opts)
    return stream


def encode(
    path: str | Path | BinaryIO,
    chunks: Iterable[np.ndarray],
    fps: int,
    opts: VideoOptions,
    stats: PixelStats | None = None,
) -> int:
    """Encode (n, H, W, 3) uint8 RGB chunks into one MP4 (a path, or a binary file object); returns the number of
    frames written. ``opts.pix_fmt`` ``auto`` is decided from the first chunk (:func:`choose_pix_fmt`); the
    converter decides it once per camera instead."""
    count = 0
    with av.open(path if hasattr(path, "write") else str(path), mode="w", format="mp4") as container:
        stream = None
        for chunk in chunks:
            if stream is None:
                pix_fmt = choose_pix_fmt([chunk])[0] if opts.pix_fmt == "auto" else opts.pix_fmt
                opts = opts.resolved(pix_fmt)
                stream = _add_stream(container, chunk.shape[1:3], fps, opts)
                convert = CONVERSIONS[pix_fmt]
            if stats is not None:
                stats.add(chunk)
            for img in chunk:  # one frame at a time: its integers stay in the CPU's cache (faster than a chunk)
                frame = av.VideoFrame.from_ndarray(convert(img[None])[0], format=opts.pix_fmt)
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
    H.264 encoder (what the dataset's videos are); then one tiny frame is encoded in memory with the gop, the crf,
    the preset and the pixel format added in turn, so that the first refusal names its option (``auto`` may choose
    either format: yuv420p is what the steps before try)."""
    try:
        codec = av.Codec(opts.codec, "w")
    except Exception as exc:  # noqa: BLE001 - PyAV's errors for an unknown name vary by version
        return "codec", f"{opts.codec!r} is not an encoder this PyAV/FFmpeg has ({one_line(str(exc))})"
    if codec.type != "video" or codec.canonical_name != layout.VIDEO_CODEC:
        return "codec", f"{opts.codec!r} encodes {codec.canonical_name}, not {layout.VIDEO_CODEC} (e.g. libx264)"
    base = VideoOptions(codec=opts.codec, pix_fmt="yuv420p")
    steps = (
        ("gop", replace(base, gop=opts.gop)),
        ("crf", replace(base, gop=opts.gop, crf=opts.crf)),
        ("preset", replace(opts, pix_fmt="yuv420p")),
        ("pix_fmt", replace(opts, pix_fmt="yuv444p" if opts.pix_fmt == "auto" else opts.pix_fmt)),
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
