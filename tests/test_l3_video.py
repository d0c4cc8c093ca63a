"""l3.video's RGB -> yuv420p conversion: the model of the readers it is chosen for still describes the installed
PyAV, it lays the planes out as PyAV takes them at any even size, and read back it is closer to the frames than
FFmpeg's own conversion."""

from __future__ import annotations

import io

import av
import numpy as np

from l3.mapping import VideoOptions
from l3.video import READER_CHROMA, READER_LUMA, READER_OFFSET, decode, encode, psnr, to_yuv420p


def _read(planes: np.ndarray) -> np.ndarray:
    """yuv420p planes (H * 3 // 2, W) -> RGB, as the readers convert them (PyAV's to_ndarray)."""
    return av.VideoFrame.from_ndarray(planes, format="yuv420p").to_ndarray(format="rgb24")


def _edges(h: int, w: int, seed: int) -> np.ndarray:
    """Flat colored rectangles on a grey ground, edges at odd and even pixels: what chroma subsampling gets wrong."""
    rng = np.random.default_rng(seed)
    img = np.full((h, w, 3), 90, np.uint8)
    for _ in range(12):
        y0, x0 = rng.integers(0, h - 3), rng.integers(0, w - 3)
        y1, x1 = y0 + rng.integers(3, h // 2), x0 + rng.integers(3, w // 2)
        img[y0:y1, x0:x1] = rng.integers(0, 256, 3)
    return img


def test_the_reader_model_is_the_installed_pyavs():
    """Random planes read by PyAV fit READER_* : coefficients within 0.005, offsets within 0.15 (a changed FFmpeg
    conversion shows here first)."""
    rng = np.random.default_rng(0)
    h = w = 64
    y = rng.integers(0, 256, (h, w))
    u, v = rng.integers(0, 256, (2, h // 2, w // 2))
    rgb = _read(np.concatenate([y.ravel(), u.ravel(), v.ravel()]).astype(np.uint8).reshape(h * 3 // 2, w))
    up = [np.repeat(np.repeat(c, 2, 0), 2, 1).ravel() for c in (u, v)]
    x = np.stack([y.ravel(), *up, np.ones(h * w)], 1)
    for c in range(3):
        got = rgb[..., c].ravel().astype(float)
        inside = (got > 3) & (got < 252)  # not clipped
        fit, *_ = np.linalg.lstsq(x[inside], got[inside], rcond=None)
        assert abs(fit[0] - READER_LUMA) < 0.005, (c, fit)
        assert np.abs(fit[1:3] - READER_CHROMA[c]).max() < 0.005, (c, fit)
        assert abs(fit[3] - READER_OFFSET[c]) < 0.15, (c, fit)
        assert np.std(got[inside] - x[inside] @ fit) < 0.6, c


def test_planes_are_laid_out_as_pyav_takes_them_at_any_even_size():
    """Frames whose 2x2 blocks each have one color lose nothing to subsampling: read back, they come out within the
    readers' rounding, at sizes that are not multiples of 4 too."""
    rng = np.random.default_rng(1)
    for h, w in ((2, 2), (6, 10), (10, 6), (48, 64)):
        blocks = rng.integers(16, 240, (3, h // 2, w // 2, 3), dtype=np.uint8)
        frames = np.repeat(np.repeat(blocks, 2, 1), 2, 2)
        planes = to_yuv420p(frames)
        assert planes.shape == (3, h * 3 // 2, w) and planes.dtype == np.uint8
        back = np.stack([_read(p) for p in planes])
        assert np.abs(back.astype(int) - frames).max() <= 3, (h, w)


def test_read_back_it_is_closer_than_ffmpegs_conversion():
    frames = np.stack([_edges(64, 64, s) for s in range(6)])
    ours = np.stack([_read(p) for p in to_yuv420p(frames)])
    ffmpeg = np.stack(
        [av.VideoFrame.from_ndarray(f).reformat(format="yuv420p").to_ndarray(format="rgb24") for f in frames]
    )
    gain = psnr(frames, ours) - psnr(frames, ffmpeg)
    assert gain.min() > 0.5, gain
    flat = np.full((1, 16, 16, 3), (120, 64, 200), np.uint8)  # one color: nothing to subsample
    assert psnr(flat, _read(to_yuv420p(flat)[0])[None])[0] > 45


def test_same_frames_same_bytes_and_read_back(tmp_path):
    """Encoded twice, the same bytes; decoded, within 1 dB of what the frames' yuv420p itself reads back as."""
    frames = np.stack([_edges(48, 64, s) for s in range(5)])
    outs = []
    for _ in range(2):
        buf = io.BytesIO()
        encode(buf, [frames[:2], frames[2:]], 30, VideoOptions())
        outs.append(buf.getvalue())
    assert outs[0] == outs[1]
    (tmp_path / "v.mp4").write_bytes(outs[0])
    decoded = np.stack(list(decode(tmp_path / "v.mp4")))
    cap = psnr(frames, np.stack([_read(p) for p in to_yuv420p(frames)]))  # yuv420p with no encoder at all
    assert len(decoded) == 5 and psnr(frames, decoded).mean() > cap.mean() - 1.0
