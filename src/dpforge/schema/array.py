"""The public side of image and time-series data: shape, per-channel value range, label classes.

An image set or a set of time series is an array of records of one fixed shape:
``(channels, height, width)`` for images, ``(channels, length)`` for time series. What may be
used without paying privacy is what this schema declares: the shape, each channel's value range
(for images the pixel format's range, e.g. 0..255 for 8-bit PNG, is public knowledge; for
sensor curves a measurement range), the label's classes and the label prior. A range or a class
list left ``null`` is estimated under differential privacy during ``fit`` and charged to the
budget (``dpforge.data.array_metadata``); nothing is read from the data for free.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from numbers import Integral
from pathlib import Path
from typing import Any

from dpforge.errors import SchemaError
from dpforge.schema.formats import ARRAY_KINDS, MAX_SIZE, SCHEMA_VERSION
from dpforge.schema.table import (
    REVIEW_KEY,
    category_text,
    check_bounds,
    check_declared_prior,
    check_prior_kind,
    check_schema_document,
    check_values,
    optional_number,
    prior_from_json,
    read_schema_json,
)

IMAGE, TIMESERIES = ARRAY_KINDS
_SHAPE_RANK = {IMAGE: 3, TIMESERIES: 2}
_SHAPE_LAYOUT = {IMAGE: "(channels, height, width)", TIMESERIES: "(channels, length)"}


@dataclass(frozen=True)
class Channel:
    """One channel (a colour plane, or one sensor of a multivariate series) and its range."""

    name: str
    lower: float | None = None
    upper: float | None = None

    @property
    def is_complete(self) -> bool:
        return self.lower is not None and self.upper is not None

    def validate(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"a channel name must be a non-empty text, got {self.name!r}")
        check_bounds(f"channel '{self.name}'", self.lower, self.upper)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "lower": self.lower, "upper": self.upper}

    @classmethod
    def from_dict(cls, d: Any) -> Channel:
        if not isinstance(d, dict) or "name" not in d:
            raise SchemaError(f"each channel needs a 'name' (and 'lower', 'upper'); got {d!r}")
        lower, upper = (optional_number(d, key, "channel") for key in ("lower", "upper"))
        channel = cls(str(d["name"]), lower, upper)
        channel.validate()
        return channel


@dataclass(frozen=True)
class ArraySchema:
    """Shape, channels, label classes and label prior of an image or time-series data set.

    ``shape`` is ``(channels, height, width)`` (``kind="image"``) or ``(channels, length)``
    (``kind="timeseries"``); ``channels`` lists one :class:`Channel` per leading entry.
    ``label`` names the per-record label (None: unconditional); ``classes`` are its public
    classes (None: estimated under DP). ``label_prior`` is ``"uniform"`` (free), ``"dp"`` (noisy
    class counts, charged) or a mapping class -> probability (free, user-declared).
    """

    kind: str
    shape: tuple[int, ...]
    channels: tuple[Channel, ...]
    label: str | None = None
    classes: tuple[str, ...] | None = None
    label_prior: str | dict[str, float] = "uniform"
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        self.validate()

    # -- queries ---------------------------------------------------------------------------
    @property
    def n_channels(self) -> int:
        return self.shape[0]

    @property
    def n_classes(self) -> int:
        return 0 if self.label is None or self.classes is None else len(self.classes)

    @property
    def incomplete_channels(self) -> tuple[Channel, ...]:
        return tuple(c for c in self.channels if not c.is_complete)

    @property
    def is_complete(self) -> bool:
        """True when nothing must still be estimated from the data (bounds and classes)."""
        return not self.incomplete_channels and (self.label is None or self.classes is not None)

    @property
    def shape_layout(self) -> str:
        """What the axes of ``shape`` are, for messages: "(channels, height, width)" or
        "(channels, length)"."""
        return _SHAPE_LAYOUT[self.kind]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.channels]

    # -- validation ------------------------------------------------------------------------
    def validate(self) -> None:
        if self.kind not in ARRAY_KINDS:
            raise SchemaError(f"unknown data type '{self.kind}'; use one of {ARRAY_KINDS}")
        rank = _SHAPE_RANK[self.kind]
        layout = self.shape_layout
        sizes_ok = all(isinstance(s, Integral) and not isinstance(s, bool) for s in self.shape)
        if (
            not sizes_ok
            or len(self.shape) != rank
            or any(not 1 <= s <= MAX_SIZE for s in self.shape)
        ):
            raise SchemaError(
                f"a {self.kind} schema needs a shape {layout} of whole numbers from 1 to "
                f"{MAX_SIZE}, got "
                f"{list(self.shape)}"
            )
        if not all(isinstance(c, Channel) for c in self.channels):
            raise SchemaError("an array schema's channels must be Channel objects")
        if len(self.channels) != self.shape[0]:
            raise SchemaError(
                f"the shape {list(self.shape)} has {self.shape[0]} channel(s) but the schema "
                f"lists {len(self.channels)}: give one entry per channel"
            )
        names = self.names
        if len(set(names)) != len(names):
            raise SchemaError(f"channel names must be distinct, got {names}")
        for channel in self.channels:
            channel.validate()
        check_prior_kind(self.label, self.label_prior)
        if self.label is not None:
            self._validate_label()

    def _validate_label(self) -> None:
        if not isinstance(self.label, str):
            raise SchemaError(f"label must be a name or None, got {self.label!r}")
        check_values(f"label '{self.label}'", "classes", self.classes)
        if self.classes is not None:
            if len(self.classes) < 2:
                raise SchemaError(
                    f"label '{self.label}' has {len(self.classes)} class(es); a conditional "
                    "model needs at least 2"
                )
            if len(set(self.classes)) != len(self.classes):
                raise SchemaError(f"label '{self.label}': classes contain duplicates")
        prior = self.label_prior
        if isinstance(prior, str):
            if prior not in ("uniform", "dp"):
                raise SchemaError(
                    f"label_prior must be 'uniform', 'dp' or a mapping class -> probability; "
                    f"got '{prior}'"
                )
            return
        check_declared_prior(self.label, self.classes, prior)

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": SCHEMA_VERSION,
            "type": self.kind,
            "shape": list(self.shape),
            "channels": [c.to_dict() for c in self.channels],
            "label": self.label,
            "classes": None if self.classes is None else list(self.classes),
            "label_prior": self.label_prior,
        }
        if self.notes:
            out[REVIEW_KEY] = list(self.notes)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, allow_review: bool = False) -> ArraySchema:
        """An image or time-series schema from its JSON object, checked against the format."""
        check_schema_document(d)
        if d.get("type") not in ARRAY_KINDS:
            raise SchemaError(f"an array schema is a JSON object with 'type' in {ARRAY_KINDS}")
        if d.get(REVIEW_KEY) and not allow_review:
            raise SchemaError(
                "this schema is a draft whose values were read from the private data; review "
                "them, replace them with public knowledge or null, then delete the "
                f"'{REVIEW_KEY}' entry"
            )
        shape = d.get("shape")
        channels = d.get("channels")
        if not isinstance(shape, list) or not isinstance(channels, list):
            raise SchemaError("an array schema needs a 'shape' list and a 'channels' list")
        try:
            shape_t = tuple(int(s) for s in shape)
        except (TypeError, ValueError):
            raise SchemaError(f"'shape' must be a list of integers, got {shape!r}") from None
        classes = d.get("classes")
        return cls(
            kind=d["type"],
            shape=shape_t,
            channels=tuple(Channel.from_dict(c) for c in channels),
            label=d.get("label"),
            classes=None if classes is None else tuple(category_text(c) for c in classes),
            label_prior=prior_from_json(d.get("label_prior", "uniform")),
            notes=tuple(d.get(REVIEW_KEY) or ()),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def with_channels(self, channels: tuple[Channel, ...]) -> ArraySchema:
        return replace(self, channels=channels)

    def with_classes(self, classes: tuple[str, ...]) -> ArraySchema:
        return replace(self, classes=classes)

    def with_label_prior(self, prior: str | dict[str, float]) -> ArraySchema:
        return replace(self, label_prior=prior)


def image_schema(
    shape: tuple[int, int, int],
    *,
    lower: float = 0.0,
    upper: float = 255.0,
    label: str | None = "label",
    classes: tuple[str, ...] | None = None,
    label_prior: str | dict[str, float] = "uniform",
) -> ArraySchema:
    """An image schema with the same public pixel range for every channel (gray or RGB)."""
    names = ("gray",) if shape[0] == 1 else ("red", "green", "blue")[: shape[0]]
    if len(names) != shape[0]:
        names = tuple(f"channel_{i}" for i in range(shape[0]))
    channels = tuple(Channel(n, lower, upper) for n in names)
    return ArraySchema(IMAGE, tuple(shape), channels, label, classes, label_prior)


def schema_from_dict(d: dict[str, Any], *, allow_review: bool = False):
    """A table :class:`~dpforge.schema.table.Schema` or an :class:`ArraySchema` (by "type")."""
    from dpforge.schema.table import Schema

    check_schema_document(d)
    if d.get("type") in ARRAY_KINDS:
        return ArraySchema.from_dict(d, allow_review=allow_review)
    return Schema.from_dict(d, allow_review=allow_review)


def load_schema(path: str | Path):
    """Read a schema file of any data type (table, image, timeseries)."""
    return schema_from_dict(read_schema_json(path))
