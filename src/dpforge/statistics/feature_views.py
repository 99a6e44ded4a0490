"""The views a record is cut into before its random Fourier features (all public maps).

A view turns a record ``x`` (n, channels, *spatial) in [-1, 1] into a vector and says which
*blocks* of that vector its frequencies act on. A view of one block gets Gaussian frequencies
over the whole vector (the kernel is a Gaussian on that view); a view of several blocks gets
frequencies that each act on one block only, so its kernel is the average over the blocks of a
Gaussian on each block. Whatever the view, :class:`~dpforge.statistics.features.RandomFeatures`
maps it to ``[cos(W v), sin(W v)] / sqrt(m)``, of L2 norm exactly 1: the views change which
records the kernel calls close, never the release's sensitivity.

The views (series only, except ``values``):

* ``values``: the record itself (images: the pixels);
* ``differences``: first differences along time (the shape of a curve, not only its level);
* ``windows``: local windows of ``WINDOW`` time steps every ``WINDOW // 2`` steps, one block
  each (the kernel compares the same stretch of the day of two curves, stretch by stretch);

A series is ``(n, channels, length)``; every view keeps the channels together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from dpforge.statistics.features import FeatureAnchorConfig

__all__ = [
    "SERIES_VIEWS",
    "VIEWS",
    "KindViews",
    "RandomFeatures",
    "check_views",
    "view_blocks",
    "view_of",
]

VALUES, DIFFERENCES, WINDOWS = "values", "differences", "windows"
SERIES_VIEWS = (VALUES, DIFFERENCES, WINDOWS)
VIEWS = SERIES_VIEWS
WINDOW = 6  # time steps per local window (a quarter of a day of hourly values)
MIN_LENGTH = {VALUES: 1, DIFFERENCES: 2, WINDOWS: 2}


@dataclass(frozen=True)
class KindViews:
    """The views one kind's records take (all public), declared by the kind
    (:mod:`dpforge.kinds.feature_defaults`) and handed down as a value: ``allowed``, the views
    a map of its records may name; ``legacy``, those of a map that names none (every map
    before views were a setting, and what a model folder without ``views`` was fitted with);
    ``kind``, its name as a model folder states it; ``noun``, the kind in messages."""

    kind: str
    noun: str
    allowed: tuple[str, ...]
    legacy: tuple[str, ...]

    def of(self, named: Sequence[str]) -> tuple[str, ...]:
        """The views of a map that names ``named`` (empty: the legacy ones)."""
        return tuple(named) or self.legacy

    def check(self, views: tuple[str, ...], shape: tuple[int, ...]) -> None:
        """Refuse what :func:`check_views` refuses, and views the kind does not take."""
        check_views(views, shape)
        if not set(views) <= set(self.allowed):
            names = ", ".join(repr(v) for v in self.allowed)
            raise ValueError(
                f"{self.noun} take the view{'s' if len(self.allowed) > 1 else ''} {names} only, "
                f"got {list(views)}: leave views empty (the default)"
            )


def check_views(views: tuple[str, ...], shape: tuple[int, ...]) -> None:
    """Refuse unknown, repeated or no views and series too short for a view."""
    unknown = [v for v in views if v not in VIEWS]
    if unknown or len(set(views)) != len(views) or not views:
        raise ValueError(
            f"anchor views must be distinct names out of {list(VIEWS)}, got {list(views)}"
        )
    for v in views:
        if shape[-1] < MIN_LENGTH[v]:
            raise ValueError(
                f"the view {v!r} needs series of length >= {MIN_LENGTH[v]}, got {shape[-1]}"
            )


def _windows(length: int) -> list[tuple[int, int]]:
    """(start, stop) of the local windows: ``WINDOW`` steps every ``WINDOW // 2``, the last
    one ending at the series' end (one window when the series is shorter)."""
    width = min(WINDOW, length)
    stride = max(1, width // 2)
    starts = list(range(0, length - width + 1, stride))
    if starts[-1] != length - width:
        starts.append(length - width)
    return [(s, s + width) for s in starts]


def view_of(x: torch.Tensor, name: str) -> torch.Tensor:
    """(n, *shape) records -> (n, dim) vectors of view ``name``."""
    if name == VALUES:
        return x.flatten(1)
    if name == DIFFERENCES:
        return (x[..., 1:] - x[..., :-1]).flatten(1)
    if name == WINDOWS:
        parts = [x[..., a:b].flatten(1) for a, b in _windows(x.shape[-1])]
        return torch.cat(parts, dim=1)
    raise ValueError(f"unknown view {name!r}: one of {list(VIEWS)}")


def view_blocks(name: str, shape: tuple[int, ...]) -> list[int]:
    """Sizes of the view's blocks, in order (their sum is the view's dimension)."""
    dim = view_of(torch.zeros(1, *shape), name).shape[1]
    if name != WINDOWS:
        return [dim]
    channels = dim // sum(b - a for a, b in _windows(shape[-1]))
    return [channels * (b - a) for a, b in _windows(shape[-1])]


class RandomFeatures:
    """A public random Fourier feature map with feature vectors of L2 norm exactly 1.

    ``shape`` is the record's (channels, *spatial); the frequencies depend only on the shape,
    the views, the config and ``generator`` (the run's seed), never on the data. Whether the
    kind takes ``views`` is the kind's check (:meth:`KindViews.check`); here only the names
    and the series' length are checked.
    """

    def __init__(
        self,
        shape: Sequence[int],
        views: Sequence[str],
        config: FeatureAnchorConfig,
        generator: torch.Generator,
    ) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.views = tuple(views)
        check_views(self.views, self.shape)
        self.frequencies: list[torch.Tensor] = []
        for name in self.views:
            blocks = view_blocks(name, self.shape)
            self.frequencies.append(_frequencies(blocks, config, generator))
        self.dim = 2 * config.n_features * len(self.views)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(n, *shape) records in [-1, 1] -> (n, dim) features, each row of norm 1."""
        parts = []
        scale = 1.0 / math.sqrt(len(self.views))
        for name, w in zip(self.views, self.frequencies, strict=True):
            proj = view_of(x, name) @ w.to(x).T
            m = w.shape[0]
            parts += [torch.cos(proj), torch.sin(proj)]
            parts[-2:] = [p * (scale / math.sqrt(m)) for p in parts[-2:]]
        return torch.cat(parts, dim=1)


def _split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal whole counts (in order)."""
    return [int(c) for c in np.diff(np.linspace(0, total, parts + 1).round())]


def _frequencies(blocks: list[int], config: FeatureAnchorConfig, generator: torch.Generator):
    """``n_features`` Gaussian frequencies, split over the bandwidths (in units of the square
    root of a block's size), each bandwidth's split over the view's ``blocks``: a frequency is
    zero outside its block. One block draws exactly what maps before blocks drew."""
    dim = sum(blocks)
    out = []
    for count, bandwidth in zip(_split(config.n_features, len(config.bandwidths)),
                                config.bandwidths, strict=True):  # fmt: skip
        if len(blocks) == 1:
            out.append(torch.randn(count, dim, generator=generator) / (bandwidth * math.sqrt(dim)))
            continue
        start = 0
        for size, rows in zip(blocks, _split(count, len(blocks)), strict=True):
            w = torch.zeros(rows, dim)
            w[:, start : start + size] = torch.randn(rows, size, generator=generator) / (
                bandwidth * math.sqrt(size)
            )
            out.append(w)
            start += size
    return torch.cat(out)
