"""A picture of what the cameras recorded: evenly spaced frames of one demo, one row per camera.

Reads an L2 HDF5 file (no Isaac Lab needed) and writes a PNG::

    python -m l2.tools.frame_strip data/demos/scripted_lift_cube.hdf5 --output cameras.png
    python -m l2.tools.frame_strip teleop_lift_cube.hdf5 --demo 3 --frames 8 --scale 0.5 --output strip.png
    python -m l2.tools.frame_strip scripted_lift_cube.hdf5 --first-frames 8 --output scenes.png   # 8 demos' starts

Every ``(T, H, W, 3) uint8`` term under ``obs/`` is a camera; ``--cameras`` picks and orders them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import h5py
import numpy as np

from l2.format import atomic, schema
from l2.format.cli_args import Parser, existing_file, float_at_least, int_at_least, non_negative_int, output_file
from l2.format.l2file import L2File, L2FileError

GAP = 4
"""Pixels of white between frames and rows."""
MAX_FRAMES = 1000
"""The most frames per camera a strip shows (more would only repeat frames of short episodes)."""
MAX_SCALE = 16.0
"""The largest resize factor (a picture's size grows with its square)."""


def camera_terms(demo: h5py.Group) -> list[str]:
    """Names of the obs terms holding camera frames, (T, H, W, 3) uint8, in name order."""
    obs = demo.get(schema.OBS)
    if not isinstance(obs, h5py.Group):
        return []
    return [
        k
        for k, d in sorted(obs.items())
        if isinstance(d, h5py.Dataset) and schema.is_camera_term(d.shape, d.dtype.name)
    ]


def frame_indices(length: int, frames: int) -> np.ndarray:
    """``frames`` evenly spaced frame indices of a ``length``-frame episode, first and last included."""
    return np.linspace(0, length - 1, frames).round().astype(int)


def tile(rows: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """One (H, W, 3) uint8 picture of rows of (h, w, 3) frames, :data:`GAP` white pixels between them."""
    h = max(img.shape[0] for row in rows for img in row)
    w = max(img.shape[1] for row in rows for img in row)
    cols = max(len(row) for row in rows)
    out = np.full((len(rows) * (h + GAP) - GAP, cols * (w + GAP) - GAP, 3), 255, np.uint8)
    for r, row in enumerate(rows):
        for c, img in enumerate(row):
            y, x = r * (h + GAP), c * (w + GAP)
            out[y : y + img.shape[0], x : x + img.shape[1]] = img
    return out


def frame_strip(
    path: str | Path, demo: int = 0, frames: int = 6, cameras: Sequence[str] = (), guard: bool = True
) -> np.ndarray:
    """(rows x H, frames x W, 3) uint8: ``frames`` evenly spaced frames (first and last included) of each camera.
    ``guard=False``: the file was read through already (:class:`~l2.format.l2file.L2File`)."""
    try:
        f = L2File(path, guard=guard)
    except L2FileError as exc:
        raise ValueError(str(exc)) from None
    with f:
        name = f"{schema.DATA_GROUP}/{schema.demo_name(demo)}"
        group = f.h5.get(name)
        if not isinstance(group, h5py.Group):
            raise ValueError(f"{path}:/{name}: no such demo")
        names = list(cameras) or camera_terms(group)
        if not names:
            raise ValueError(f"{path}:/{name}/obs: no camera terms ((T, H, W, 3) uint8)")
        rows = []
        for cam in names:
            data = group.get(f"{schema.OBS}/{cam}")
            if not isinstance(data, h5py.Dataset) or data.ndim != 4:
                raise ValueError(f"{path}:/{name}/obs/{cam}: not a camera term")
            rows.append([data[i] for i in frame_indices(data.shape[0], frames)])
    return tile(rows)


def first_frames(path: str | Path, demos: int = 8, camera: str = "table_cam", per_row: int = 4) -> np.ndarray:
    """The first frame of ``camera`` in each of the first ``demos`` demos, ``per_row`` to a row: how the episodes'
    scenes differ (``presets=variety``)."""
    try:
        f = L2File(path)
    except L2FileError as exc:
        raise ValueError(str(exc)) from None
    with f:
        images = []
        for name in f.demos[:demos]:
            data = f.data[name].get(f"{schema.OBS}/{camera}")
            if not isinstance(data, h5py.Dataset) or data.ndim != 4:
                raise ValueError(f"{path}:/{schema.DATA_GROUP}/{name}/obs/{camera}: not a camera term")
            images.append(data[0])
    if not images:
        raise ValueError(f"{path}:/{schema.DATA_GROUP}: no demos")
    return tile([images[k : k + per_row] for k in range(0, len(images), per_row)])


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="python -m l2.tools.frame_strip",
        description=__doc__.split("\n\n")[0],
        epilog="example: python -m l2.tools.frame_strip data/demos/scripted_lift_cube.hdf5 --output cameras.png",
    )
    parser.add_argument("file", type=existing_file, help="L2 HDF5 file recorded with cameras")
    parser.add_argument("--output", "-o", required=True, type=output_file, help="PNG to write")
    parser.add_argument("--demo", type=non_negative_int, default=0, help="demo index (default: %(default)s)")
    parser.add_argument(
        "--frames", type=int_at_least(1, MAX_FRAMES), default=6, help="frames per camera (default: %(default)s)"
    )
    parser.add_argument("--cameras", default="", help="comma-separated obs terms (default: every camera term)")
    parser.add_argument(
        "--scale",
        type=float_at_least(0.0, MAX_SCALE, inclusive=False),
        default=1.0,
        help="resize the picture by this factor (default: 1)",
    )
    parser.add_argument(
        "--first-frames",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="instead: the first frame of the first N demos, 4 to a row (the first of --cameras, default table_cam)",
    )
    args = parser.parse_args(argv)
    from PIL import Image

    cameras = [c for c in args.cameras.split(",") if c]
    try:
        if args.first_frames:
            strip = first_frames(args.file, args.first_frames, cameras[0] if cameras else "table_cam")
        else:
            strip = frame_strip(args.file, args.demo, args.frames, cameras)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    image = Image.fromarray(strip)
    if args.scale != 1.0:
        size = (max(1, round(image.width * args.scale)), max(1, round(image.height * args.scale)))
        image = image.resize(size, Image.Resampling.LANCZOS)
    try:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        with atomic.replacing(args.output) as tmp:  # whole or not at all
            image.save(tmp, format="PNG", optimize=True)
    except OSError as exc:
        print(f"error: {atomic.io_error_line(exc, args.output, 'no picture written')}", file=sys.stderr)
        return 2
    what = (
        f"first frames of {args.first_frames} demos"
        if args.first_frames
        else f"demo_{args.demo}, {args.frames} frames per camera"
    )
    print(f"{args.output}: {image.width}x{image.height}, {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
