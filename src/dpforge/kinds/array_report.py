"""What the image and the series parts of the reports share (:mod:`dpforge.kinds.image_report`,
:mod:`dpforge.kinds.series_report`): the metadata rows of the ledger section and the sample
the release report draws; each kind says how it scores utility, what it measures besides,
and how its records are drawn.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from dpforge.data.arrays import ArrayData
from dpforge.schema.array import ArraySchema

__all__ = ["ArrayReport"]

Step = Callable[[str], None]


class ArrayReport(ABC):
    """An image's or a series' part of the reports."""

    measure = ""  # the utility score's name, as the report shows it

    @abstractmethod
    def score(self, schema: ArraySchema, data: ArrayData, test: ArrayData, seed: int) -> float:
        """The utility of a classifier trained on ``data`` and scored on the real ``test``."""

    @abstractmethod
    def extras(
        self,
        schema: ArraySchema,
        data: tuple[ArrayData, ArrayData, ArrayData],
        seed: int,
        step: Step,
    ) -> dict[str, Any]:
        """The kind's own measurements of (real train, real test, synthetic), by the key the
        metrics file gives them (each step reported to ``step``)."""

    @abstractmethod
    def pictures(self, schema: ArraySchema, real: ArrayData, synthetic: ArrayData) -> str:
        """The full report's pictures of synthetic records next to real training ones."""

    def closing(self, real: ArrayData, synthetic: ArrayData, seed: int) -> list[str]:
        """Sections after the pictures (none by default)."""
        return []

    @abstractmethod
    def release_picture(self, schema: ArraySchema, data: ArrayData, seed: int) -> str:
        """The release report's picture of synthetic records ``data`` drawn with ``seed``."""

    def release_section(
        self, model: Any, n_synthetic: int, seed: int, pair: tuple[str, str] | None
    ) -> str:
        """Eight synthetic records per class (or 32 without a label) sampled with ``seed``;
        ``n_synthetic`` and ``pair`` are a table's."""
        schema = model.schema_
        n = 8 * max(1, schema.n_classes if schema.label is not None else 4)
        return self.release_picture(schema, model.sample(n, seed=seed), seed)

    @staticmethod
    def metadata_rows(schema: ArraySchema, private: list[str]) -> list[tuple[str, str, str, str]]:
        """One row per metadata entry of the ledger: each was estimated under DP."""
        return [(item, "", "", "estimated under DP") for item in private]
