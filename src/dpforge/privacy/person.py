"""The privacy unit: one person (all rows sharing a key), with at most ``k`` rows kept each.

Without a unit, neighbouring tables differ by one record (add/remove one row). With
``PrivacyUnit(column, k)`` they differ by one person: every row whose ``column`` holds that
person's key. The measure stage first keeps at most ``k`` rows per key, those of smallest
priority, a hash of each row's values keyed by the run's seed (:func:`row_priority`: uniform
over distinct rows, and the same rows on Spark as in memory; contribution bounding, as Google's
PipelineDP does before each aggregation); after that a person adds or removes at most ``k``
rows. Every release of the table path is a histogram in which one row adds one to one cell, so
one person changes it by a vector of non-negative whole numbers summing to at most ``k``, whose
L2 norm is at most ``k`` (all ``k`` rows in one cell). Each release therefore adds ``k`` times
the noise it adds per record, and its event is the zCDP of the same noise multiplier sigma
(``ZCDpEvent(1 / 2 sigma^2)``, :func:`dpforge.privacy.release_noise.table_event`: the rows may
fall in several cells), for noise ``sigma * k * (the per-record sensitivity)``.

The discriminator's DP-SGD is per person too (user-level DP-SGD): whole persons are
Poisson-sampled at rate q = B / P, P the number of persons released under DP (its own Gaussian
release, sensitivity 1), and each person's gradient, summed over their rows, is clipped to C
(:class:`~dpforge.privacy.sampling.PersonPoissonSampler`, ``group_mean=False`` in
:mod:`dpforge.privacy.clipping`). One person then moves the clipped sum by at most C, and a
step is the per-record event with q over persons: neither sigma nor C is scaled by k.

The unit column is an identifier of the schema (type ``drop`` or ``surrogate``): read only
here, to choose the rows. The kept rows carry it as integer codes ``0..P-1`` (no key), which
only the refine stage reads, to group a person's rows; it is never encoded, modelled, saved or
sampled.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpforge.errors import DataError, PrivacyError, private

__all__ = [
    "PER_RECORD",
    "PrivacyUnit",
    "check_unit_column",
    "frame_keys",
    "kept_rows",
    "person_codes",
    "person_unit",
    "row_priority",
    "refuse_per_row_sgd",
    "unit_keys",
]

UNIT_MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})


@dataclass(frozen=True)
class PrivacyUnit:
    """Whose data one neighbouring step adds or removes: one row (``column`` None, ``rows``
    1), or one person (the rows sharing a key of ``column``, at most ``rows`` of them kept).
    ``rows`` scales the L2 sensitivity of every histogram of the table path."""

    column: str | None = None
    rows: int = 1

    @property
    def per_person(self) -> bool:
        return self.column is not None

    def check(self) -> None:
        """Refuse a bad ``max_rows_per_unit`` or unit column name."""
        k = self.rows
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise PrivacyError(
                f"max_rows_per_unit must be a whole number >= 1, got {k!r} "
                "(--max-rows-per-unit 1 keeps one row per person)"
            )
        if self.column is not None and (not isinstance(self.column, str) or not self.column):
            raise PrivacyError(f"privacy_unit must be a column name, got {self.column!r}")

    def check_schema(self, schema: object) -> None:
        """The unit column is an identifier column (``drop`` or ``surrogate``) of a table
        schema: never modelled, so never released."""
        if self.column is None:
            return
        columns = getattr(schema, "columns", None)
        if columns is None or not hasattr(schema, "column"):
            raise PrivacyError(
                "a privacy unit applies to tables only (images and series are one record per "
                "person): leave out privacy_unit (--privacy-unit)"
            )
        column = schema.column(self.column)  # an unknown name: SchemaError with a hint
        if not column.is_identifier:
            raise PrivacyError(
                f"the privacy unit '{column.shown}' is declared {column.type} in the schema: give "
                'it "type": "drop" (or "surrogate"), so that it is never modelled or released'
            )

    def refuse_refinement(self, alone: bool, method: str, config: object, processes: int) -> None:
        """Before any record is read: dpcgan and dpwgan run per-person DP-SGD on one process;
        what would still sample, clip or account per row is refused, saying what to pass."""
        if self.column is not None and not alone:
            refuse_per_row_sgd(method, config, processes)

    def entry(self, name: str) -> str:
        """A ledger entry's name, stating the relation its sensitivity is derived for."""
        if self.column is None:
            return name
        return f"{name}; per person ({self.rows} rows): L2 sensitivity x{self.rows}"

    def sgd_entry(self, name: str) -> str:
        """The name of a DP-SGD ledger entry: per person, persons are sampled and each one's
        gradient is clipped to C (the sensitivity is C, not k C)."""
        if self.column is None:
            return name
        return f"{name}; per person ({self.rows} rows): persons sampled, each clipped to C"

    def count_entry(self, name: str) -> str:
        """The name of the person count's ledger entry (sensitivity 1: one person, one)."""
        return f"{name}; per person ({self.rows} rows): L2 sensitivity 1"

    def describe(self) -> str:
        """The guarantee's unit in words (printed by fit and saved in model.json)."""
        if self.column is None:
            return "per record (add/remove one row)"
        return (
            f"per person ({self.rows} rows): add/remove every row of one '{self.column}', "
            f"at most {self.rows} kept per person"
        )

    def to_dict(self) -> dict[str, object] | None:
        return None if self.column is None else {"column": self.column, "max_rows": self.rows}


def refuse_per_row_sgd(method: str, config: object, processes: int) -> None:
    """Refuse, with a privacy unit, a DP-SGD setting that would still sample, clip or account
    per row; each error says what to pass instead."""
    if method == "gswgan":
        raise PrivacyError(
            "gswgan assigns records, not persons, to its critics, so its guarantee is per "
            "record: with a privacy unit use --refine dpwgan or dpcgan (per-person DP-SGD), "
            "or no --refine"
        )
    if getattr(config, "microbatches", None) is not None:
        raise PrivacyError(
            "microbatches clip rows drawn at random, not a person's rows: with a privacy "
            "unit leave out microbatches (each person's gradient is clipped)"
        )
    if getattr(config, "bayesian_accounting", False):
        raise PrivacyError(
            "the Bayesian bound compares per-record gradients, not per-person ones: with a "
            "privacy unit leave out bayesian_accounting"
        )
    if processes > 1:
        raise PrivacyError(
            "per-person DP-SGD (a privacy unit) runs on one process: the processes' shards "
            "would split a person's rows; run without torchrun, or without --refine"
        )


PER_RECORD = PrivacyUnit()


def person_unit(column: str | None, max_rows: int | None) -> PrivacyUnit:
    """The facade's two options as a checked :class:`PrivacyUnit` (both, or neither)."""
    if column is None:
        if max_rows is not None:
            raise PrivacyError(
                f"max_rows_per_unit={max_rows!r} needs a privacy unit: name the column that "
                "identifies a person (--privacy-unit COLUMN, privacy_unit=...), or leave it out"
            )
        return PER_RECORD
    if max_rows is None:
        raise PrivacyError(
            f"privacy_unit '{column}' needs max_rows_per_unit: the most rows kept per person "
            "(--max-rows-per-unit k); every sensitivity is scaled by it"
        )
    unit = PrivacyUnit(column, max_rows)
    unit.check()
    return unit


def check_unit_column(columns: object, name: str) -> None:
    """Refuse data without the unit column, listing the columns it has."""
    names = [str(c) for c in columns]
    if name not in names:
        raise DataError(
            f"the privacy unit '{name}' is not a column of the data (its columns: {names}): "
            "name the column that identifies a person"
        )


def frame_keys(frame: pd.DataFrame, name: str) -> np.ndarray:
    """The unit column's keys (:func:`unit_keys`); a table without that column is refused."""
    check_unit_column(frame.columns, name)
    return unit_keys(frame[name], name)


def unit_keys(values: pd.Series, name: str) -> np.ndarray:
    """Each row's person key as text; a missing key is refused (it names no person, so the
    row could not be bounded), naming the column, the row and the value."""
    values = values.reset_index(drop=True)
    texts = values.astype(object).where(values.notna(), "").astype(str).str.strip()
    missing = np.flatnonzero(texts.str.lower().isin(UNIT_MISSING_TOKENS).to_numpy())
    if missing.size:
        row = int(missing[0])
        raw = values[row] if pd.notna(values[row]) else None
        raise DataError(
            f"column '{name}' (the privacy unit), row {private(row + 1)}: missing value "
            f"{private(raw, 'r')}; every row must name its person: fill in the key, or "
            "remove the row"
        )
    return texts.to_numpy(dtype=object)


def kept_rows(keys: np.ndarray, rows: int, priority: np.ndarray) -> np.ndarray:
    """The positions of the rows kept: at most ``rows`` per key, those of smallest
    ``priority`` (:func:`row_priority`), in their original order."""
    codes, _ = pd.factorize(pd.Series(keys, dtype=object), sort=False)
    order = np.lexsort((np.asarray(priority), codes))  # by key, then by priority
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    return np.sort(order[rank < rows])


def row_priority(records: pd.DataFrame, seed: int) -> np.ndarray:
    """Each checked record's priority for the bounding (int64): a hash, keyed by ``seed``, of
    its values alone (numbers as float64, the rest as text; an empty cell as NaN), with the
    columns in name order. It depends neither on the rows' order nor on how an engine splits
    them, so Spark's workers keep the same rows as memory (issue 46.10); records with equal
    values tie, and keeping either keeps the same values. A uniform draw per row from the
    seed instead follows the order the rows come in, which Spark does not keep."""
    canonical = {}
    for name in sorted(records.columns):
        values = records[name]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            canonical[name] = values.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            canonical[name] = values.astype(object).where(values.notna(), None).map(_text)
    frame = pd.DataFrame(canonical, index=range(len(records)))
    key = f"{int(seed) % 10**16:016d}"  # hash_pandas_object's 16-character key
    hashed = pd.util.hash_pandas_object(frame, index=False, hash_key=key).to_numpy(np.uint64)
    return hashed.view(np.int64)


def _text(value: object) -> str:
    """A value as text for :func:`row_priority` (an empty cell: a text no value has)."""
    return "\x00" if value is None else str(value)


def person_codes(records: object, unit: PrivacyUnit) -> np.ndarray | None:
    """Each kept row's person code (``0..P-1``), which the bounding left in the unit column;
    None without a unit (DP-SGD is then per record)."""
    if not unit.per_person:
        return None
    if not isinstance(records, pd.DataFrame) or unit.column not in records.columns:
        raise PrivacyError(
            "per-person DP-SGD needs the rows of each person in this process (a pandas "
            "table): leave out --refine, or use a table in memory"
        )
    return records[unit.column].to_numpy(dtype=np.int64, copy=True)


def coded_persons(keys: np.ndarray) -> np.ndarray:
    """The persons of ``keys`` as integer codes ``0..P-1`` in order of appearance (no key)."""
    codes, _ = pd.factorize(pd.Series(keys, dtype=object), sort=False)
    return codes.astype(np.int64)
