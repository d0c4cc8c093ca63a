"""Feature statistics with memory bounded by one episode.

Per episode: min, max, mean, std, count (``episodes_stats.jsonl``) plus, for float features, a
fixed-range histogram. Over the dataset: moments are merged exactly (Chan et al.) in episode
order, and q01/q99 come from the summed histograms, so they are within one bin width
((max - min) / BINS) of numpy's np.quantile whatever the dataset size, and identical for any number of workers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BINS = 4096
QUANTILES = {"q01": 0.01, "q99": 0.99}


@dataclass
class Moments:
    """count, mean, sum of squared deviations (m2), min and max per column (float64)."""

    count: int
    mean: np.ndarray
    m2: np.ndarray
    min: np.ndarray
    max: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray) -> Moments:
        """Moments of the rows of a (T, D) array."""
        x = np.asarray(x).reshape(len(x), -1)
        lo, hi = x.min(axis=0), x.max(axis=0)  # exact in the input dtype
        x = x.astype(np.float64, copy=False)
        mean = x.mean(axis=0)
        d = x - mean
        np.square(d, out=d)
        return cls(len(x), mean, d.sum(axis=0), lo.astype(np.float64), hi.astype(np.float64))

    def columns(self, a: int, b: int | None) -> Moments:
        """The moments of columns a:b."""
        return Moments(self.count, self.mean[a:b], self.m2[a:b], self.min[a:b], self.max[a:b])

    def merge(self, o: Moments) -> Moments:
        """Moments of the union of both row sets."""
        n = self.count + o.count
        d = o.mean - self.mean
        mean = self.mean + d * (o.count / n)
        m2 = self.m2 + o.m2 + d * d * (self.count * o.count / n)
        return Moments(n, mean, m2, np.minimum(self.min, o.min), np.maximum(self.max, o.max))

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.m2 / self.count)


def histogram(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, bins: int = BINS) -> np.ndarray:
    """(D, bins) int64 counts of the rows of a (T, D) array over the fixed ranges [lo, hi]."""
    x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    width = np.where(hi > lo, hi - lo, 1.0)
    idx = np.clip(((x - lo) / width * bins).astype(np.int64), 0, bins - 1)
    idx += np.arange(x.shape[1], dtype=np.int64) * bins
    return np.bincount(idx.ravel(), minlength=x.shape[1] * bins).reshape(x.shape[1], bins)


STREAM_BINS = 4 * BINS
"""Bins of :class:`StreamingHistogram`: its final bin width is at most about 2 (max - min) / STREAM_BINS,
half of the documented bound (max - min) / BINS."""


class StreamingHistogram:
    """Per-column histogram of rows seen once, in order, with no range known in advance.

    Rows are buffered (``flush_rows`` at most) and binned in batches. The range grows as data
    arrives: the bin width doubles and/or the grid shifts by whole bins, so every old bin falls
    into exactly one new bin and no count is ever split. Each column ends with a bin width of at
    most about 2 (max - min) / bins, so :meth:`quantile` is within (max - min) / BINS of
    ``np.quantile`` for the default bins. Deterministic: the result depends only on the rows and
    their order. Memory: (columns, bins) counts plus the buffer.
    """

    def __init__(self, bins: int = STREAM_BINS, flush_rows: int = 1 << 16):
        self.bins, self.flush_rows = bins, flush_rows
        self.counts: np.ndarray | None = None
        self.lo: np.ndarray | None = None
        self.width: np.ndarray | None = None
        self._buf: list[np.ndarray] = []
        self._buf_moments: list[Moments | None] = []
        self._rows = 0
        self.moments: Moments | None = None
        """Moments of every row added so far (merged exactly, batch by batch)."""

    def add(self, x: np.ndarray, moments: Moments | None = None) -> None:
        """Account for the rows of a (T, D) (or (T,)) array; ``moments``: its moments if already known."""
        x = np.asarray(x)
        self._buf.append(x.reshape(len(x), -1))
        self._buf_moments.append(moments)
        self._rows += len(x)
        if self._rows >= self.flush_rows:
            self.flush()

    def flush(self) -> None:
        if not self._buf:
            return
        x = np.concatenate(self._buf, dtype=np.float64)
        known = self._buf_moments
        self._buf, self._buf_moments, self._rows = [], [], 0
        if not len(x):
            return
        if all(k is not None for k in known):  # merging what is known is cheaper than a pass over x
            m = known[0]
            for k in known[1:]:
                m = m.merge(k)
        else:
            m = Moments.of(x)
        self.moments = m if self.moments is None else self.moments.merge(m)
        mn, mx = m.min, m.max
        B, D = self.bins, x.shape[1]
        if self.counts is None:
            self.lo, self.width = mn.copy(), (mx - mn) / B
            self.counts = np.zeros((D, B), dtype=np.int64)
        else:
            for j in range(D):
                self._grow(j, mn[j], mx[j])
        w = np.where(self.width > 0, self.width, 1.0)
        np.subtract(x, self.lo, out=x)
        np.divide(x, w, out=x)
        idx = x.astype(np.int64)
        np.clip(idx, 0, B - 1, out=idx)
        idx += np.arange(D, dtype=np.int64) * B
        self.counts += np.bincount(idx.ravel(), minlength=D * B).reshape(D, B)

    def _grow(self, j: int, mn: float, mx: float) -> None:
        """Make column ``j``'s grid cover [mn, mx] and its data so far, re-binning exactly."""
        B, lo, w, c = self.bins, self.lo[j], self.width[j], self.counts[j]
        if w == 0:  # every value so far equals lo (one point mass in bin 0)
            new_lo, new_hi = min(mn, lo), max(mx, lo)
            if new_hi == new_lo:
                return
            new_w = (new_hi - new_lo) / B
            n = c.sum()
            c[:] = 0
            c[min(int((lo - new_lo) / new_w), B - 1)] = n
            self.lo[j], self.width[j] = new_lo, new_w
            return
        occ = np.flatnonzero(c)
        need_lo = min(mn, lo + occ[0] * w)
        need_hi = max(mx, lo + (occ[-1] + 1) * w)
        if need_lo >= lo and need_hi <= lo + B * w:
            return
        k = 0
        while True:
            w2 = w * 2.0**k
            j0 = int(np.floor((need_lo - lo) / w2))
            if lo + (j0 + B) * w2 >= need_hi and (occ[-1] >> k) - j0 < B and (occ[0] >> k) - j0 >= 0:
                break
            k += 1
        new = np.bincount((occ >> k) - j0, weights=c[occ], minlength=B)
        self.counts[j] = np.rint(new).astype(np.int64)
        self.lo[j], self.width[j] = lo + j0 * w2, w2

    def quantile(self, q: float, vmin: np.ndarray, vmax: np.ndarray) -> np.ndarray:
        """Quantile ``q`` per column (see :func:`quantile`), clipped to the true [vmin, vmax]."""
        self.flush()
        return quantile(self.counts, self.lo, self.lo + self.width * self.bins, q, vmin, vmax)


def quantile(
    counts: np.ndarray, lo: np.ndarray, hi: np.ndarray, q: float, vmin: np.ndarray, vmax: np.ndarray
) -> np.ndarray:
    """Quantile ``q`` per column from (D, bins) counts, numpy's linear method on order statistics.

    Each order statistic is taken as the centre of its bin (clipped to [vmin, vmax]), so the
    result is within one bin width of ``np.quantile`` on the raw values.
    """
    d, bins = counts.shape
    cum = np.cumsum(counts, axis=1)
    width = (hi - lo) / bins
    out = np.empty(d)
    for j in range(d):
        n = int(cum[j, -1])
        pos = q * (n - 1)
        k0 = int(np.floor(pos))
        k1 = min(k0 + 1, n - 1)
        b = np.searchsorted(cum[j], [k0, k1], side="right")
        v = np.clip(lo[j] + (np.minimum(b, bins - 1) + 0.5) * width[j], vmin[j], vmax[j])
        out[j] = v[0] + (pos - k0) * (v[1] - v[0])
    return out


def to_json(a) -> list:
    """A numpy array as nested Python lists of floats/ints (for JSON)."""
    return np.asarray(a).tolist()


def moments_stats(m: Moments) -> dict:
    """``{min, max, mean, std, count}`` of a float feature from its moments (as episode_feature_stats)."""
    return {
        "min": to_json(m.min),
        "max": to_json(m.max),
        "mean": to_json(m.mean),
        "std": to_json(m.std),
        "count": [m.count],
    }


def episode_feature_stats(x: np.ndarray) -> dict:
    """``{min, max, mean, std, count}`` of one feature in one episode (LeRobot v2.1 layout).

    ``x`` is (T,) or (T, D); scalar features get shape-(1,) stats, as LeRobot writes them.
    """
    x = np.asarray(x)
    if x.dtype == bool:
        m = Moments.of(x.astype(np.float64))
        return {
            "min": [bool(x.min())],
            "max": [bool(x.max())],
            "mean": to_json(m.mean),
            "std": to_json(m.std),
            "count": [len(x)],
        }
    m = Moments.of(x)
    cast = (lambda v: to_json(v.astype(np.int64))) if x.dtype.kind in "iu" else to_json
    return {"min": cast(m.min), "max": cast(m.max), "mean": to_json(m.mean), "std": to_json(m.std), "count": [len(x)]}


class PixelStats:
    """Per-channel pixel statistics of a video, values scaled to [0, 1], shape (3, 1, 1) like LeRobot.

    Frames are subsampled spatially to about 10k pixels each to keep the cost small; the sampled pixels are
    counted per channel and value (a 3 x 256 histogram), from which the sums, minimum and maximum are exact.
    """

    _OFFSET = np.arange(3, dtype=np.uint16) * 256  # channel c's values count in bins c*256 .. c*256+255

    def __init__(self) -> None:
        self.counts = np.zeros((3, 256), dtype=np.int64)

    def add(self, frames: np.ndarray) -> None:
        """Account for a (n, H, W, 3) uint8 chunk."""
        h, w = frames.shape[1:3]
        step = max(1, int((h * w / 10000) ** 0.5))
        binned = frames[:, ::step, ::step] + self._OFFSET
        self.counts += np.bincount(binned.ravel(), minlength=3 * 256).reshape(3, 256)

    def to_json(self, frames: int) -> dict:
        values = np.arange(256, dtype=np.int64)
        n = self.counts[0].sum()
        mean = (self.counts @ values).astype(np.float64) / n
        std = np.sqrt(np.maximum((self.counts @ (values * values)).astype(np.float64) / n - mean * mean, 0.0))
        seen = self.counts > 0
        low, high = seen.argmax(axis=1), 255 - seen[:, ::-1].argmax(axis=1)
        shape = lambda v: [[[float(c)]] for c in v]  # noqa: E731
        return {
            "min": shape(low / 255.0),
            "max": shape(high / 255.0),
            "mean": shape(mean / 255.0),
            "std": shape(std / 255.0),
            "count": [frames],
        }
