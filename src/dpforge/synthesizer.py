"""The facade: ``Synthesizer(schema, method=..., epsilon=..., ...).fit(data)``, then sample/save.

A thin user-facing wrapper: a whole fit (options, checks, the pipeline of named stages, the
fitted state and the model folder) is :class:`dpforge.fitting.FitRun`; the facade adds
sampling, which hands :mod:`dpforge.generate` the fitted model (:meth:`FitRun.fitted_model`),
never itself, and :func:`load`.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from dpforge import options as run_options
from dpforge.conditions import conditioned_batch, conditioned_chunks
from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError
from dpforge.fitting import FitRun
from dpforge.generate import (
    SAMPLE_CHUNK_ROWS,
    Mover,
    RowMatcher,
    default_mover,
)
from dpforge.kinds import resolve_anchor
from dpforge.model_io import read_model, restore
from dpforge.privacy.noise import make_generator
from dpforge.statistics.particles import MoveSettings
from dpforge.statistics.reweight import ReweightSettings

__all__ = ["Synthesizer", "load", "resolve_anchor"]


class Synthesizer(FitRun):
    """Differentially private synthetic tables, images and time series.

    ``fit``, ``check_options``, ``privacy_spent``, ``fitted_model`` and ``save`` are the whole
    fit's (:class:`dpforge.fitting.FitRun`); this class adds sampling.

    Parameters
    ----------
    schema: the public metadata: a :class:`dpforge.schema.table.Schema` (tables, fit on a DataFrame)
        or an :class:`dpforge.schema.array.ArraySchema` (images or time series, fit on
        :class:`dpforge.data.arrays.ArrayData`).
    method: the refiner (``dpforge fit --refine``): "dpcgan", "dpwgan" or "gswgan", a private
        discriminator that refines the anchored generator (or, with ``anchor=None``, trains
        it). Naming one with the default anchoring leaves it ``1 - options.REFINE_SHARE`` of
        the budget; None (default) refines only when the anchor leaves budget (share below 1,
        or ``anchor=None``), with dpcgan. Refiner options for a run without one are an error.
    epsilon, delta: the total privacy budget, metadata included. ``epsilon=math.inf`` trains
        the non-private baseline of the same code path (sigma = 0, C = inf); it needs ``epochs``.
    noise_multiplier, epochs: give at most one to fix it; the other is calibrated by the
        accountant. With neither, 50 epochs and the noise multiplier that fits the budget.
    metadata_share: fraction of epsilon and delta for DP estimates of undeclared metadata.
    anchor: marginal anchoring for tables (:class:`dpforge.statistics.anchor.AnchorConfig`):
        1-way marginals and label x column marginals measured once with the Gaussian mechanism
        (charged to the budget) and matched by the generator, numeric columns on public cells.
        For images and series, feature anchoring
        (:class:`dpforge.statistics.features.FeatureAnchorConfig`): per-class mean embeddings
        in public random Fourier features (series: values and first differences) and the class
        counts, one Gaussian release charged to the budget, matched by the generator.
        "auto" (default) anchors tables on marginals and arrays on features; None turns it off
        (the discriminator alone, numeric columns scaled to [-1, 1]). ``share`` is the part of
        the budget after the metadata that the measurements get; 1.0 (default) trains on them
        alone, without discriminator steps.
    method_options: the method's config (``DPCGANConfig``, ``DPWGANConfig``,
        ``GSWGANConfig``): batch size, C, networks, optimizers.
    seed: None (noise seeded from the OS: use for releases) or an int (reproducible runs).
    checkpoint_dir, checkpoint_every: where and how often to write a private, resumable
        checkpoint (it holds the discriminator: keep it with the data, never publish it).
    record_count: a PUBLIC number of records (declared, or released under DP before, as the
        hyperparameter search does); without it the count is released under DP first.
    privacy_unit, max_rows_per_unit: the guarantee per person rather than per row (tables):
        the column that identifies a person (an identifier column of the schema, type "drop"
        or "surrogate") and k, the most rows kept per person (chosen at random); every
        sensitivity is scaled by k (:mod:`dpforge.privacy.person`); dpcgan and dpwgan
        refine per person (whole persons sampled, each one's gradient clipped to C).
    public_data: images (:class:`ArrayData`, same shape, labelled or not, any domain) that are
        PUBLIC: they may be published as they are. They train a feature extractor for
        perceptual anchoring (:mod:`dpforge.statistics.perceptual`), cost no budget and are
        never mixed with the private records nor read through the engine.
    """

    # -- use -------------------------------------------------------------------------------------
    def sample(
        self,
        n: int,
        conditions: dict[str, Any] | None = None,
        seed: int | None = None,
        move: bool | MoveSettings | ReweightSettings | None = None,
    ) -> pd.DataFrame | ArrayData:
        """``n`` synthetic records: a table with the schema's columns, or :class:`ArrayData`
        for images and time series. ``conditions`` fixes values of columns (tables: any
        column, e.g. ``{"sex": "F", "age": (30, 40), "region": ["N", "S"]}``: a value, a list
        of values, or a closed range with None for an open end; images and series: one class
        of the label); the other columns follow the model's conditional distribution
        (:mod:`dpforge.conditions`). Without a condition on the label, labels are drawn from
        the (uniform, declared or DP) label prior. ``move``: match the
        generated records to the model's stored release (free post-processing): series are
        moved to the released embedding (:mod:`dpforge.statistics.particles`), table rows are
        drawn from a pool weighted to the measured marginals
        (:mod:`dpforge.statistics.reweight`). None (default) does so when the model holds the
        release and its kind moves by default (its ``moved_by_default``: series and tables),
        True refuses a model without it (folders saved before it was stored), False leaves the draws as they come; a ``MoveSettings``
        (series, images) or ``ReweightSettings`` (tables) gives the settings."""
        self._check_sample_request(n, seed)
        mover = self.mover(move)
        model, generator = self.fitted_model(), make_generator(seed, self.device)
        return conditioned_batch(model, n, conditions, generator, mover)

    def sample_chunks(
        self,
        n: int,
        conditions: dict[str, Any] | None = None,
        seed: int | None = None,
        chunk_rows: int = SAMPLE_CHUNK_ROWS,
        move: bool | MoveSettings | ReweightSettings | None = None,
    ) -> Iterator[pd.DataFrame | ArrayData]:
        """``n`` synthetic records as consecutive chunks of at most ``chunk_rows`` each, so
        that memory stays bounded however large ``n`` is (the command line streams them to the
        output file). One random stream runs through the chunks: the same seed and chunk size
        give the same records. ``conditions`` and ``move`` as in :meth:`sample`."""
        self._check_sample_request(n, seed)
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
            raise DataError(f"chunk_rows must be a whole number >= 1, got {chunk_rows!r}")
        mover = self.mover(move)
        model, generator = self.fitted_model(), make_generator(seed, self.device)
        yield from conditioned_chunks(model, n, conditions, generator, mover, chunk_rows)

    def mover(
        self, move: bool | MoveSettings | ReweightSettings | None
    ) -> Mover | RowMatcher | None:
        """The moving of samples that ``move`` asks for (None: plain samples); it refuses what
        the model cannot do, so the command line calls it before any work."""
        return default_mover(self.fitted_model(), move)

    def _check_sample_request(self, n: Any, seed: Any) -> None:
        self._require_fitted()
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise DataError(f"the number of rows to sample must be a whole number >= 1, got {n}")
        run_options.check_seed(seed)


def load(path: str | Path) -> Synthesizer:
    """Load a model folder written by :meth:`Synthesizer.save`; the result samples, not trains."""
    return restore(Synthesizer, *read_model(path))
