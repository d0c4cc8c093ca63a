"""JPEG camera frames stored one per HDF5 row (platform exports, compressed ALOHA files).

Frames are decoded with PyAV's mjpeg decoder (no Pillow needed) in chunks of
:data:`FRAME_CHUNK`, so memory stays bounded by one chunk of decoded frames plus the open file.
Every decode problem becomes an :class:`InputError` naming the file, dataset and frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import av
import h5py
import numpy as np

from l3.errors import InputError
from l3.readers.common import FRAME_CHUNK, reading  # FRAME_CHUNK: JPEG rows read and decoded at a time

_SOI = b"\xff\xd8"


def row_bytes(row) -> bytes:
    """The JPEG bytes of one dataset row: vlen uint8 array, bytes / numpy bytes, np.void, padded uint8 row."""
    if isinstance(row, np.ndarray):
        return row.tobytes() if row.dtype == np.uint8 or row.dtype.kind == "V" else bytes(row.astype(np.uint8))
    if isinstance(row, bytes | bytearray | memoryview):
        return bytes(row)
    if isinstance(row, np.void | np.bytes_):
        return bytes(row.tobytes() if isinstance(row, np.void) else row)
    raise TypeError(f"unsupported JPEG row type {type(row).__name__}")


class JpegDecoder:
    """Decodes single JPEG images to (H, W, 3) uint8 RGB; ``where(i)`` names frame i in errors."""

    def __init__(self, file: str, path: str, what: Callable[[int], str] = lambda i: f"frame {i}"):
        self.file, self.path, self.what = file, path, what
        self._ctx = av.CodecContext.create("mjpeg", "r")

    def decode(self, data: bytes, i: int) -> np.ndarray:
        def fail(why: str) -> InputError:
            return InputError(self.file, self.path, f"{self.what(i)}: JPEG does not decode ({why})")

        if len(data) < 4 or not data.startswith(_SOI):
            raise fail("no JPEG start marker" if data.strip(b"\0") else "empty row")
        try:
            frames = self._ctx.decode(av.Packet(data))
        except (av.FFmpegError, ValueError) as e:
            self._ctx = av.CodecContext.create("mjpeg", "r")
            raise fail(str(e) or type(e).__name__) from None
        if len(frames) != 1:
            raise fail(f"{len(frames)} images decoded")
        return frames[0].to_ndarray(format="rgb24")


def decode_rows(
    file: str, path: str, rows, start: int, decoder: JpegDecoder, shape: tuple[int, int] | None
) -> np.ndarray:
    """Decode ``rows`` (frames ``start``, ``start+1``, ...) into an (n, H, W, 3) array."""
    out = None
    for k, row in enumerate(rows):
        i = start + k
        try:
            data = row_bytes(row)
        except TypeError as e:
            raise InputError(file, path, f"{decoder.what(i)}: {e}") from None
        img = decoder.decode(data, i)
        if shape is not None and img.shape[:2] != tuple(shape):
            raise InputError(
                file,
                path,
                f"{decoder.what(i)}: image is {img.shape[1]}x{img.shape[0]}, "
                f"frame 0 is {shape[1]}x{shape[0]} (one size per camera)",
            )
        if out is None:
            out = np.empty((len(rows), *img.shape), dtype=np.uint8)
        out[k] = img
    return out if out is not None else np.empty((0, *(shape or (0, 0)), 3), dtype=np.uint8)


class JpegFrames:
    """A FrameSource over a dataset of T JPEG rows (decoded lazily, FRAME_CHUNK at a time).

    ``opener()`` returns a context manager yielding the open h5py file (so a worker can reuse a
    cached file) or a mapping from ``path`` to the rows (ALOHA's padded rows, trimmed).
    """

    def __init__(
        self,
        opener: Callable[[], AbstractContextManager[h5py.File]],
        file: str,
        path: str,
        shape: tuple[int, int, int, int],
        what: Callable[[int], str] = lambda i: f"frame {i}",
    ):
        self.opener, self.file, self.path, self.shape, self.what = opener, file, path, shape, what

    def chunks(self) -> Iterator[np.ndarray]:
        T, H, W = self.shape[:3]
        decoder = JpegDecoder(self.file, self.path, self.what)
        with self.opener() as f:
            ds = f[self.path]
            for i in range(0, T, FRAME_CHUNK):
                with reading(self.file, self.path, f"cannot read frames {i}.."):
                    rows = ds[i : min(i + FRAME_CHUNK, T)]
                yield decode_rows(self.file, self.path, rows, i, decoder, (H, W))


def first_frame_shape(file: str, path: str, ds: h5py.Dataset, what: Callable[[int], str]) -> tuple[int, int]:
    """(H, W) of frame 0 of a JPEG dataset (decodes one image)."""
    if ds.shape[0] == 0:
        raise InputError(file, path, "no frames")
    with reading(file, path, "cannot read frame 0, truncated or corrupt?"):
        row = ds[0]
    img = decode_rows(file, path, [row], 0, JpegDecoder(file, path, what), None)
    return img.shape[1], img.shape[2]
