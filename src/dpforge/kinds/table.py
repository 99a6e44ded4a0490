"""Tables: records checked against a column schema, anchored on DP-measured marginals.

:class:`TableKind` checks a pandas DataFrame, estimates undeclared metadata under DP and
encodes rows. :class:`MarginalAnchoring` is the default table pipeline (docs/tables.md, "How
the default works"):
fine histograms that place the numeric cells, round 1 (1-way and label x column marginals),
the pair selection and round 2, then the generator fitted to all of them
(:mod:`dpforge.statistics.rounds`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from dpforge.data.encoder import SOFTMAX, TableEncoder
from dpforge.data.tables import keep_released_rows, validate_table
from dpforge.engines.aggregates import TableAggregates, noise_factor, noised_at_source
from dpforge.errors import DataError
from dpforge.kinds.base import Anchoring, Measured, chose
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.noise import make_generator
from dpforge.privacy.person import (
    PrivacyUnit,
    coded_persons,
    frame_keys,
    kept_rows,
    row_priority,
)
from dpforge.privacy.release_noise import noise_generator
from dpforge.privacy.resume import data_fingerprint
from dpforge.schema.table import Schema
from dpforge.statistics.anchor import AnchorConfig, train_anchor
from dpforge.statistics.bound_atoms import column_empty_cells, with_empty_bounds
from dpforge.statistics.cells import (
    CELLS_SNR,
    adaptive_columns,
    bins_from_edges,
    block_size,
    cell_counts,
    cells_for_noise,
    fine_mass,
    measure_fine_histograms,
    quantile_bins,
    within_cell_mass,
)
from dpforge.statistics.codes import (
    code_cell_count,
    codes_from_dict,
    long_code_columns,
    measure_code_histograms,
    place_codes,
)
from dpforge.statistics.estimate import consistent_marginals
from dpforge.statistics.marginal_release import MarginalRelease
from dpforge.statistics.marginals import MeasuredMarginal, default_marginals, encoded_cells
from dpforge.statistics.metadata import MetadataBudget, complete_schema
from dpforge.statistics.phase_steps import anchor_pairs_per_column, anchor_phase
from dpforge.statistics.rounds import (
    AnchorPlan,
    anchor_loss,
    measure_round_one,
    measure_selected_pairs,
    plan_anchoring,
    planned_cell_std,
    round_one_cell_std,
)
from dpforge.statistics.rule_penalty import RULES_WEIGHT, with_rules

FINE_MASS_THRESHOLD = 4.0  # public: about the largest of 1,024 cells of pure noise (z 3.9)
CLIP_NOTE = (
    "values outside the bounds (declared, or estimated under DP) are clipped to them; how many "
    "values, and in which columns, is not reported: it depends on the private records"
)


class TableKind:
    """Tables: a pandas DataFrame checked against a column :class:`Schema`."""

    name = "table"
    encodes_cells = True  # numeric columns on DP-placed cells (a model.json's encoding edges)

    @staticmethod
    def kind_name(schema: Schema) -> str:
        return "table"

    @staticmethod
    def moved_by_default(schema: Schema) -> bool:
        """Whether samples are matched to the stored release unless asked otherwise: yes
        (bench/results/tables/matching.md)."""
        return True

    @staticmethod
    def record_shape(schema: Schema) -> tuple[int, ...]:
        return ()

    @staticmethod
    def incomplete(schema: Schema) -> list[str]:
        """The columns whose bounds or categories are not declared (nor released)."""
        return [c.name for c in schema.incomplete_columns]

    @staticmethod
    def fingerprint(records: Any) -> str:
        """SHA-256 of the validated rows (private: kept in the checkpoint folder only)."""
        hashed = pd.util.hash_pandas_object(records, index=False).to_numpy()
        return data_fingerprint(hashed, np.asarray(list(records.columns), dtype=str))

    @staticmethod
    def validate(data: Any, schema: Schema, out_of_bounds: str) -> pd.DataFrame:
        if isinstance(data, TableAggregates):  # kept by an engine (Spark): checked there
            return data.validated(schema, out_of_bounds)
        if not isinstance(data, pd.DataFrame):
            raise DataError(
                f"a table schema needs a pandas DataFrame, got {type(data).__name__}; for images "
                "or time series use an image/timeseries schema"
            )
        return validate_table(data, schema, out_of_bounds=out_of_bounds)

    @staticmethod
    def validate_bounded(
        data: Any, schema: Schema, out_of_bounds: str, unit: PrivacyUnit, rng: np.random.Generator
    ) -> pd.DataFrame:
        """:meth:`validate`, then at most ``unit.rows`` rows per person, those of smallest
        priority, a hash of each record keyed by a seed from ``rng``, so that an engine keeps
        the same rows (:func:`dpforge.privacy.person.row_priority`); the unit column goes no
        further than integer person codes in the kept rows (for per-person DP-SGD; never
        encoded or saved)."""
        seed = int(rng.integers(2**31 - 1))
        if isinstance(data, TableAggregates):  # kept by an engine (Spark): bounded there
            return data.validated(schema, out_of_bounds, unit.column).bounded(unit.rows, seed)
        records = TableKind.validate(data, schema, out_of_bounds)
        keys = frame_keys(data, unit.column)
        modelled = [c.name for c in schema.columns if not c.is_identifier]
        kept = kept_rows(keys, unit.rows, row_priority(records[modelled], seed))
        records = records.iloc[kept].reset_index(drop=True)
        return records.assign(**{unit.column: coded_persons(keys[kept])})

    @staticmethod
    def complete(data, schema, budget: MetadataBudget, ledger: PrivacyLedger, rng):
        return complete_schema(data, schema, budget, ledger, rng)

    @staticmethod
    def released(data: pd.DataFrame, schema: Schema) -> pd.DataFrame:
        """The rows whose categories were all released (see ``keep_released_rows``)."""
        if isinstance(data, TableAggregates):
            return data.released(schema)
        return keep_released_rows(data, schema)

    @staticmethod
    def may_clip(schema: Schema, out_of_bounds: str) -> bool:
        """Whether the encoder may clip values, decided from public settings only: some numeric
        column has DP-estimated bounds, or values outside declared bounds are to be clipped."""
        numeric = [c for c in schema.feature_columns if c.is_numeric]
        return bool(numeric) and (
            out_of_bounds == "clip" or any(not c.is_complete for c in numeric)
        )

    @staticmethod
    def encoder(schema: Schema) -> TableEncoder:
        return TableEncoder(schema)

    @staticmethod
    def label(schema: Schema) -> tuple[str | None, tuple[str, ...]]:
        column = schema.label_column
        return (None, ()) if column is None else (column.name, tuple(column.categories or ()))

    @staticmethod
    def condition_columns(schema: Schema) -> dict[str, Any]:
        """The columns a sample may be conditioned on (:mod:`dpforge.conditions`): every
        column the model writes values of, the label included, not the identifiers."""
        return {c.name: c for c in schema.columns if not c.is_identifier}


@dataclass
class MeasuredTable(Measured):
    """The marginals and the DP-placed numeric cells; the plan and cell indices stay in memory."""

    marginals: tuple[MeasuredMarginal, ...] = ()
    cell_edges: dict[str, list[float]] = field(default_factory=dict)
    cell_mass: dict[str, list[float]] = field(default_factory=dict)  # fine mass (DP, free)
    plan: AnchorPlan | None = None  # not checkpointed: a resumed run does not measure again
    blocks: Any = None  # the records' cell indices (private, never stored)
    code_cells: dict[str, dict] = field(default_factory=dict)  # long code lists' cells (DP)
    empty_bounds: dict[str, list[int]] = field(default_factory=dict)  # bounds that are no atom
    estimated: tuple[MeasuredMarginal, ...] = ()  # the fit's consistent estimate of them (free)

    def to_dict(self) -> dict[str, Any]:
        return {
            "marginals": [m.to_dict() for m in self.marginals],
            "cell_edges": self.cell_edges,
            "cell_mass": self.cell_mass,
            "code_cells": self.code_cells,
            "empty_bounds": self.empty_bounds,
        }

    @property
    def fitted(self) -> bool:
        return bool(self.marginals)


class MarginalAnchoring(Anchoring):
    """Tables anchored on DP-measured marginals (:class:`AnchorConfig`)."""

    label = "marginal anchoring"
    alone_note = (
        "noise_multiplier and epochs set the discriminator's steps, but this run "
        "anchors on marginals alone (AnchorConfig share 1.0, the default for tables): "
        "set the anchor share to 0 (anchor=None; [anchor] share = 0 with --refine) for the "
        "discriminator alone, or between 0 and 1 to refine with it"
    )

    def __init__(self, config: AnchorConfig) -> None:
        self.config = config

    def method_config(self, config: Any, default_options: bool, schema: Any) -> Any:
        """The anchored generator's widths, unless the caller chose them."""
        if not default_options and chose(config, "generator_hidden"):
            return config
        return replace(config, generator_hidden=self.config.generator_hidden)

    def measured_from_dict(self, d: dict[str, Any]) -> MeasuredTable:
        marginals = tuple(MeasuredMarginal.from_dict(m) for m in d.get("marginals", []))
        return MeasuredTable(
            marginals, dict(d.get("cell_edges", {})), dict(d.get("cell_mass", {})),
            code_cells=dict(d.get("code_cells") or {}),
            empty_bounds=dict(d.get("empty_bounds") or {}),
        )  # fmt: skip

    def encoder(self, kind: Any, schema: Schema, measured: MeasuredTable) -> TableEncoder:
        columns = schema.generated_columns
        cells = bins_from_edges(columns, measured.cell_edges, measured.cell_mass)
        codes = codes_from_dict(columns, measured.code_cells)
        return TableEncoder(schema, n_bins=self.config.n_bins, cells=cells, codes=codes)

    def measure(
        self, run, schema, records, ledger, rng, n_public: int, prior=None
    ) -> MeasuredTable:
        """Plan every anchoring release into the ledger, then place the cells and run round 1."""
        if self.config.share == 0:
            return MeasuredTable()
        public = self.encoder(TableKind, schema, MeasuredTable())
        label = schema.label_column
        config = self._resolved(n_public)
        target = self._target(run, ledger)
        n_cells = self.cells_per_column(public, target, ledger, n_public, run.unit.rows)
        adaptive = adaptive_columns(schema.generated_columns, n_cells)
        long = long_code_columns(schema.generated_columns)
        plan = plan_anchoring(
            config, public.spans, label and label.name,
            target, ledger, adaptive=len(adaptive), codes=len(long), unit=run.unit,
            at_source=noised_at_source(records),
        )  # fmt: skip
        m = len(adaptive) + len(long)  # histograms in the release (sensitivity rows * sqrt(m))
        fine = measure_fine_histograms(  # noise std cells_noise * rows * sqrt(m) per cell
            records, adaptive, plan.cells_noise * math.sqrt(m / max(1, len(adaptive))), rng,
            plan.rows,
        )  # fmt: skip
        codes = _place_codes(long, records, plan, (public, n_public, m), rng)
        std = plan.cells_noise * plan.rows * math.sqrt(m) * noise_factor(records)  # as added
        pooling = {name: block_size(std, n_public, len(h) - 2) for name, h in fine.items()}
        edges = self._place_cells(adaptive, fine, n_public, n_cells, pooling)
        encoder = self.encoder(TableKind, schema, MeasuredTable(
            cell_edges=edges, code_cells=codes))  # fmt: skip
        label_name, cells = _blocks(encoder, records)
        measured = measure_round_one(plan, cells, encoder.spans, label_name, rng, n_public)
        cell_std = round_one_cell_std(plan, len(measured), cells)  # per cell, public
        round_one = (measured, label_name, cell_std)
        counts = self._cell_counts(adaptive, fine, std, edges, round_one)
        spread = {n: fine_mass(h, n_public, pooling[n]) for n, h in fine.items()}
        masses = _fine_masses(adaptive, fine, std, edges, (counts, spread))
        empty = _empty_bounds(encoder, (fine, std, edges, counts), round_one)
        measured = with_empty_bounds(measured, empty)
        self.plan_ = plan  # public: the noise of each release, fixed before any ran
        return MeasuredTable(
            tuple(measured), edges, masses, plan, cells, code_cells=codes, empty_bounds=empty
        )

    def _cell_counts(
        self, adaptive: list, fine: dict, std: float, edges: dict, round_one: tuple
    ) -> dict[str, np.ndarray]:
        """Each adaptive column's cell counts for drawing values inside its cells (free,
        ``cells.cell_counts``): its fine histogram (noise sd ``std``) mixed with ``round_one``
        = (round 1's marginals as released, the label, their noise sd a cell)."""
        counts = {}
        for c in adaptive:
            released = _released_cells(c.name, len(edges[c.name]) - 1, *round_one)
            counts[c.name] = cell_counts(c, fine[c.name], edges[c.name], std, released)
        return counts

    def cells_per_column(
        self, public: TableEncoder, target, ledger, n_public: float, rows: int = 1
    ) -> int:
        """Cells per numeric column from public inputs only: the released N, the label's
        classes (sized for N / K records a class) and the noise the plan will give round 1
        (:func:`dpforge.statistics.cells.cells_for_noise`), ``rows`` times larger per person
        with a privacy unit."""
        label_name = _label_name(public)
        std = rows * planned_cell_std(self.config, public.spans, label_name, target, ledger)
        classes = max(1, public.n_classes)
        return cells_for_noise(n_public, std, classes, self.config.n_bins, CELLS_SNR)

    def _place_cells(self, adaptive, fine: dict, n_public: int, n_bins: int, blocks) -> dict:
        """Each adaptive column's ``n_bins`` cell edges, from its noisy fine histogram pooled
        ``blocks[name]`` fine cells at a time (free)."""
        return {
            c.name: quantile_bins(c, fine[c.name], n_public, n_bins, blocks[c.name]).edges.tolist()
            for c in adaptive
        }

    def _resolved(self, n_public: float) -> AnchorConfig:
        """The config with the released N's rule applied (public): pairs per column."""
        return replace(self.config, pairs_per_column=anchor_pairs_per_column(self.config, n_public))

    def _target(self, run: Any, ledger: PrivacyLedger) -> tuple[float, float] | None:
        """(epsilon, delta) the ledger may reach after the anchoring (all of it without a
        discriminator); None for the non-private baseline."""
        if not math.isfinite(run.epsilon):
            return None
        share = self.config.share
        spent_share = min(1.0, run.metadata_share + (1 - run.metadata_share) * share)
        return run.epsilon * spent_share, run.delta * spent_share - ledger.extra_delta()

    def measure_adaptive(self, run: Any, setup: Any, records: Any) -> None:
        """The pair selection and round 2, scored against the consistent estimate of round 1
        (``records()`` reads the records, if their cells are not at hand)."""
        measured = setup.measured
        if not measured.marginals or not measured.plan.pairs:
            return
        blocks = measured.blocks or _blocks(setup.encoder, records())[1]
        encoder = setup.encoder
        rng = noise_generator(run.seed_sequence(4))  # the selection's stream (release noise)
        both_rounds = measure_selected_pairs(
            list(measured.marginals), measured.plan, blocks, encoder.spans, _domain(encoder), rng
        )
        both_rounds = with_empty_bounds(both_rounds, measured.empty_bounds)
        setup.measured.marginals = tuple(both_rounds)

    def fit(self, run: Any, setup: Any, model: Any, resumed: bool) -> None:
        """Train the generator on every measured marginal (free); a resumed discriminator run
        takes the anchored generator from its checkpoint and keeps only the loss."""
        measured, encoder = setup.measured, setup.encoder
        if not measured.marginals:
            return
        prior = _prior(setup)
        targets = consistent_marginals(measured.marginals, _domain(encoder))
        measured.estimated = tuple(targets[: len(measured.marginals)])
        loss = anchor_loss(targets, encoder.spans, _label_name(encoder), prior)
        loss = with_rules(loss, encoder, RULES_WEIGHT)  # the schema's rules
        model.anchor = (loss, self.config.weight)
        if resumed:
            return
        run.init_generator(model)  # the networks from the run's stream 2
        n_classes = 0 if prior is None else prior.shape[0]
        phase = anchor_phase(self.config, measured.marginals[0].total)  # the released N
        train_anchor(model.generator, loss, n_classes, phase, make_generator(run.seed_sequence(3)))

    def sample_release(self, setup: Any) -> MarginalRelease | None:
        """The consistent estimate of the measured marginals, stored so that sampling
        matches rows to them."""
        marginals = setup.measured.estimated
        return MarginalRelease(tuple(marginals)) if marginals else None


def _place_codes(long: list, records: Any, plan: AnchorPlan, public: tuple, rng) -> dict:
    """Each long code list's cells (JSON form), from its noisy code histogram: released with
    the fine histograms (``m`` of them), then placed for free (:mod:`dpforge.statistics.codes`).
    ``public``: the public encoder, N and m, which with the plan size the cells."""
    if not long:
        return {}
    encoder, n_public, m = public
    std = plan.cells_noise * plan.rows * math.sqrt(m)  # a person moves m histograms by rows
    counts = measure_code_histograms(records, long, std, rng)
    std *= noise_factor(records)  # the noise the counts carry (a sum of site noises)
    label = encoder.schema.label_column
    first = default_marginals(encoder.spans, label and label.name)
    round_one_std = plan.round_one_noise * plan.rows * math.sqrt(len(first))
    cells = code_cell_count(n_public, round_one_std, encoder.n_classes)
    return {c.name: place_codes(c, counts[c.name], std, cells).to_dict() for c in long}


def _fine_masses(
    adaptive: list, fine: dict, std: float, edges: dict, counts: tuple[dict, dict]
) -> dict[str, list[float]]:
    """Each adaptive column's fine mass for drawing values inside their cells (free,
    ``cells.within_cell_mass``): the noisy counts that stand out from the noise (at least
    FINE_MASS_THRESHOLD standard deviations, about the largest that 1,024 cells of pure noise
    reach), and the rest of each cell's count spread over it. An empty cell of a
    nullable column is on no fine cell, so nothing of it spreads over the grid. ``counts``:
    each column's cell counts (``cells.cell_counts``) and the projected, pooled fine mass
    (``cells.fine_mass``) that spreads each cell's rest."""
    threshold = FINE_MASS_THRESHOLD * std
    cell_count, spread = counts

    def mass(c: Any) -> np.ndarray:
        cut = np.asarray(edges[c.name])
        return within_cell_mass(c, fine[c.name], cut, threshold, cell_count[c.name], spread[c.name])

    return {c.name: _rounded(mass(c)) for c in adaptive}


def _released_cells(
    name: str, interior: int, measured: list, label_name: str | None, std: float
) -> tuple[np.ndarray, float] | None:
    """Round 1's noisy count of each of the ``interior`` interior cells of column ``name``
    (after the lower bound's point cell) and its noise sd (DP releases); None where the
    column's own cells are not measured (:func:`_released_column`)."""
    released = _released_column(name, measured, label_name, std)
    return None if released is None else (released[0][1 : interior + 1], released[1])


def _released_column(
    name: str, measured: list, label_name: str | None, std: float
) -> tuple[np.ndarray, float] | None:
    """Round 1's noisy count of each cell of column ``name`` (a nullable column's "missing"
    cell is the last) and its noise sd (DP releases): its 1-way marginal, or its label x
    column marginal summed over the classes (noise sd times sqrt(classes)); None where
    neither is measured."""
    for m in measured:
        if m.columns == (name,):
            return np.asarray(m.noisy_counts, dtype=np.float64), std
    for m in measured:
        if label_name is not None and m.columns == (label_name, name):
            rows = np.asarray(m.noisy_counts, dtype=np.float64).reshape(m.shape)
            return rows.sum(axis=0), std * math.sqrt(m.shape[0])
    return None


def _empty_bounds(encoder: TableEncoder, fine: tuple, round_one: tuple) -> dict[str, list[int]]:
    """Per binned numeric column, its empty cells (free, ``bound_atoms.column_empty_cells``):
    from its fine histogram (``fine`` = the histograms, their noise sd, the adaptive columns'
    cell edges and counts) and round 1 (``round_one`` = the marginals as released, the label,
    their noise sd a cell)."""
    histograms, fine_std, edges, counts = fine
    columns, out = {c.name: c for c in encoder.columns}, {}
    for name, bins in encoder.bins.items():
        histogram = (histograms[name], fine_std) if name in histograms else None
        cells = (np.asarray(edges[name]), counts[name]) if name in counts else None
        released = _released_column(name, *round_one)
        empty = column_empty_cells(columns[name], bins.size, histogram, released, cells)
        if empty:
            out[name] = list(empty)
    return out


def _rounded(mass: np.ndarray) -> list[float]:
    """Six significant digits: what the model folder keeps (and decoding uses)."""
    return [float(f"{m:.6g}") for m in mass]


def _domain(encoder: TableEncoder) -> dict[str, int]:
    """The public domain of the marginals: the label's classes first, then each softmax
    column's cells, in the encoder's order."""
    label_name = _label_name(encoder)
    domain = {} if label_name is None else {label_name: int(encoder.n_classes)}
    domain.update({s.column: s.dim for s in encoder.spans if s.activation == SOFTMAX})
    return domain


def _label_name(encoder: TableEncoder) -> str | None:
    label = encoder.schema.label_column
    return None if label is None else label.name


def _prior(setup: Any) -> torch.Tensor | None:
    if setup.label_prior is None:
        return None
    return torch.as_tensor(setup.label_prior, dtype=torch.float32)


def _blocks(encoder: TableEncoder, records: pd.DataFrame):
    """The label's name and every column's cell indices (encoded a chunk at a time)."""
    label_name = _label_name(encoder)
    return label_name, encoded_cells(encoder, records, label_name)
