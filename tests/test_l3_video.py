"""l3.video's RGB -> yuv420p and yuv444p conversions: the model of the readers they are chosen for still describes
the installed PyAV, they lay the planes out as PyAV takes them, and read back the yuv420p one is closer to the frames
than FFmpeg's own conversion. ``pix_fmt: auto`` keeps yuv420p where it is close enough and takes yuv444p where
chroma subsampling caps the PSNR; such a camera goes through the converter at >= 40 dB, and l3.validate holds every
MP4 to the pixel format its feature declares."""

from __future__ import annotations

import io
import json
from pathlib import Path

import av
import numpy as np
import pytest
from l3_fixtures import CAMERAS, make_demo, write_l2

from l3 import layout
from l3.convert import convert
from l3.errors import ConfigError
from l3.mapping import VideoOptions, mapping_from_dict, mapping_to_dict
from l3.output import Summary
from l3.validate import validate
from l3.video import (
    AUTO_MIN_CAP_DB,
    READER_CHROMA,
    READER_LUMA,
    READER_OFFSET,
    READER_OFFSET_444,
    choose_pix_fmt,
    decode,
    encode,
    probe,
    psnr,
    read_yuv420p,
    to_yuv420p,
    to_yuv444p,
    yuv420p_cap,
)

REPO = Path(__file__).resolve().parent.parent


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


def _smooth(n: int, h: int, w: int) -> np.ndarray:
    """Gradients, moving: no colored edge for chroma subsampling to blur."""
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.empty((n, h, w, 3), np.uint8)
    for t in range(n):
        out[t, ..., 0] = 40 + xx * 2 + t
        out[t, ..., 1] = 60 + yy * 3
        out[t, ..., 2] = 120 + (xx + yy) // 2
    return out


def _stripes(n: int, h: int, w: int) -> np.ndarray:
    """Yellow bars 3 px wide on green, moving a pixel a frame (the SO-101's yellow arm on its green mat, sharpened):
    read back from yuv420p about 21 dB, from yuv444p about 51 dB."""
    xx = np.mgrid[0:h, 0:w][1]
    out = np.empty((n, h, w, 3), np.uint8)
    for t in range(n):
        out[t] = (40, 140, 60)
        out[t][(xx + t) % 8 < 3] = (230, 200, 30)
    return out


@pytest.mark.parametrize("pix_fmt", ["yuv420p", "yuv444p"])
def test_the_reader_model_is_the_installed_pyavs(pix_fmt):
    """Random planes read by PyAV fit READER_* (READER_OFFSET_444 for yuv444p): coefficients within 0.005, offsets
    within 0.15 (a changed FFmpeg conversion shows here first)."""
    rng = np.random.default_rng(0)
    h = w = 64
    y = rng.integers(0, 256, (h, w))
    if pix_fmt == "yuv420p":
        u, v = rng.integers(0, 256, (2, h // 2, w // 2))
        planes = np.concatenate([y.ravel(), u.ravel(), v.ravel()]).reshape(h * 3 // 2, w)
        up = [np.repeat(np.repeat(c, 2, 0), 2, 1).ravel() for c in (u, v)]
        offsets = READER_OFFSET
    else:
        u, v = rng.integers(0, 256, (2, h, w))
        planes, up, offsets = np.stack([y, u, v]), [u.ravel(), v.ravel()], READER_OFFSET_444
    rgb = av.VideoFrame.from_ndarray(planes.astype(np.uint8), format=pix_fmt).to_ndarray(format="rgb24")
    x = np.stack([y.ravel(), *up, np.ones(h * w)], 1)
    for c in range(3):
        got = rgb[..., c].ravel().astype(float)
        inside = (got > 3) & (got < 252)  # not clipped
        fit, *_ = np.linalg.lstsq(x[inside], got[inside], rcond=None)
        assert abs(fit[0] - READER_LUMA) < 0.005, (c, fit)
        assert np.abs(fit[1:3] - READER_CHROMA[c]).max() < 0.005, (c, fit)
        assert abs(fit[3] - offsets[c]) < 0.15, (c, fit)
        assert np.std(got[inside] - x[inside] @ fit) < 0.6, c


def test_the_cap_reads_back_as_pyav_does():
    """read_yuv420p (the model, no PyAV) against PyAV's own reading of the same yuv420p: one level apart at most."""
    frames = np.stack([_edges(48, 64, s) for s in range(3)])
    planes = to_yuv420p(frames)
    pyav = np.stack([_read(p) for p in planes])
    assert np.abs(read_yuv420p(planes).astype(int) - pyav).max() <= 1
    assert abs(yuv420p_cap([frames]) - psnr(frames, pyav).mean()) < 0.2


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


def test_yuv444p_planes_read_back_within_rounding_at_any_size():
    """to_yuv444p's planes as PyAV takes them, odd sizes too: read back, each value within 2 levels, no bias."""
    rng = np.random.default_rng(3)
    for h, w in ((1, 1), (7, 5), (31, 33)):
        frames = rng.integers(0, 256, (3, h, w, 3), dtype=np.uint8)
        planes = to_yuv444p(frames)
        assert planes.shape == (3, 3, h, w) and planes.dtype == np.uint8
        back = np.stack([av.VideoFrame.from_ndarray(p, format="yuv444p").to_ndarray(format="rgb24") for p in planes])
        err = back.astype(int) - frames
        assert np.abs(err).max() <= 2, (h, w)
    assert np.abs(err.reshape(-1, 3).mean(0)).max() < 0.1


def test_yuv444p_read_back_is_closer_than_ffmpegs_conversion():
    """Flat colored rectangles (a rendered scene's few colors): to_yuv444p's planes read back closer than FFmpeg's own
    RGB -> yuv444p, on average over the frames (its rounding leans one way on some colors)."""
    frames = np.stack([_edges(64, 64, s) for s in range(12)])
    ours = np.stack(
        [av.VideoFrame.from_ndarray(p, format="yuv444p").to_ndarray(format="rgb24") for p in to_yuv444p(frames)]
    )
    ffmpeg = np.stack(
        [av.VideoFrame.from_ndarray(f).reformat(format="yuv444p").to_ndarray(format="rgb24") for f in frames]
    )
    assert psnr(frames, ours).mean() > psnr(frames, ffmpeg).mean() + 0.2


def test_auto_keeps_yuv420p_for_smooth_frames_and_takes_yuv444p_for_chroma_edges(tmp_path):
    smooth, stripes = _smooth(4, 48, 64), _stripes(4, 48, 64)
    fmt, cap = choose_pix_fmt([smooth[:2], smooth[2:]])
    assert fmt == "yuv420p" and cap >= AUTO_MIN_CAP_DB
    fmt, cap = choose_pix_fmt([stripes])
    assert fmt == "yuv444p" and cap < 25
    for frames, want in ((smooth, "yuv420p"), (stripes, "yuv444p")):  # encode() alone decides from its first chunk
        path = tmp_path / f"{want}.mp4"
        encode(path, [frames], 10, VideoOptions())
        assert probe(path)["pix_fmt"] == want


def test_yuv444p_same_frames_same_bytes():
    frames = _stripes(4, 48, 64)
    outs = []
    for _ in range(2):
        buf = io.BytesIO()
        encode(buf, [frames[:1], frames[1:]], 30, VideoOptions(pix_fmt="yuv444p"))
        outs.append(buf.getvalue())
    assert outs[0] == outs[1]


@pytest.fixture(scope="module")
def auto_dataset(tmp_path_factory) -> tuple[Path, Path, Summary]:
    """An L2 file whose table camera sees smooth frames and whose wrist camera sees yellow bars on green, converted
    with the shipped mapping (video.pix_fmt auto); the dataset, the file and the conversion's summary."""
    d = tmp_path_factory.mktemp("pix_fmt")
    rng = np.random.default_rng(5)
    demos = [make_demo(rng, n, camera=True) for n in (12, 9)]
    for demo in demos:
        n, h, w = demo["obs"][CAMERAS[0]].shape[:3]
        demo["obs"][CAMERAS[0]], demo["obs"][CAMERAS[1]] = _smooth(n, h, w), _stripes(n, h, w)
    src = write_l2(d / "scripted_lift_cube.hdf5", demos)
    summary = convert([str(src)], d / "ds", config=REPO / "config" / "lift_cube.yaml", log=lambda m: None)
    return d / "ds", src, summary


def test_a_camera_capped_by_yuv420p_goes_through_the_converter_as_yuv444p_at_40_db(auto_dataset):
    root, src, summary = auto_dataset
    info = json.loads((root / layout.INFO_PATH).read_text())
    declared = {c: info["features"][layout.video_key(c)]["info"]["video.pix_fmt"] for c in CAMERAS}
    assert declared == {CAMERAS[0]: "yuv420p", CAMERAS[1]: "yuv444p"}
    assert [line.split(" (")[0] for line in summary.videos] == [
        f"camera {CAMERAS[0]}: yuv420p, crf 18",
        f"camera {CAMERAS[1]}: yuv444p, crf 22",
    ]
    assert all("video.pix_fmt auto" in line and " dB" in line for line in summary.videos)
    assert all(line in summary.table().splitlines() for line in summary.videos)
    import h5py

    with h5py.File(src) as f:
        for k in range(2):
            frames = f[f"data/demo_{k}/obs/{CAMERAS[1]}"][()]
            video = root / layout.video_path(k, layout.video_key(CAMERAS[1]))
            assert probe(video)["pix_fmt"] == "yuv444p"
            assert psnr(frames, np.stack(list(decode(video)))).mean() >= 40 > yuv420p_cap([frames])


def test_validate_holds_every_mp4_to_its_declared_pix_fmt(auto_dataset, tmp_path):
    import shutil

    root = tmp_path / "ds"
    shutil.copytree(auto_dataset[0], root)
    assert validate(root) == []
    info = json.loads((root / layout.INFO_PATH).read_text())
    info["features"][layout.video_key(CAMERAS[1])]["info"]["video.pix_fmt"] = "yuv420p"
    (root / layout.INFO_PATH).write_text(json.dumps(info))
    problems = [str(v) for v in validate(root, deep=False)]
    assert problems == [
        f"{layout.video_path(k, layout.video_key(CAMERAS[1]))}: h264/yuv444p, expected h264/yuv420p "
        "(info.json's video.pix_fmt)"
        for k in range(2)
    ]
    info["features"][layout.video_key(CAMERAS[1])]["info"]["video.pix_fmt"] = "yuv422p"
    (root / layout.INFO_PATH).write_text(json.dumps(info))
    problems = [str(v) for v in validate(root, deep=False)]
    assert problems[0] == (
        f"{layout.INFO_PATH}: features.{layout.video_key(CAMERAS[1])}.info.video.pix_fmt is 'yuv422p', "
        "expected yuv420p or yuv444p"
    )


def test_the_mapping_takes_pix_fmt_and_writes_it_back():
    base = {"state": {"a": "obs/a"}, "action": {"b": "actions"}}
    with pytest.raises(ConfigError) as err:
        mapping_from_dict({**base, "video": {"pix_fmt": "yuv422p"}}, "my.yaml")
    assert str(err.value) == "my.yaml: video.pix_fmt: expected one of auto, yuv420p, yuv444p, got 'yuv422p'"
    m = mapping_from_dict(base)
    assert m.video.pix_fmt == "auto" and m.video.crf is None
    assert mapping_to_dict(m)["video"] == {"codec": "libx264", "preset": "medium", "gop": 2, "pix_fmt": "auto"}
    assert m.video.resolved("yuv420p").crf == 18 and m.video.resolved("yuv444p").crf == 22
    pinned = mapping_from_dict({**base, "video": {"pix_fmt": "yuv444p", "crf": 20}})
    assert mapping_from_dict(mapping_to_dict(pinned)) == pinned and pinned.video.resolved("yuv444p").crf == 20
