"""Complete a schema under differential privacy: the values the user did not declare public.

Bounds of numeric columns, categories of categorical columns and the label prior are data-
dependent: reading them from the data for free would leak (design.md section 2, rule 2). Each
missing value is estimated by a DP mechanism from ``dpforge.statistics.dp_stats``, and its event is
recorded in the run's ledger, so it is charged to the same (epsilon, delta) budget as training.

Budget split: the metadata get ``share`` of epsilon and of delta. Half of the metadata delta is
the accountant's; the other half pays the release probability of the thresholded category
histograms (their ``extra_delta``). All histogram releases (discrete Gaussian,
:func:`dpforge.statistics.dp_noise.histogram_event`) share one noise multiplier calibrated by
the accountant that reports their events, so that their composition costs at most
(share * epsilon, share * delta / 2).

With a privacy unit (one person, at most k rows kept: :mod:`dpforge.privacy.person`) each
histogram's L2 sensitivity is k: the estimators add k times the noise, the events are the zCDP
of the same sigma (a person's rows may fall in several bins), the calibration is for those,
and each ledger entry says so. Histograms noised at federated sites are zCDP events as well.
Each estimate's event is recorded in the ledger before it runs (it depends on the noise and the
relation only, never on the records).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import dp_accounting
import numpy as np
import pandas as pd

from dpforge.data.arrays import ArrayData
from dpforge.engines.aggregates import ColumnAggregates, TableAggregates, noised_at_source
from dpforge.errors import PrivacyError
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.person import PER_RECORD, PrivacyUnit
from dpforge.schema.array import ArraySchema, Channel
from dpforge.schema.table import Column, Schema
from dpforge.statistics.dp_stats import (
    DpEstimate,
    bounds_event,
    dp_bounds,
    dp_categories,
    dp_label_prior,
    histogram_event,
    noise_multiplier_for,
)
from dpforge.statistics.time_bounds import time_range


@dataclass(frozen=True)
class MetadataBudget:
    """The part of the budget the metadata may use; ``non_private`` for the baseline (sigma 0);
    ``unit``: the neighbouring relation its sensitivities are derived for."""

    epsilon: float
    delta: float
    non_private: bool = False
    unit: PrivacyUnit = PER_RECORD


class _NonPrivateRecorder:
    """Records every metadata access as a NonPrivateDpEvent: honest for the sigma = 0 baseline."""

    def __init__(self, ledger: PrivacyLedger) -> None:
        self.ledger = ledger

    def record(self, name: str, event: object, extra_delta: float = 0.0) -> None:
        self.ledger.record(f"{name} (non-private)", dp_accounting.NonPrivateDpEvent())


def releases_needed(schema: Schema) -> tuple[int, int]:
    """(Gaussian histogram releases, thresholded category releases) the schema needs."""
    gaussian, thresholded = 0, 0
    for column in schema.incomplete_columns:
        if column.is_numeric:
            gaussian += 2  # a coarse and a fine histogram per column (see dp_bounds)
        else:
            gaussian += 1
            thresholded += 1
    if schema.label is not None and schema.label_prior == "dp":
        gaussian += 1
    return gaussian, thresholded


def complete_schema(
    table: pd.DataFrame,
    schema: Schema,
    budget: MetadataBudget,
    ledger: PrivacyLedger,
    rng: np.random.Generator,
) -> tuple[Schema, np.ndarray | None]:
    """Fill the schema's missing values with DP estimates; return it and the label prior.

    The label prior is uniform or user-given (free) unless the schema asks for "dp".
    """
    gaussian, thresholded = releases_needed(schema)
    if gaussian == 0:
        return schema, _public_prior(schema)
    if budget.non_private:  # at sigma = 0 every observed category passes any threshold
        return _complete(table, schema, (0.0, 0.5), budget.unit, ledger, rng)
    if budget.epsilon <= 0 or budget.delta <= 0:
        raise PrivacyError(
            "the schema leaves values to estimate from the data but the metadata budget share "
            "is 0: give a share > 0, or declare bounds, categories and the label prior"
        )
    sigma = noise_multiplier_for(
        budget.epsilon, budget.delta / 2, gaussian, budget.unit.rows, noised_at_source(table)
    )
    threshold_delta = budget.delta / 2 / thresholded if thresholded else 0.0
    return _complete(table, schema, (sigma, threshold_delta), budget.unit, ledger, rng)


def _complete(table, schema, noise: tuple[float, float], unit: PrivacyUnit, ledger, rng):
    """Estimate every missing value at noise ``sigma, threshold_delta = noise`` (sigma 0: the
    non-private baseline, whose ledger entries are then ``NonPrivateDpEvent``s, so the run
    reports epsilon = inf), each histogram's sensitivity scaled for ``unit``."""
    if noise[0] == 0.0:
        ledger = _NonPrivateRecorder(ledger)
    columns = tuple(
        column
        if column.is_complete
        else _estimate_column(_column_values(table, column.name), column, noise, unit, ledger, rng)
        for column in schema.columns
    )
    schema = schema.with_columns(columns)
    dp_prior = schema.label_prior == "dp"
    prior = _dp_prior(table, schema, noise[0], unit, ledger, rng) if dp_prior else None
    return schema, prior if prior is not None else _public_prior(schema)


def _column_values(table, name: str) -> np.ndarray | ColumnAggregates:
    """One column's values, or its engine's aggregates when an engine keeps the records.

    Empty cells (a nullable column) are left out: a record then adds nothing to the estimate,
    which keeps every sensitivity of the add/remove-one-record relation."""
    if isinstance(table, TableAggregates):
        return table.column(name)
    values = table[name]
    return values[values.notna()].to_numpy()


def _as(values, dtype) -> np.ndarray | ColumnAggregates:
    """``values`` as ``dtype`` (an engine's aggregates are already typed by its validation)."""
    return values if isinstance(values, ColumnAggregates) else values.astype(dtype)


def _estimate_column(
    values: np.ndarray | ColumnAggregates,
    column: Column,
    noise: tuple[float, float],
    unit: PrivacyUnit,
    ledger: PrivacyLedger,
    rng: np.random.Generator,
) -> Column:
    sigma, threshold_delta = noise
    at_source = noised_at_source(values)
    if column.is_numeric or column.is_time:
        event = bounds_event(sigma, True, unit.rows, at_source)
        what = "range" if column.is_time else "bounds"
        ledger.record(unit.entry(f"metadata: {what} of '{column.name}'"), event)
    if column.is_time:
        values = _as(values, np.float64)
        _, lower, upper = time_range(values, column, sigma, rng, sensitivity=unit.rows)
        return replace(column, lower=lower, upper=upper)
    if column.is_numeric:
        estimate = dp_bounds(_as(values, np.float64), sigma, rng, sensitivity=unit.rows)
        lower, upper = estimate.value
        if column.type == "integer":
            lower, upper = float(np.floor(lower)), float(np.ceil(upper))
        if lower >= upper:
            upper = lower + 1.0
        return replace(column, lower=lower, upper=upper)
    name = unit.entry(f"metadata: categories of '{column.name}'")
    ledger.record(name, histogram_event(sigma, unit.rows, at_source), threshold_delta)
    estimate = dp_categories(_as(values, str), sigma, threshold_delta, rng, max_rows=unit.rows)
    categories = tuple(estimate.value)
    if column.other is not None and column.other not in categories:
        categories += (column.other,)  # the rarer values pool into it (data.tables)
    if not categories:
        raise PrivacyError(
            f"column '{column.name}': no category is frequent enough to be released under the "
            "metadata budget; declare the categories in the schema, raise the budget share, or "
            'declare an "other" value that rare values pool into'
        )
    return replace(column, categories=categories)


def _dp_prior(
    table: pd.DataFrame,
    schema: Schema,
    sigma: float,
    unit: PrivacyUnit,
    ledger: PrivacyLedger,
    rng: np.random.Generator,
) -> np.ndarray:
    label = schema.label_column
    values = _column_values(table, label.name)
    event = histogram_event(sigma, unit.rows, noised_at_source(values))
    ledger.record(unit.entry(f"metadata: label prior of '{label.name}'"), event)
    estimate = dp_label_prior(values, label.categories, sigma, rng, sensitivity=unit.rows)
    return np.asarray(estimate.value, dtype=np.float64)


def _public_prior(schema: Schema) -> np.ndarray | None:
    label = schema.label_column
    if label is None:
        return None
    if schema.label_prior == "uniform":
        return np.full(len(label.categories), 1.0 / len(label.categories))
    if isinstance(schema.label_prior, dict):
        return np.array([schema.label_prior[c] for c in label.categories], dtype=np.float64)
    raise PrivacyError("the label prior is 'dp' but was not estimated")  # unreachable by design


# --------------------------------------------------------------------- images and time series


def array_releases_needed(schema: ArraySchema) -> tuple[int, int]:
    """(Gaussian releases, thresholded releases) to complete an image/time-series schema.

    A channel's range takes two bound estimates (lower from each record's minimum, upper from
    each record's maximum: one value per record each, so sensitivity 1), each one histogram on
    a quarter-octave grid (see :func:`_estimate_channel`).
    """
    gaussian = 2 * len(schema.incomplete_channels)
    thresholded = 0
    if schema.label is not None and schema.classes is None:
        gaussian, thresholded = gaussian + 1, 1
    if schema.label is not None and schema.label_prior == "dp":
        gaussian += 1
    return gaussian, thresholded


def complete_array_schema(
    data: ArrayData,
    schema: ArraySchema,
    budget: MetadataBudget,
    ledger: PrivacyLedger,
    rng: np.random.Generator,
) -> tuple[ArraySchema, np.ndarray | None]:
    """Fill missing channel ranges and label classes with DP estimates; return the prior.

    ``data`` must have passed ``validate_arrays``. Same budget split as :func:`complete_schema`.
    """
    gaussian, thresholded = array_releases_needed(schema)
    if gaussian == 0:
        return schema, _public_array_prior(schema)
    if budget.non_private:
        sigma, threshold_delta, ledger = 0.0, 0.5, _NonPrivateRecorder(ledger)
    else:
        if budget.epsilon <= 0 or budget.delta <= 0:
            raise PrivacyError(
                "the schema leaves channel ranges, classes or the label prior to estimate from "
                "the data but the metadata budget share is 0: give a share > 0 or declare them"
            )
        sigma = noise_multiplier_for(budget.epsilon, budget.delta / 2, gaussian)
        threshold_delta = budget.delta / 2 / thresholded if thresholded else 0.0
    channels = tuple(
        channel if channel.is_complete else _estimate_channel(data, i, channel, sigma, ledger, rng)
        for i, channel in enumerate(schema.channels)
    )
    schema = schema.with_channels(channels)
    if schema.label is not None and schema.classes is None:
        name = f"metadata: classes of '{schema.label}'"
        ledger.record(name, histogram_event(sigma), threshold_delta)
        estimate = dp_categories(data.labels.astype(str), sigma, threshold_delta, rng)
        if len(estimate.value) < 2:
            raise PrivacyError(
                f"label '{schema.label}': fewer than 2 classes are frequent enough to be released "
                "under the metadata budget; declare the classes in the schema"
            )
        schema = schema.with_classes(tuple(estimate.value))
    if schema.label is not None and schema.label_prior == "dp":
        ledger.record(f"metadata: label prior of '{schema.label}'", histogram_event(sigma))
        estimate = dp_label_prior(data.labels, schema.classes, sigma, rng)
        return schema, np.asarray(estimate.value, dtype=np.float64)
    return schema, _public_array_prior(schema)


def channel_bound(values: np.ndarray, sigma: float, rng: np.random.Generator) -> DpEstimate:
    """DP bounds of one value per record (a channel's minima or maxima): ONE Gaussian histogram
    on a quarter-octave grid, quantile bins widened by half an octave, spurious-bin level 1e-3.

    Why not :func:`dp_bounds`' two-stage default: with the records of a typical series data set
    its fine stage is never affordable (it needs about N >= 70σ), so half the budget bought
    nothing and the range came out in whole octaves widened by an octave: [-4, 8] for daily
    power curves in [-2.3, 3.3] (767 records, ε = 0.3). In 1,000 draws of the noise at that
    budget this setting gave [-2.83, 2.83] in the median and clipped at most 0.7 % of the
    values; the level 1e-3 (instead of 1e-2) cut the draws in which a noise bin far out on the
    public grid became the bound from 0.6 % to 0.1 %. Chosen on the training part only
    (bench/results/series/italy_anchor_notes.md).
    """
    return dp_bounds(
        values, sigma, rng, fine=False, bins_per_octave=4, widen_octaves=0.5,
        spurious_bin_prob=1e-3,
    )  # fmt: skip


def _estimate_channel(data, index, channel, sigma, ledger, rng) -> Channel:
    """DP range of one channel: a low quantile of per-record minima, a high one of maxima."""
    plane = data.values[:, index].reshape(len(data), -1)
    ledger.record(f"metadata: lower bound of channel '{channel.name}'", histogram_event(sigma))
    low = channel_bound(plane.min(axis=1), sigma, rng)
    ledger.record(f"metadata: upper bound of channel '{channel.name}'", histogram_event(sigma))
    high = channel_bound(plane.max(axis=1), sigma, rng)
    lower, upper = low.value[0], high.value[1]
    if lower >= upper:
        upper = lower + 1.0
    return replace(channel, lower=float(lower), upper=float(upper))


def _public_array_prior(schema: ArraySchema) -> np.ndarray | None:
    if schema.label is None:
        return None
    if schema.label_prior == "uniform":
        return np.full(len(schema.classes), 1.0 / len(schema.classes))
    if isinstance(schema.label_prior, dict):
        return np.array([schema.label_prior[c] for c in schema.classes], dtype=np.float64)
    raise PrivacyError("the label prior is 'dp' but was not estimated")  # unreachable by design
