"""The releases a default fit makes before any discriminator, each set up for a many-runs audit.

Each target runs the package's REAL measurement function (looked up on its module at every
call, so that a test or the bench can wrap it with a planted defect) on a small data set of
``records`` plain records, with and without one canary record whose contribution is
distinguishable: it sits in cells, classes or directions no other record touches. Every run's
release is reduced to one number, the projection of the release minus the other records' exact
contribution onto the canary's exact contribution Δ, in units of the CLAIMED noise standard
deviation per coordinate (σ times the sensitivity stated in the module's docstring, written
out here rather than read from the code audited):

    statistic = Δ · (release − base) / (σ S ‖Δ‖),

N(0, 1) without the canary and N(‖Δ‖ / (σ S), 1) with it; ‖Δ‖ = S for these canaries, so a
correct release gives the shift 1/σ its claimed ``GaussianDpEvent(σ)`` allows. ``base`` and Δ
come from the same real function called with noise 0 (the exact aggregate).

The metadata estimates are imported in ONE place, :data:`metadata_estimates` below, so that
a move of that module is a one-line change here (the tests' planted defects reach it through
this name).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import dp_accounting
import numpy as np
import pandas as pd
import torch

from dpforge.audit.bound import THRESHOLDS
from dpforge.data.encoder import TableEncoder
from dpforge.privacy.release_noise import table_event
from dpforge.schema.table import Column, Schema
from dpforge.statistics import cells, features, marginals, moments, rounds
from dpforge.statistics import dp_stats as metadata_estimates

__all__ = [
    "ReleaseTarget",
    "TARGETS",
    "marginal_frames",
    "metadata_estimates",
    "projected",
    "projector",
]

COUNT_WEIGHT = 0.5  # the images' and series' default count weight c


@dataclass(frozen=True)
class ReleaseTarget:
    """One release under audit: its claimed event and a run's statistic (see module notes)."""

    name: str
    event: dp_accounting.DpEvent
    statistic: Callable[[bool, np.random.Generator], float]
    thresholds: tuple[float, ...] = THRESHOLDS  # the events' grid (a 0/1 statistic: (0.5,))


def projector(exact: Callable[[bool], np.ndarray], claimed_std: float):
    """``release -> Δ·(release − base) / (claimed_std ‖Δ‖)`` from the exact aggregates."""
    base, with_canary = exact(False), exact(True)
    delta = with_canary - base
    norm = float(np.linalg.norm(delta))
    return lambda release: float(delta @ (release - base)) / (claimed_std * norm)


Release = Callable[[bool, float, np.random.Generator], np.ndarray]


def projected(release: Release, sigma: float, claimed_std: float):
    """The statistic of a release ``release(with_canary, noise, rng)`` at noise ``sigma``:
    its :func:`projector`, the exact aggregates being the release at noise 0."""
    project = projector(lambda c: release(c, 0.0, np.random.default_rng(0)), claimed_std)
    return lambda with_canary, rng: project(release(with_canary, sigma, rng))


def marginal_frames(
    records: int, canary_rows: int
) -> tuple[TableEncoder, dict[bool, pd.DataFrame]]:
    """Two categorical columns and a label; the others all (x, x, p), the canary's
    ``canary_rows`` rows all (y, y, q): the cells no other record touches."""
    cats = ("x", "y")
    schema = Schema(
        tuple(Column(n, "categorical", categories=cats) for n in ("a", "b"))
        + (Column("label", "categorical", categories=("p", "q")),),
        label="label",
    )
    others = pd.DataFrame({"a": ["x"] * records, "b": ["x"] * records, "label": ["p"] * records})
    rows = canary_rows
    canary = pd.DataFrame({"a": ["y"] * rows, "b": ["y"] * rows, "label": ["q"] * rows})
    frames = {False: others, True: pd.concat([others, canary], ignore_index=True)}
    return TableEncoder(schema), frames


def _marginal_target(sigma: float, records: int) -> ReleaseTarget:
    """Round one of the table anchoring (rounds.measure_round_one): 1-way and label x column
    marginals, k = 4 of them, claimed L2 sensitivity sqrt(k)."""
    encoder, frames = marginal_frames(records, 1)
    blocks = {c: marginals.encoded_cells(encoder, frames[c], "label") for c in (False, True)}
    k = len(marginals.default_marginals(encoder.spans, "label"))

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        plan = rounds.AnchorPlan(noise)
        out = rounds.measure_round_one(
            plan, blocks[with_canary], encoder.spans, "label", rng, float(records)
        )
        return np.concatenate([m.noisy_counts for m in out])

    statistic = projected(release, sigma, sigma * k**0.5)
    return ReleaseTarget("table marginals", table_event(sigma, k), statistic)


def _cells_target(sigma: float, records: int) -> ReleaseTarget:
    """The fine histograms that place the numeric cells (cells.measure_fine_histograms): m = 4
    columns, claimed L2 sensitivity sqrt(m)."""
    columns = [Column(f"v{i}", "continuous", lower=0.0, upper=1.0) for i in range(4)]
    others = pd.DataFrame({c.name: [0.25] * records for c in columns})
    canary = pd.DataFrame({c.name: [0.75] for c in columns})
    tables = {False: others, True: pd.concat([others, canary], ignore_index=True)}

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        out = cells.measure_fine_histograms(tables[with_canary], columns, noise, rng)
        return np.concatenate([out[c.name] for c in columns])

    statistic = projected(release, sigma, sigma * 2.0)
    return ReleaseTarget("numeric cells", table_event(sigma, len(columns)), statistic)


def _image_records(records: int, d: int = 4) -> dict[bool, tuple[np.ndarray, np.ndarray]]:
    """Blank images (every pixel 0) in two classes, and a canary of class 0 (every pixel 1)."""
    x = np.zeros((records, 1, d))
    y = np.arange(records) >= records // 2
    canary_x, canary_y = np.ones((1, 1, d)), np.zeros(1, dtype=bool)
    joined = (np.concatenate([x, canary_x]), np.concatenate([y, canary_y]).astype(np.int64))
    return {False: (x, y.astype(np.int64)), True: joined}


def _moments_target(sigma: float, records: int) -> ReleaseTarget:
    """The images' per-class moments in a subspace (moments.class_moments), rank 1 along the
    canary: its z = 1, so Δ = (1, 1, c) in its class; claimed sensitivity sqrt(2 + c^2)."""
    data, d = _image_records(records), 4
    subspace = moments.Subspace(np.full((d, 1), d**-0.5), np.zeros(d))

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        x, y = data[with_canary]
        out = moments.class_moments(x, y, 2, subspace, noise, COUNT_WEIGHT, rng)
        return np.concatenate([out.sums.ravel(), out.second.ravel(), COUNT_WEIGHT * out.counts])

    claimed = sigma * math.sqrt(2.0 + COUNT_WEIGHT**2)
    statistic = projected(release, sigma, claimed)
    return ReleaseTarget("image moments", features.embedding_event(sigma), statistic)


def _subspace_target(sigma: float, records: int) -> ReleaseTarget:
    """The images' principal subspace (moments.principal_subspace). Its output is the basis and
    the noisy mean (post-processing); the statistic reads the mean along the canary, scaled by
    the public number of records: shift 1 / (σ sqrt(2 + c^2)), the second moments unseen."""
    data, d = _image_records(records), 4
    direction = np.full(d, d**-0.5)
    claimed = sigma * math.sqrt(2.0 + COUNT_WEIGHT**2)

    def statistic(with_canary: bool, rng: np.random.Generator) -> float:
        x, _ = data[with_canary]
        out = moments.principal_subspace(x, 2, 1, sigma, COUNT_WEIGHT, rng)
        return float(out.mean @ direction) * records / claimed  # the others add 0 to the sum

    return ReleaseTarget("image subspace", features.embedding_event(sigma), statistic)


def _embedding_target(sigma: float, records: int) -> ReleaseTarget:
    """The series' (and images' option) mean embedding (features.measure_embedding): per-class
    sums of norm-1 random features and c * counts; claimed sensitivity sqrt(1 + c^2)."""
    data = _image_records(records)
    config = features.FeatureAnchorConfig(n_features=32)
    phi = features.RandomFeatures((1, 4), ("values",), config, torch.Generator().manual_seed(0))

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        x, y = data[with_canary]
        out = features.measure_embedding(phi, x, y, 2, noise, COUNT_WEIGHT, rng)
        return np.concatenate([out.noisy_sums.ravel(), COUNT_WEIGHT * out.noisy_counts])

    claimed = sigma * math.sqrt(1.0 + COUNT_WEIGHT**2)
    statistic = projected(release, sigma, claimed)
    return ReleaseTarget("embedding", features.embedding_event(sigma), statistic)


def _label_prior_target(sigma: float, records: int) -> ReleaseTarget:
    """The DP label prior (metadata estimate): noisy class counts, clipped, normalised and
    floored; claimed sensitivity 1. The canary holds a class no other record holds; the
    statistic undoes the floor and the normalisation with the public number of records."""
    classes = ("p", "q", "r")
    labels = {False: ["p"] * records, True: ["p"] * records + ["r"]}
    k, floor = len(classes), 0.01 / len(classes)
    estimate = metadata_estimates.dp_label_prior
    event = estimate(labels[False], classes, sigma, np.random.default_rng(0)).event

    def statistic(with_canary: bool, rng: np.random.Generator) -> float:
        prior = metadata_estimates.dp_label_prior(labels[with_canary], classes, sigma, rng).value
        return float((prior[2] - floor) / (1 - k * floor)) * records / sigma

    return ReleaseTarget("label prior (metadata)", event, statistic)


TARGETS: dict[str, Callable[[float, int], ReleaseTarget]] = {
    "marginals": _marginal_target,
    "cells": _cells_target,
    "moments": _moments_target,
    "subspace": _subspace_target,
    "embedding": _embedding_target,
    "label-prior": _label_prior_target,
}
