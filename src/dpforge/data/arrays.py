"""Image and time-series records in memory, checked against their public schema.

:class:`ArrayData` is what the readers (``dpforge.data.images``, ``dpforge.data.series``)
return and what ``Synthesizer.fit`` / ``sample`` take and give for these data types: one array
of records of a fixed shape and, optionally, one label (as text) per record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpforge.errors import DataError, private
from dpforge.schema.array import ArraySchema


@dataclass(frozen=True)
class ArrayData:
    """``values``: (n, *shape) numbers; ``labels``: (n,) class names as text, or None."""

    values: np.ndarray
    labels: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.values, np.ndarray) or self.values.ndim < 2:
            raise DataError("values must be a numpy array of records, first dimension the records")
        if self.labels is not None and len(self.labels) != len(self.values):
            raise DataError(
                f"{len(self.values)} records but {len(self.labels)} labels: give one label "
                "per record"
            )

    def __len__(self) -> int:
        return len(self.values)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of one record."""
        return tuple(self.values.shape[1:])


def _text_labels(labels: np.ndarray) -> np.ndarray:
    """Labels as canonical text (1, 1.0 and '1' are the class '1')."""
    from dpforge.data.tables import canonical_text

    return np.asarray([canonical_text(v) for v in labels], dtype=object)


def _check_shape(data: ArrayData, schema: ArraySchema) -> None:
    if data.shape != tuple(schema.shape):
        raise DataError(
            f"the records have shape {list(data.shape)} but the schema's {schema.kind} shape "
            f"{schema.shape_layout} is {list(schema.shape)}: fix the schema's 'shape' or the data"
        )


def _check_finite(values: np.ndarray) -> None:
    bad = np.argwhere(~np.isfinite(values))
    if len(bad):
        record, channel, *position = (int(i) for i in bad[0])
        raise DataError(
            f"record {private(record + 1)}, channel {channel + 1}, position {position}: value "
            f"{private(values[tuple(bad[0])], 'r')} is not a finite number "
            f"({private(len(bad))} such values); "
            "remove or repair these records"
        )


def _check_channel_bounds(values: np.ndarray, schema: ArraySchema, out_of_bounds: str) -> None:
    for index, channel in enumerate(schema.channels):
        if not channel.is_complete or out_of_bounds == "clip":
            continue
        plane = values[:, index]
        outside = np.argwhere((plane < channel.lower) | (plane > channel.upper))
        if len(outside):
            record, *position = (int(i) for i in outside[0])
            raise DataError(
                f"record {private(record + 1)}, channel '{channel.name}', position {position}: "
                f"value {private(plane[tuple(outside[0])], 'g')} is outside the public range "
                f"[{channel.lower:g}, {channel.upper:g}] ({private(len(outside))} such values); "
                "widen the range in the "
                "schema or pass out_of_bounds='clip' (--clip-out-of-bounds)"
            )


def _check_labels(labels: np.ndarray | None, schema: ArraySchema) -> np.ndarray | None:
    if schema.label is None:
        return None
    if labels is None:
        raise DataError(
            f"the schema has the label '{schema.label}' but the data have no labels: give "
            'labelled data or set "label": null in the schema'
        )
    text = _text_labels(labels)
    if schema.classes is not None:
        known = set(schema.classes)
        unknown = [i for i, v in enumerate(text) if v not in known]
        if unknown:
            raise DataError(
                f"record {private(unknown[0] + 1)}: label {private(text[unknown[0]], 'r')} is "
                f"not one of the classes {list(schema.classes)} of '{schema.label}' "
                f"({private(len(unknown))} such records); add "
                "the class to the schema or remove these records"
            )
    if len(set(text)) < 2:
        raise DataError(
            f"label '{schema.label}' holds a single class ({private(text[0], 'r')}) in all "
            "records; a conditional model needs at least two classes: give data with several "
            'classes or set "label": null in the schema'
        )
    return text


def keep_released_records(data: ArrayData, schema: ArraySchema) -> ArrayData:
    """The records whose label is one of the completed schema's classes.

    Classes estimated under DP leave out rare ones; their records are dropped before training,
    by a rule applied to each record on its own (see ``dpforge.data.tables.keep_released_rows``
    for why this keeps the guarantee and why N stays the number of records read). Nothing is
    reported about how many were dropped.
    """
    if schema.label is None or data.labels is None or schema.classes is None:
        return data
    known = set(schema.classes)
    keep = np.fromiter((v in known for v in data.labels), dtype=bool, count=len(data))
    return data if keep.all() else ArrayData(data.values[keep], data.labels[keep])


def validate_arrays(
    data: ArrayData, schema: ArraySchema, out_of_bounds: str = "error"
) -> ArrayData:
    """Check records against the schema; return them (integer and float32 values as they
    are, other values as float64: no copy of a large uint8 image set) with text labels.

    Refuses (DataError naming record, channel, position and value): a shape other than the
    schema's, non-finite values, values outside a declared channel range (unless
    ``out_of_bounds="clip"``: the encoder then clips them), labels missing or outside the classes.
    """
    if out_of_bounds not in ("error", "clip"):
        raise DataError(f"out_of_bounds must be 'error' or 'clip', got {out_of_bounds!r}")
    if len(data) == 0:
        raise DataError("the data hold no records")
    _check_shape(data, schema)
    values = np.asarray(data.values)
    if values.dtype.kind not in "iu" and values.dtype != np.float32:
        values = values.astype(np.float64)
    _check_finite(values)
    _check_channel_bounds(values, schema, out_of_bounds)
    return ArrayData(values, _check_labels(data.labels, schema))
