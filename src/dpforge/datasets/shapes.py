"""Procedurally drawn images of shapes (discs, squares, diamonds) of any size and channels.

Generated, not real: for tests and timings at image sizes that no shipped data set has (64x64
grey, 32x32 colour). Each image is one filled shape of its class at a random centre, size and
colour on a dark background, with a little pixel noise; everything comes from ``rng``.
"""

from __future__ import annotations

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.schema.array import ArraySchema, image_schema

__all__ = ["SHAPE_CLASSES", "drawn_shapes", "shapes_schema"]

SHAPE_CLASSES = ("disc", "square", "diamond")


def shapes_schema(shape: tuple[int, int, int]) -> ArraySchema:
    """The public schema of :func:`drawn_shapes`: pixels 0..255, the three classes."""
    return image_schema(shape, classes=SHAPE_CLASSES)


def drawn_shapes(
    n: int, shape: tuple[int, int, int], rng: np.random.Generator, block: int = 1024
) -> ArrayData:
    """``n`` images of ``shape`` (channels, height, width) as uint8, labelled by shape."""
    channels, height, width = shape
    labels = rng.integers(0, len(SHAPE_CLASSES), n)
    out = np.empty((n, channels, height, width), dtype=np.uint8)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    for start in range(0, n, block):
        stop = min(n, start + block)
        m = stop - start
        cy = rng.uniform(0.3, 0.7, m).astype(np.float32)[:, None, None] * height
        cx = rng.uniform(0.3, 0.7, m).astype(np.float32)[:, None, None] * width
        r = rng.uniform(0.12, 0.28, m).astype(np.float32)[:, None, None] * min(height, width)
        dy, dx = np.abs(yy - cy), np.abs(xx - cx)
        kind = labels[start:stop, None, None]
        inside = np.where(
            kind == 0,
            dy**2 + dx**2 <= r**2,
            np.where(kind == 1, np.maximum(dy, dx) <= r, dy + dx <= r * 1.3),
        )
        colour = rng.uniform(120, 255, (m, channels, 1, 1))
        noise = rng.normal(0.0, 8.0, (m, channels, height, width))
        pixels = 20.0 + inside[:, None] * colour + noise
        out[start:stop] = np.clip(np.rint(pixels), 0, 255).astype(np.uint8)
    return ArrayData(out, np.asarray(SHAPE_CLASSES, dtype=object)[labels])
