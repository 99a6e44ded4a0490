"""Related tables, fitted and sampled on the single-table machinery (a first version).

``RelationalSynthesizer(schema, epsilon=...).fit({"patients": ..., "visits": ...})`` checks the
tables, keeps at most k rows per parent in each child (:mod:`dpforge.data.relational`), then
fits, with the public :class:`~dpforge.synthesizer.Synthesizer`:

- the parent table with one count column per child (its rows per parent, 0..k), per record:
  one parent is one row (releases (a) and (b) of :mod:`dpforge.privacy.relational`);
- each child table joined with its parent's columns, with the foreign key as the privacy unit
  and k rows per unit (release (c)). The parent columns keep their declared metadata: what is
  undeclared is estimated again in this fit, under its unit. (Reusing the parent fit's DP
  estimates would need the same per-row rule applied to the joined rows, clipping to estimated
  bounds and dropping or pooling unreleased categories, so that no refusal names a value.)

The budget is shared evenly between these fits (a public rule), each fitted at ``epsilon /
parts`` and ``delta / parts`` (:func:`~dpforge.privacy.relational_charge.part_epsilon`), and
their ledgers are composed into one whose every entry names the unit. ``sample(n)`` draws n
parents (new surrogate keys), then, per child table, each parent's generated count of rows
from the child model conditioned on that parent's columns (their public cells, the label
first; :mod:`dpforge.data.child_draw`).
No real key is read by a model, saved or sampled.

The whole plan is charged to the data set's budget file once, before the first release
(:mod:`dpforge.privacy.relational_charge`). With ``checkpoint_dir`` an interrupted fit called
again resumes: finished parts are not measured again and nothing more is charged
(:mod:`dpforge.relational_checkpoint`). :meth:`RelationalSynthesizer.save` and
:meth:`RelationalSynthesizer.load` write and read the model folder
(:mod:`dpforge.relational_io`). This is a facade of its own level (a user's entry point, like
the table facade it composes): only the command line imports it.

A child's aggregates per parent (the schema's ``aggregates``,
:mod:`dpforge.schema.aggregates`) are columns of the parent's table and of the joined child:
measured with the parent, drawn with each parent, and the children drawn conditioned on them;
the samples leave them out unless asked.

Not yet: a selection of the joined marginals beyond the default, and budget shares weighed by
the tables.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpforge import options as run_options
from dpforge.data.child_draw import (
    Conditioning,
    conditioned_children,
    most_draws,
    stream_draw,
)
from dpforge.data.encoder import fresh_keys
from dpforge.data.relational import bound_children, joined_child, parent_with_counts
from dpforge.data.relational_spark import refuse_mixed, spark_part_tables
from dpforge.engines.spark import is_spark_dataframe
from dpforge.errors import DataError, ModelFileError, SchemaError
from dpforge.generate import SAMPLE_CHUNK_ROWS
from dpforge.pipeline.checkpoints import folder_seed
from dpforge.pipeline.plan import release_bound
from dpforge.privacy.accounting import PrivacyReport
from dpforge.privacy.budget import RunCharge
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.relational import unit_words
from dpforge.privacy.relational_charge import PartsCharge, part_epsilon, planned_bound
from dpforge.relational_checkpoint import part_folder, resumed_run, save_run
from dpforge.relational_io import check_table_names, read_relational, save_relational
from dpforge.schema.aggregates import Aggregate
from dpforge.schema.relational import RelationalSchema, RelationalTable, joined_name
from dpforge.schema.table import Schema
from dpforge.synthesizer import Synthesizer
from dpforge.training import checkpoint_lock

__all__ = ["RelationalSynthesizer"]
METADATA_SHARE = 0.1  # of each part's budget, for DP estimates of undeclared metadata


class RelationalSynthesizer:
    """A parent table and its child tables under one guarantee per parent (see the module
    docstring). ``seed`` None draws the bounding and the noise from the OS (releases).
    ``out_of_bounds`` "clip" clips values outside declared bounds (as the table facade does)
    instead of refusing them. ``checkpoint_dir``: a private folder that makes the fit
    resumable (see the module docstring); keep it with the data, never publish it."""

    def __init__(
        self,
        schema: RelationalSchema,
        epsilon: float = 3.0,
        delta: float = 1e-5,
        *,
        seed: int | None = None,
        anchor: Any = "auto",
        out_of_bounds: str = "error",
        progress: bool = True,
        checkpoint_dir: str | Path | None = None,
    ) -> None:
        if not isinstance(schema, RelationalSchema):
            raise SchemaError(f"schema must be a RelationalSchema, got {type(schema).__name__}")
        self.schema, self.epsilon, self.delta = schema, epsilon, delta
        self.seed, self.anchor, self.progress = seed, anchor, progress
        self.out_of_bounds = out_of_bounds
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)

    # -- fit -------------------------------------------------------------------------------
    def fit(
        self, tables: Mapping[str, pd.DataFrame], *, budget: RunCharge | None = None
    ) -> RelationalSynthesizer:
        """Fit the parent model and one model per child on the private ``tables``.

        With ``budget`` (the data set's :class:`~dpforge.privacy.budget.DataBudget`), the
        whole plan (every part's bound, named with its table and the unit) is charged as one
        run before the first release, refused beyond the declared total, and settled with
        the composed ledger at the end (:mod:`dpforge.privacy.relational_charge`).
        """
        self.check_options()
        with checkpoint_lock(self.checkpoint_dir):
            return self._fit(tables, budget)

    def _fit(
        self, tables: Mapping[str, pd.DataFrame], budget: RunCharge | None
    ) -> RelationalSynthesizer:
        parts = 1 + len(self.schema.children)
        resume_of = resumed_run(self.checkpoint_dir, self._settings())
        seeds, rng = self._streams(parts)
        part_tables = self._part_tables(tables, rng)  # bad input: refused, nothing charged
        models = self._models(parts, seeds)
        bounds = {n: self._bound(m) for n, m in models.items()}
        charge = PartsCharge(budget, unit_words(self.schema), bounds)
        self.plan_ = charge.plan
        charge.charge(self.epsilon, self.delta, self._description(), self.checkpoint_dir, resume_of)
        save_run(self.checkpoint_dir, charge.run_id, self._settings())
        try:
            for name, model in models.items():
                charge.start(name)
                model.fit(part_tables[name], budget=charge)
        finally:
            charge.settle_run()
        self.parent_model_ = models.pop(self.schema.parent.name)
        self.child_models_: dict[str, Synthesizer] = models
        self.ledger_ = planned_bound(
            {n: m.ledger_ for n, m in self.table_models().items()}, charge.unit
        )
        return self

    def _models(self, parts: int, seeds: Iterator[int | None]) -> dict[str, Synthesizer]:
        """The unfitted table models by table name, the parent first."""
        parent = self.schema.parent.name
        models = {
            parent: self._synthesizer(
                self.schema.parent_with_counts(), parts, next(seeds),
                checkpoint_dir=part_folder(self.checkpoint_dir, parent),
            )
        }  # fmt: skip
        for child in self.schema.children:
            models[child.name] = self._child_model(
                self.schema, child, parts, next(seeds), part_folder(self.checkpoint_dir, child.name)
            )
        return models

    def _part_tables(self, tables: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        """What each table's model reads, by table name: the parent with its child counts, each
        child joined with its parent; in memory each child first cut to k rows per parent with
        ``rng``, on Spark (every table a Spark DataFrame) by the child's fit, where the records
        are (:mod:`dpforge.data.relational_spark`)."""
        refuse_mixed(tables)
        if any(is_spark_dataframe(frame) for frame in tables.values()):
            return spark_part_tables(tables, self.schema, self.out_of_bounds)
        bounded = bound_children(tables, self.schema, rng, self.out_of_bounds)
        parts = {self.schema.parent.name: parent_with_counts(bounded, self.schema)}
        for child in self.schema.children:
            parts[child.name] = joined_child(bounded, self.schema, child)
        return parts

    def _bound(self, model: Synthesizer) -> PrivacyLedger:
        """What one part may release before its plan is known (its share of the budget)."""
        return release_bound(model.epsilon, model.delta, model.metadata_share)

    def _settings(self) -> dict[str, Any]:
        """What fixes the run's accounting, as a checkpoint records it (the parts' checkpoints
        record their own settings and records)."""
        return {
            "epsilon": self.epsilon, "delta": self.delta, "seed": self.seed,
            "schema": self.schema.to_dict(), "out_of_bounds": self.out_of_bounds,
        }  # fmt: skip

    def _description(self) -> str:
        """The run as ``budget show`` lists it."""
        return (
            f"related tables {', '.join(self.schema.names)}, target epsilon {self.epsilon:g}, "
            f"delta {self.delta:g}, {unit_words(self.schema)}"
        )

    def table_models(self) -> dict[str, Synthesizer]:
        """The fitted table models by table name, the parent first."""
        return {self.schema.parent.name: self.parent_model_, **self.child_models_}

    def check_options(self) -> None:
        """The schema (no draft) and every table model's options, checked before any record is
        read (the command line calls it before reading the files)."""
        if self.schema.notes:
            raise SchemaError(
                "this relational schema is a draft read from the private files: review it, "
                "set every max_rows_per_parent to a public bound, then remove its notes"
            )
        check_table_names(self.schema)
        run_options.check_budget(self.epsilon, self.delta, METADATA_SHARE)
        parts = 1 + len(self.schema.children)
        self.part_epsilon_ = part_epsilon(self.epsilon, parts)
        self._check_models(parts)

    def _check_models(self, parts: int) -> None:
        """Every model's options and schema checked before any record is read, so that a
        bad one cannot stop the run after the parent's releases."""
        self._synthesizer(self.schema.parent_with_counts(), parts, None).check_options()
        for child in self.schema.children:
            self._child_model(self.schema, child, parts, None).check_options()

    def _streams(self, parts: int) -> tuple[Iterator[int | None], np.random.Generator]:
        """The fits' seeds and the bounding's generator (from the OS when seed is None; then
        kept in the checkpoint folder, where there is one, so that a resumed run keeps the same
        rows)."""
        if self.seed is None:
            kept = None if self.checkpoint_dir is None else folder_seed(self.checkpoint_dir)
            return iter([None] * parts), np.random.default_rng(kept)
        streams = np.random.SeedSequence(self.seed).spawn(parts + 1)
        seeds = iter([int(s.generate_state(1)[0]) for s in streams[:parts]])
        return seeds, np.random.default_rng(streams[parts])

    def _synthesizer(
        self,
        schema: Schema,
        parts: int,
        seed: int | None,
        unit: RelationalTable | None = None,
        checkpoint_dir: Path | None = None,
    ) -> Synthesizer:
        """A table model at its share of the budget (:func:`part_epsilon`, ``delta / parts``);
        per person over ``unit``'s foreign key with its k rows, where given (a child joined
        with its parent); resumable in ``checkpoint_dir``, where given."""
        return Synthesizer(
            schema, epsilon=self.part_epsilon_, delta=self.delta / parts, seed=seed,
            anchor=self.anchor, progress=self.progress, out_of_bounds=self.out_of_bounds,
            metadata_share=METADATA_SHARE,
            privacy_unit=None if unit is None else unit.link.foreign_key,
            max_rows_per_unit=None if unit is None else unit.max_rows,
            checkpoint_dir=checkpoint_dir,
        )  # fmt: skip

    def _child_model(
        self,
        schema: RelationalSchema,
        child: RelationalTable,
        parts: int,
        seed: int | None,
        checkpoint_dir: Path | None = None,
    ) -> Synthesizer:
        return self._synthesizer(schema.joined(child), parts, seed, child, checkpoint_dir)

    def privacy_spent(self) -> PrivacyReport:
        """epsilon of the composed ledger at the total delta."""
        return self.ledger_.report(self.delta)

    # -- save and load ---------------------------------------------------------------------
    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the model folder (:mod:`dpforge.relational_io`): the relational schema, the
        composed ledger and one model folder per table; no real key, no exact count."""
        if not hasattr(self, "ledger_"):
            raise DataError("this model is not fitted: call fit(tables) or load(path)")
        return save_relational(self, Path(path), overwrite=overwrite)

    @classmethod
    def load(cls, path: str | Path) -> RelationalSynthesizer:
        """A model folder written by :meth:`save`; the result samples, not trains."""
        info, models = read_relational(path, Synthesizer)
        schema = RelationalSchema.from_dict(info["schema"])
        privacy = info["privacy"]
        epsilon, delta = float(privacy["target_epsilon"]), float(privacy["delta"])
        model = cls(schema, epsilon, delta, progress=False)
        expected = {schema.parent.name: schema.parent_with_counts()}
        expected |= {c.name: schema.joined(c) for c in schema.children}
        for name, table_model in models.items():
            if table_model.schema_.names != expected[name].names:
                raise ModelFileError(
                    f"{Path(path) / name} does not model table '{name}' of the schema in "
                    f"{Path(path) / 'relational.json'} (other columns): restore the folder "
                    "that fit wrote"
                )
        model.parent_model_ = models.pop(schema.parent.name)
        model.child_models_ = models
        model.ledger_ = PrivacyLedger.from_dict(privacy["ledger"])
        return model

    # -- sample ----------------------------------------------------------------------------
    def sample(
        self, n: int, seed: int | None = None, move: bool | None = None, aggregates: bool = False
    ) -> dict[str, pd.DataFrame]:
        """``n`` parents and their children, one table per name, linked by new keys.
        ``move`` is each model's :meth:`Synthesizer.sample` option (None: its default, rows
        reweighted to the measured marginals where the model holds them; False: plain draws,
        faster). ``aggregates`` keeps in the parent's table the aggregates of its children
        that the parent model drew and its children were drawn for (the schema's
        ``aggregates``; the children's own mean may differ within its cell); left out by
        default."""
        rng = np.random.default_rng(seed)
        schema = self.schema
        parents = self.parent_model_.sample(n, seed=_draw(rng), move=move)
        parents = parents.reset_index(drop=True)
        keys = fresh_keys(n, rng)
        out = {schema.parent.name: self._parent_rows(parents, keys, aggregates)}
        for child in schema.children:
            out[child.name] = self._children(child, parents, keys, rng, move)
        return out

    def _parent_rows(
        self, parents: pd.DataFrame, keys: np.ndarray, aggregates: bool
    ) -> pd.DataFrame:
        """The parent's sampled columns (not its count columns; its aggregate columns where
        asked) after its new keys."""
        parent = self.schema.parent
        names = [c for c in parent.schema.output_names if c != parent.key]
        if aggregates:
            names += [
                a.name for c in self.schema.children for a in self.schema.aggregate_columns(c)
            ]
        rows = parents[names].copy()
        rows.insert(0, parent.key, keys)
        return rows

    def _children(
        self, child: RelationalTable, parents: pd.DataFrame, keys: np.ndarray, rng, move
    ) -> pd.DataFrame:
        """The child rows given to the generated parents, with their parent's key."""
        schema = self.schema
        counts = parents[schema.count_column(child).name].to_numpy(dtype=np.int64)
        if counts.sum() == 0:
            return pd.DataFrame(columns=[child.link.foreign_key, *_own(child)])
        conditioning = self._conditioning(child)
        most = most_draws(int(counts.sum()), len(conditioning))
        chunks = self.child_models_[child.name].sample_chunks(
            most,
            seed=_draw(rng),
            chunk_rows=min(SAMPLE_CHUNK_ROWS, 2 * int(counts.sum())),
            move=move,
        )  # chunks of about a level's first batch: the stream's first chunk (its matching
        # fitted on a pool of twice its rows) costs little for a small table
        drawn, owner = conditioned_children(parents, counts, conditioning, stream_draw(chunks), rng)
        rows = drawn[_own(child)]
        rows.insert(0, child.link.foreign_key, keys[owner])
        return rows.sort_values(child.link.foreign_key, kind="stable").reset_index(drop=True)

    def _conditioning(self, child: RelationalTable) -> list[Conditioning]:
        """The parent columns a child is conditioned on, in the public order: the parent's
        label first, then its aggregates of this child (they describe the rows drawn), then
        the others as the schema lists them; on the child model's (public: declared or
        DP-estimated) columns."""
        parent = self.schema.parent.schema
        names = [c.name for c in parent.generated_columns]  # the features, not the label
        conditioning = []
        for name in [parent.label] if parent.label is not None else []:
            conditioning.append(self._on_joined(child, name))
        conditioning += [self._on_aggregate(child, a) for a in child.aggregates]
        return conditioning + [self._on_joined(child, name) for name in names]

    def _on_joined(self, child: RelationalTable, name: str) -> Conditioning:
        """Conditioning on parent column ``name`` as the child model's joined column."""
        joined_as = joined_name(child, child.schema.names, name)
        model = self.child_models_[child.name].schema_
        return Conditioning(name, joined_as, model.column(joined_as))

    def _on_aggregate(self, child: RelationalTable, aggregate: Aggregate) -> Conditioning:
        """Conditioning on a drawn aggregate: a mean on the child's own column (each row's
        value in the cell of its parent's mean, so the children's mean follows it; the joined
        model measures numeric pairs only through its marginals of one column and the
        label), a count on the joined column."""
        name = aggregate.name(child.name)
        if aggregate.how != "mean":
            return self._on_joined(child, name)
        model = self.child_models_[child.name].schema_
        return Conditioning(name, aggregate.column, model.column(aggregate.column))


def _own(child: RelationalTable) -> list[str]:
    """The child's own sampled columns (its identifiers of type "drop" are not sampled)."""
    return [c for c in child.schema.output_names if c != child.link.foreign_key]


def _draw(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**62))
