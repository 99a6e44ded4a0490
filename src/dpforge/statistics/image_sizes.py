"""What an image fit releases and how much memory it works in, planned from PUBLIC inputs only.

The inputs are the record shape, the number of classes (declared in the schema), the anchor
settings and, with perceptual anchoring, the public set's size. Nothing here reads a private
record: the sizes are fixed before the measure stage runs, so they reveal nothing, and a shape
whose statistics would not fit is refused before the budget is touched (:func:`check_shape`).

Per release (:func:`planned_releases`): how many noisy numbers it publishes and the memory its
computation needs besides the records. :func:`memory_bound` adds the records' encoded copy
(float32), the public set and the process itself: the bound a fit stays under, checked by
``tests/kinds/test_images_large.py`` on 64x64 grey and 32x32 colour images.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpforge.errors import SchemaError
from dpforge.statistics import perceptual
from dpforge.statistics.features import (
    EMBEDDING,
    MOMENTS,
    PERCEPTUAL,
    FeatureAnchorConfig,
    chunk_records,
)
from dpforge.statistics.moments import CHUNK_BYTES

__all__ = ["MAX_PIXELS", "PlannedRelease", "check_shape", "memory_bound", "planned_releases"]

MAX_PIXELS = 64 * 64 * 3  # values per image: the d x d second moment is then 1.2 GB
FLOAT64, FLOAT32 = 8, 4
SUBSPACE_MATRICES = 3  # second moment, its noise, the eigensolver's work (moments.py)
PROCESS_BYTES = 700 * 2**20  # Python, NumPy, SciPy, PyTorch and the generator's training
TRAINING_VALUES = 128  # activations per output value and batch image kept for the backward


@dataclass(frozen=True)
class PlannedRelease:
    """One Gaussian release: its ledger name's subject, the noisy numbers it publishes, and
    the bytes its computation needs on top of the records."""

    name: str
    values: int
    work_bytes: int


def _pixels(shape: tuple[int, ...]) -> int:
    return int(math.prod(shape))


def check_shape(shape: tuple[int, ...], config: FeatureAnchorConfig) -> None:
    """Refuse images too large for the principal subspace (moments, perceptual), in the plan."""
    d = _pixels(shape)
    if config.statistic in (MOMENTS, PERCEPTUAL) and d > MAX_PIXELS:
        gb = SUBSPACE_MATRICES * d * d * FLOAT64 / 1e9
        raise SchemaError(
            f"images of shape {tuple(shape)} have {d} values; their principal subspace needs "
            f"about {gb:.0f} GB (at most {MAX_PIXELS} values, e.g. 64x64x3, are planned): "
            "resize the images, or anchor with FeatureAnchorConfig(statistic='embedding')"
        )


def _subspace(d: int) -> PlannedRelease:
    values = d * (d + 1) // 2 + d + 1  # upper triangle of sum u u^T, sum u, c n
    work = SUBSPACE_MATRICES * d * d * FLOAT64 + CHUNK_BYTES
    return PlannedRelease("principal subspace", values, work)


def _moments(d: int, k: int, rank: int, n_records: int) -> PlannedRelease:
    values = k * (rank + rank * (rank + 1) // 2 + 1)
    work = n_records * rank * FLOAT64 + CHUNK_BYTES + d * rank * FLOAT64
    return PlannedRelease("per-class moments in the subspace", values, work)


def _features(name: str, dim: int, k: int, chunk_values: int) -> PlannedRelease:
    # A chunk's activations: at most 2x the first layer's (convolution and ReLU outputs).
    return PlannedRelease(name, k * dim + k, k * dim * FLOAT64 + chunk_values * FLOAT32)


def planned_releases(
    shape: tuple[int, ...], n_classes: int, config: FeatureAnchorConfig, n_records: int = 0
) -> tuple[PlannedRelease, ...]:
    """The anchoring's releases for images of ``shape`` (``statistic`` already resolved);
    ``n_records`` (the caller's own count, used for memory only) sizes the projected records."""
    d, k = _pixels(shape), max(1, n_classes)
    rank = min(config.rank, d)
    if config.statistic == EMBEDDING:
        dim = 2 * config.n_features
        chunk = chunk_records(tuple(shape)) * dim
        return (_features("mean embeddings of random features", dim, k, chunk),)
    out = (_subspace(d), _moments(d, k, rank, n_records))
    if config.statistic == PERCEPTUAL:
        width = perceptual.EXTRACTOR_WIDTHS[0]
        chunk = chunk_records(tuple(shape)) * 2 * width * d // shape[0]
        name = "mean embeddings of perceptual features"
        out += (_features(name, perceptual.FEATURE_DIM, k, chunk),)
    return out


def memory_bound(
    shape: tuple[int, ...],
    n_classes: int,
    config: FeatureAnchorConfig,
    n_records: int,
    n_public: int = 0,
) -> int:
    """Bytes a fit of ``n_records`` images (and ``n_public`` public ones) stays under: the
    process, the caller's records (at most float64) and their float32 encoding, the public
    set (float32), the largest release's work and the generator's training batch."""
    d = _pixels(shape)
    releases = planned_releases(shape, n_classes, config, n_records)
    records = n_records * d * (FLOAT64 + FLOAT32)
    public = n_public * d * FLOAT32 * 2
    training = config.batch_size * d * TRAINING_VALUES * FLOAT32
    return PROCESS_BYTES + records + public + max(r.work_bytes for r in releases) + training
