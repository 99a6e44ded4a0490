"""Reading a private table and checking it against the schema, with errors a person can act on.

Every message names the column, the row (1-based, header not counted), the value and what to
do. Nothing here computes statistics that leave this module: checks only accept or refuse.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from dpforge.data.dates import check_time_range, detect_format, drafted_type, time_values
from dpforge.errors import DataError, private
from dpforge.schema.formats import LARGEST
from dpforge.schema.table import LARGEST_INTEGER, REVIEW_KEY, Column, Schema

MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})
MAX_CATEGORICAL_LEVELS_FOR_NUMBERS = 10
# The draft marks a column an identifier when it holds at least MIN_IDENTIFIER_ROWS values, all
# different (a key), or is text with spaces of which at least FREE_TEXT_SHARE differ (notes).
MIN_IDENTIFIER_ROWS = 20
FREE_TEXT_SHARE = 0.9
# A label (the target of a conditional model) is a categorical column with a few classes; more
# than MAX_LABEL_CLASSES distinct values, or more than MAX_CATEGORICAL_LEVELS_FOR_NUMBERS with
# under MIN_RECORDS_PER_CLASS records each, is a continuous or identifier column, not a label.
# Public constants: no count from the data enters a message.
MAX_LABEL_CLASSES = 50
MIN_RECORDS_PER_CLASS = 5
# A text column with more distinct values than this is drafted "drop" (names, free text):
# a category list that long is a list of people's names or notes, not a code book.
MAX_DRAFTED_CATEGORIES = 100
# A number column of at most MAX_FRACTION_CODES values with fractions (0 / 0.5 / 1), each
# of at least MIN_RECORDS_PER_CODE rows on average, is a code, drafted categorical.
MAX_FRACTION_CODES = 5
MIN_RECORDS_PER_CODE = 5
# A name that ends in "id" or "key" (patient_id, PatientID, visit key) marks an identifier
# even when its values repeat: then it is the natural privacy unit, and the draft says so.
KEY_NAME = re.compile(r"(^|[^A-Za-z])([Ii][Dd]|[Kk]ey|KEY)$|[a-z](Id|ID)$")
DELIMITERS = (",", ";", "\t", "|")
_CHUNK = 1 << 20


def read_csv(path: str | Path) -> pd.DataFrame:
    """Read a CSV file as text, so that every value can be checked and reported as written.

    The delimiter is read off the header line (:func:`header_delimiter`): a comma, or a
    semicolon, tab or bar where the header holds no comma (spreadsheets in many locales save
    with semicolons). Refused before parsing: a file with NUL bytes (binary, or UTF-16 text:
    pandas would drop them silently) and a header that names a column twice (pandas would
    rename one 'a.1').
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file {path} does not exist")
    _refuse_nul_bytes(path)
    delimiter = header_delimiter(path)
    _refuse_duplicate_names(path, delimiter)
    try:
        frame = pd.read_csv(
            path, dtype=str, keep_default_na=False, skipinitialspace=True, skip_blank_lines=True,
            sep=delimiter,
        )  # fmt: skip
    except pd.errors.EmptyDataError:
        raise DataError(f"data file {path} is empty: it needs a header line and rows") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"data file {path} is not a readable CSV file: {private(exc)}") from None
    if frame.empty:
        raise DataError(f"data file {path} has a header but no rows")
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _refuse_nul_bytes(path: Path) -> None:
    """A CSV file is text: a NUL byte means a binary or UTF-16 file, or a damaged one."""
    line = 1
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            at = chunk.find(b"\x00")
            if at >= 0:
                line += chunk.count(b"\n", 0, at)
                raise DataError(
                    f"data file {path} holds a NUL byte (line {private(line)}): it is not a "
                    "UTF-8 text CSV; if it is UTF-16, save it as UTF-8, otherwise remove the "
                    "NUL characters"
                )
            line += chunk.count(b"\n")


def _header_line(path: Path) -> str:
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        return next((line for line in handle if line.strip()), "")


def header_delimiter(path: Path) -> str:
    """The file's delimiter, read off its header line (public: the column names): a comma
    where the header holds one, else the semicolon, tab or bar it holds most of; a header of
    one column is read with commas."""
    header = _header_line(path)
    counts = {d: header.count(d) for d in DELIMITERS}
    if counts[","]:
        return ","
    best = max(DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else ","


def _refuse_duplicate_names(path: Path, delimiter: str = ",") -> None:
    """Every column of the header line has its own name (after stripping spaces)."""
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        header = next((row for row in csv.reader(handle, delimiter=delimiter) if row), [])
    names = [name.strip() for name in header]
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if not name:
            raise DataError(
                f"data file {path}: column {position} of the header has no name (a trailing "
                "comma, or a row index written without a name?); name every column or remove "
                "the empty one"
            )
        if name in seen:
            raise DataError(
                f"data file {path} names the column {name!r} twice (columns {seen[name]} and "
                f"{position} of the header); give every column its own name"
            )
        seen[name] = position


def canonical_text(value: object) -> str:
    """The text of a categorical value: 1.0 and '1' are the same category '1'."""
    if (
        isinstance(value, float | np.floating)
        and math.isfinite(value)
        and float(value).is_integer()
    ):
        return str(int(value))
    return str(value).strip()


def _is_missing(value: object, column: Column) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    text = str(value).strip()
    declared = column.categories is not None and text in column.categories
    return text.lower() in MISSING_TOKENS and not declared


def _raise_missing(column: Column, row: int, value: object) -> None:
    raise DataError(
        f"column '{column.name}', row {private(row)}: missing value {private(str(value), 'r')}; "
        'the schema does not declare this column nullable: add "nullable": true to it (missing '
        "is then modelled as a value of its own), or fix the row"
        + (
            ", or declare this marker as a category in the schema"
            if column.type == "categorical"
            else ""
        )
    )


def check_columns(frame: pd.DataFrame, schema: Schema) -> None:
    """The file's columns must be exactly the schema's."""
    if frame.shape[0] == 0:
        raise DataError("the data have no rows")
    missing = [
        c.name for c in schema.columns if c.name not in frame.columns and not c.is_identifier
    ]
    extra = [str(c) for c in frame.columns if c not in schema.names]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"columns in the schema but not in the data: {missing}")
        if extra:
            parts.append(f"columns in the data but not in the schema: {extra}")
        raise DataError(
            "the schema does not match the data (" + "; ".join(parts) + "); draft a schema "
            "for this file with 'dpforge schema' or fix the column names"
        )


def _numeric_column(series: pd.Series, column: Column) -> np.ndarray:
    values = np.empty(len(series), dtype=np.float64)
    for row, raw in enumerate(series.tolist(), start=1):
        if _is_missing(raw, column):
            if not column.nullable:
                _raise_missing(column, row, raw)
            values[row - 1] = np.nan
            continue
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise DataError(
                f"column '{column.name}', row {private(row)}: {private(str(raw), 'r')} is not a "
                "number; the "
                f"schema declares '{column.name}' {column.type}: fix the value or make the "
                "column categorical"
            ) from None
        if not math.isfinite(number):
            raise DataError(
                f"column '{column.name}', row {private(row)}: value {private(raw, 'r')} is not "
                "finite; replace it "
                "or remove the row"
            )
        if column.type == "integer" and not number.is_integer():
            raise DataError(
                f"column '{column.name}', row {private(row)}: {private(raw, 'r')} is not a whole "
                "number; make the "
                "column 'continuous' in the schema or fix the value"
            )
        values[row - 1] = number
    return values


def read_time_column(series: pd.Series, column: Column, out_of_bounds: str) -> np.ndarray:
    """A date column on its time axis (NaN for an empty cell of a nullable column)."""
    raw = series.tolist()
    missing = np.array([_is_missing(v, column) for v in raw], dtype=bool)
    if missing.any() and not column.nullable:
        row = int(np.flatnonzero(missing)[0]) + 1
        _raise_missing(column, row, raw[row - 1])
    values = np.full(len(raw), np.nan)
    rows = np.flatnonzero(~missing)
    texts = [str(raw[i]).strip() for i in rows]
    values[rows] = time_values(texts, rows + 1, column)
    check_time_range(values, column, out_of_bounds)
    return values


def _bounds_error(values: np.ndarray, column: Column, out_of_bounds: str) -> DataError | None:
    """The refusal of the column's values outside its declared bounds, or None."""
    if out_of_bounds != "error" or not column.is_complete:
        return None
    outside = np.flatnonzero((values < column.lower) | (values > column.upper))  # NaN: neither
    if not outside.size:
        return None
    row = int(outside[0]) + 1
    return bounds_error(column, row, float(values[row - 1]), int(outside.size))


def _refuse_out_of_bounds(errors: list[DataError]) -> None:
    """One refusal naming every column with values outside its bounds, not only the first."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise DataError(
            f"{len(errors)} columns hold values outside their declared bounds: "
            + "; ".join(str(e).partition("; widen")[0] for e in errors)
            + "; widen the bounds in the schema, or clip such values to the bounds "
            "(--clip-out-of-bounds)"
        )


def bounds_error(column: Column, row: int, value: float, outside: int) -> DataError:
    """The refusal of a value outside a column's declared bounds (row: 1-based, the first
    such row; ``outside``: how many values in all)."""
    return DataError(
        f"column '{column.name}', row {private(row)}: value {private(value, 'g')} "
        f"is outside the declared bounds [{column.lower:g}, {column.upper:g}] "
        f"({private(outside)} value(s) in all); widen the bounds in the schema, or clip "
        "such values to the bounds "
        "(--clip-out-of-bounds)"
    )


def _categorical_column(series: pd.Series, column: Column) -> np.ndarray:
    texts = np.empty(len(series), dtype=object)
    allowed = None if column.categories is None else set(column.categories)
    for row, raw in enumerate(series.tolist(), start=1):
        if _is_missing(raw, column):
            if not column.nullable:
                _raise_missing(column, row, raw)
            texts[row - 1] = None
            continue
        text = canonical_text(raw)
        if allowed is not None and text not in allowed and column.other is not None:
            text = column.other  # a value outside the declared list pools into "other"
        elif allowed is not None and text not in allowed:
            raise DataError(
                f"column '{column.name}', row {private(row)}: unknown category "
                f"{private(text, 'r')}; the schema "
                f"allows {sorted(allowed)}: add it to the schema's categories or fix the row"
            )
        texts[row - 1] = text
    return texts


def validate_table(
    frame: pd.DataFrame, schema: Schema, *, out_of_bounds: str = "error"
) -> pd.DataFrame:
    """Return a typed copy of ``frame`` (floats and strings) after checking every value.

    ``out_of_bounds`` is "error" (default: a value outside declared bounds is a mistake in the
    schema or the data) or "clip" (the encoder clips it to the bounds and warns).
    """
    if out_of_bounds not in ("error", "clip"):
        raise ValueError(f"out_of_bounds must be 'error' or 'clip', got {out_of_bounds!r}")
    check_columns(frame, schema)
    clean, outside = {}, []
    for column in schema.columns:
        if column.is_identifier:  # never read: not even copied
            continue
        series = frame[column.name]
        if column.is_time:
            clean[column.name] = read_time_column(series, column, out_of_bounds)
        elif column.is_numeric:
            clean[column.name] = _numeric_column(series, column)
            outside.append(_bounds_error(clean[column.name], column, out_of_bounds))
        else:
            clean[column.name] = _categorical_column(series, column)
    _refuse_out_of_bounds([e for e in outside if e is not None])
    table = pd.DataFrame(clean, columns=list(clean))
    _check_label(table, schema)
    return table


def keep_released_rows(table: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """The rows whose every categorical value is one of the completed schema's categories.

    Categories (and classes) estimated under DP leave out rare values: the threshold exists to
    hide them, so a row holding one is dropped before training (issues 13.5 and 13.6) rather
    than failing the fit or being quoted in an error. The rule looks at each row on its own,
    given the released lists, so adding or removing a record adds or removes at most one
    training row and every later DP step keeps its guarantee. The number of records N that
    sets the sampling rate and the plan stays the declared one (all rows read); nothing is
    reported about how many rows were dropped. Declared categories drop nothing:
    ``validate_table`` refused values outside them. A column with an ``other`` value drops
    nothing either: its unreleased values become ``other`` (the same per-row rule).
    """
    keep = np.ones(len(table), dtype=bool)
    for column in schema.columns:
        if not column.is_numeric and column.categories is not None:
            values = table[column.name]
            kept = (values.isin(column.categories) | values.isna()).to_numpy()
            if column.other is not None:
                table = table.assign(**{column.name: values.where(kept, column.other)})
                continue
            keep &= kept if column.nullable else values.isin(column.categories).to_numpy()
    return table if keep.all() else table[keep].reset_index(drop=True)


def _check_label(table: pd.DataFrame, schema: Schema) -> None:
    if schema.label is None:
        return
    classes = pd.unique(table[schema.label])
    if len(classes) < 2:
        raise single_class_error(schema.label, classes[0])


def single_class_error(label: str, value: object) -> DataError:
    """The refusal of a label with one class in all rows (in memory and on Spark alike)."""
    return DataError(
        f"label column '{label}' holds a single class ({private(value, 'r')}) in all rows; a "
        "conditional model needs at least two classes: choose another label (the schema's, or "
        "[data] target) or none"
    )


# -- drafting a schema -----------------------------------------------------------------------
DRAFT_WARNING = (
    "DRAFT: the column types, bounds and categories below were READ FROM THE PRIVATE FILE and "
    "are NOT differentially private. Replace each value with public knowledge (a code book, a "
    "measurement range), or set it to null so that dpforge estimates it under DP and charges "
    "the budget; check each type the same way. "
    f"Delete this '{REVIEW_KEY}' entry when done: dpforge refuses a schema that still has it."
)
TYPES_WARNING = (
    "DRAFT: the column types below were INFERRED FROM THE PRIVATE FILE and are NOT "
    "differentially private: one record can change a type (a fraction turns integer into "
    "continuous, one more distinct value turns categorical into integer). Check each type "
    "against public knowledge (a code book) and correct it; null values are estimated under DP. "
    f"Delete this '{REVIEW_KEY}' entry when done: dpforge refuses a schema that still has it."
)


def _looks_numeric(series: pd.Series) -> bool:
    present = [v for v in series.tolist() if str(v).strip().lower() not in MISSING_TOKENS]
    return bool(present) and _all_numbers(present)


def _draft_column(name: str, series: pd.Series, with_values: bool) -> Column:
    """A column's drafted type (identifier, numeric or categorical), nullable where the file
    has empty cells (how many is not said)."""
    present = [v for v in series.tolist() if str(v).strip().lower() not in MISSING_TOKENS]
    fmt = None if _looks_numeric(series) else detect_format(present)
    if fmt is not None:  # dates first: timestamps unique per row are not identifiers
        column = _draft_time_column(name, present, fmt, with_values)
    else:
        identifier = _identifier_type(name, present)
        if identifier is not None:
            return Column(name, identifier)
        column = _typed_draft_column(name, series, present, with_values)
    return replace(column, nullable=len(present) < len(series))


def _draft_time_column(name: str, present: list, fmt: str, with_values: bool) -> Column:
    """A date or datetime column in the detected format; its range (to review) only when
    values are asked for, as for numeric bounds."""
    column = Column(name, drafted_type(fmt), format=fmt)
    if not with_values:
        return column
    rows = np.arange(1, len(present) + 1)
    values = time_values([str(v).strip() for v in present], rows, column)
    lower, upper = float(values.min()), float(values.max())
    return replace(column, lower=lower, upper=max(upper, lower + column.resolution))


def _leading_zero_codes(present: list) -> bool:
    """Codes written with leading zeros (postal codes such as 02134): text, not numbers."""
    return any(re.fullmatch(r"[+-]?0\d+", str(v).strip()) for v in present)


def _identifier_type(name: str, present: list) -> str | None:
    """ "surrogate" for keys unique per row (record numbers, codes), "drop" for names and free
    text (unique per row, or almost, with spaces, or text of more than
    MAX_DRAFTED_CATEGORIES values), and for a key named so whose values repeat (a person id:
    :func:`draft_notes`); None for anything else."""
    texts = [str(v).strip() for v in present]
    if len(texts) < MIN_IDENTIFIER_ROWS or _has_fractions(present):
        return None
    distinct = len(set(texts))
    spaced = sum(" " in t for t in texts) > len(texts) / 2
    if distinct == len(texts):
        return "drop" if spaced else "surrogate"
    if spaced and distinct >= FREE_TEXT_SHARE * len(texts):
        return "drop"
    if KEY_NAME.search(name) and distinct > MAX_CATEGORICAL_LEVELS_FOR_NUMBERS:
        return "drop"
    if distinct > MAX_DRAFTED_CATEGORIES and not _all_numbers(texts):
        return "drop"
    return None


def _all_numbers(values: list) -> bool:
    """Every value reads as a number."""
    try:
        [float(v) for v in values]
    except (TypeError, ValueError):
        return False
    return True


def draft_notes(frame: pd.DataFrame, schema: Schema) -> tuple[str, ...]:
    """The review notes on drafted "drop" columns: a key whose values repeat (the natural
    privacy unit when one person has several rows), and text of many values (names, or a code
    that needs its public code list)."""
    notes = []
    for column in schema.columns:
        if column.type != "drop":
            continue
        present = [str(v).strip() for v in frame[column.name].tolist() if str(v).strip()]
        if KEY_NAME.search(column.name) and len(set(present)) < len(present):
            notes.append(
                f"column '{column.name}' looks like a person's id that repeats over rows: if one "
                f"person can have several rows, fit with --privacy-unit {column.name} "
                "--max-rows-per-unit K (K a public bound on rows per person), so that the "
                "guarantee covers each person, not each row"
            )
        elif len(set(present)) > MAX_DRAFTED_CATEGORIES:
            notes.append(
                f"column '{column.name}' holds text of over {MAX_DRAFTED_CATEGORIES} values (names "
                "or free text?) and is drafted 'drop'; if it is a code, declare it categorical "
                "with its public code list"
            )
    return tuple(notes)


def _typed_draft_column(name: str, series: pd.Series, present: list, with_values: bool) -> Column:
    if _looks_numeric(series) and not _leading_zero_codes(present):
        numbers = np.array([float(v) for v in present])
        numbers = numbers[np.isfinite(numbers)]  # validate_table refuses the others by row
        whole = _exact_whole_numbers(numbers)
        levels = len(np.unique(numbers))
        coded = levels <= (MAX_CATEGORICAL_LEVELS_FOR_NUMBERS if whole else MAX_FRACTION_CODES)
        if coded and len(numbers) >= MIN_RECORDS_PER_CODE * levels:
            cats = sorted({canonical_text(float(v)) for v in present}, key=float)
            return Column(name, "categorical", categories=tuple(cats) if with_values else None)
        lower, upper = _drafted_bounds(numbers) if with_values else (None, None)
        return Column(name, "integer" if whole else "continuous", lower=lower, upper=upper)
    cats = tuple(sorted({canonical_text(v) for v in present})) if with_values else None
    return Column(name, "categorical", categories=cats)


def _exact_whole_numbers(numbers: np.ndarray) -> bool:
    """Whole numbers that an integer column can hold exactly (|x| <= 2**53)."""
    if numbers.size and np.abs(numbers).max() > LARGEST_INTEGER:
        return False
    return bool(np.all(np.mod(numbers, 1) == 0))


def _drafted_bounds(numbers: np.ndarray) -> tuple[float | None, float | None]:
    """The range of the values (to review), or nulls when a schema file cannot hold it."""
    if not numbers.size or np.abs(numbers).max() > LARGEST:
        return None, None
    lower, upper = float(numbers.min()), float(numbers.max())
    if lower == upper:
        upper = max(lower + 1.0, float(np.nextafter(lower, np.inf)))
    return lower, upper


def check_label_values(values: list, what: str) -> None:
    """Refuse to make a label of a column that is continuous or has too many distinct values.

    A conditional model has one class per label value: a continuous target would become one
    class per private value (each released in the draft, or each too rare to survive DP). The
    message quotes only public thresholds, never a count or a value from the data.
    """
    present = [v for v in values if str(v).strip().lower() not in MISSING_TOKENS]
    texts = {canonical_text(v) for v in present}
    reason = None
    if _has_fractions(present):
        reason = "holds numbers with fractions (a continuous measurement)"
    elif len(texts) > MAX_LABEL_CLASSES:
        reason = f"has more than {MAX_LABEL_CLASSES} distinct values"
    elif len(texts) > MAX_CATEGORICAL_LEVELS_FOR_NUMBERS and (
        len(texts) * MIN_RECORDS_PER_CLASS > len(present)
    ):
        reason = f"has fewer than {MIN_RECORDS_PER_CLASS} records per distinct value on average"
    if reason is not None:
        raise DataError(
            f"{what} {reason}: a label must be categorical with 2 to {MAX_LABEL_CLASSES} classes "
            "that each hold many records; choose another target, cut this column into a few "
            "public classes first, or draft without a target"
        )


def _has_fractions(values: list) -> bool:
    try:
        numbers = np.array([float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        return False
    finite = numbers[np.isfinite(numbers)]
    return bool(finite.size) and not bool(np.all(np.mod(finite, 1) == 0))


def _draft_label(name: str, series: pd.Series, with_values: bool) -> Column:
    """The label: categorical and never nullable (every record needs a class)."""
    present = [v for v in series.tolist() if str(v).strip().lower() not in MISSING_TOKENS]
    column = _typed_draft_column(name, series, present, with_values)
    if column.type == "categorical":
        return column
    cats = sorted({canonical_text(v) for v in series}) if with_values else None
    return Column(name, "categorical", categories=None if cats is None else tuple(cats))


def draft_schema(frame: pd.DataFrame, label: str | None = None, with_values: bool = True) -> Schema:
    """Draft a schema from a private file: types always, values only when asked.

    The types, and the values when asked, are read without any privacy protection, so the
    draft always carries a review note that makes ``fit`` refuse it until a person has checked
    them (DRAFT_WARNING with values, TYPES_WARNING without).
    """
    if frame.empty:
        raise DataError("the data have no rows to draft a schema from")
    if label is not None and label not in frame.columns:
        raise DataError(f"--target '{label}' is not a column of the file: {list(frame.columns)}")
    if label is not None:
        check_label_values(frame[label].tolist(), f"--target '{label}'")
    columns = [
        _draft_label(str(name), frame[name], with_values)
        if name == label
        else _draft_column(str(name), frame[name], with_values)
        for name in frame.columns
    ]
    notes = (DRAFT_WARNING if with_values else TYPES_WARNING,)
    prior = "dp" if label is not None else "uniform"
    drafted = Schema(columns=tuple(columns), label=label, label_prior=prior, notes=notes)
    return replace(drafted, notes=notes + draft_notes(frame, drafted))
