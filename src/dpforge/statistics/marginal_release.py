"""A table model's stored release: the measured marginals, for matching rows at sample time.

The marginals are the anchor's DP measurements as the generator was fitted to them: the
consistent estimate (:mod:`dpforge.statistics.estimate`) of every round-1 marginal and every
selected pair (``release.safetensors``, float64, one tensor per marginal; non-negative, and
agreeing wherever they overlap), with their public description under ``model.json``'s
``release`` (the columns, the table's shape, the number of records the counts are projected
to). Sampling reads them to weight a pool of
generated rows (:mod:`dpforge.statistics.reweight`). Storing them costs nothing: they are
post-processing of the release. A non-private run (epsilon infinite)
stores exact counts, as its generator is non-private too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dpforge.statistics.marginals import MeasuredMarginal

__all__ = ["MarginalRelease", "TABLE_RELEASE"]

TABLE_RELEASE = "table"  # model.json's release "kind" of a table's marginals


def _tensor_name(i: int) -> str:
    return f"marginal_{i:04d}"


@dataclass(frozen=True)
class MarginalRelease:
    """The measured marginals a table model stores (their consistent estimate, nothing else)."""

    marginals: tuple[MeasuredMarginal, ...]

    def to_json(self) -> dict[str, Any]:
        """The public description (model.json's ``release``)."""
        return {
            "kind": TABLE_RELEASE,
            "marginals": [
                {k: v for k, v in m.to_dict().items() if k not in ("noisy_counts", "std")}
                for m in self.marginals
            ],
        }

    def tensors(self) -> dict[str, torch.Tensor]:
        """The estimated counts (release.safetensors), in float64."""
        return {
            _tensor_name(i): torch.as_tensor(m.noisy_counts, dtype=torch.float64)
            for i, m in enumerate(self.marginals)
        }

    @classmethod
    def from_parts(
        cls, info: dict[str, Any], tensors: Mapping[str, torch.Tensor]
    ) -> MarginalRelease:
        """Rebuild from model.json's ``release`` and release.safetensors (checked first by
        :func:`table_release_error`)."""
        marginals = tuple(
            MeasuredMarginal.from_dict(
                d | {"noisy_counts": tensors[_tensor_name(i)].double().numpy()}
            )
            for i, d in enumerate(info["marginals"])
        )
        return cls(marginals)


def table_release_error(
    info: dict[str, Any], tensors: Mapping[str, torch.Tensor], cells: Mapping[str, int]
) -> str:
    """What is wrong with a table release ('' when nothing): every tensor named and sized as
    model.json says, finite, and every marginal over known columns with their cell counts
    (``cells``: column name -> cells, the label's classes included)."""
    marginals = info["marginals"]
    expected = {_tensor_name(i) for i in range(len(marginals))}
    if set(tensors) != expected:
        return f"holds {len(tensors)} tensors, model.json describes {len(expected)} marginals"
    for i, m in enumerate(marginals):
        tensor = tensors[_tensor_name(i)]
        problem = _marginal_error(m, tensor, cells)
        if problem:
            return f"marginal {i} ({', '.join(map(str, m['columns']))}): {problem}"
    return ""


def _marginal_error(m: dict[str, Any], tensor: torch.Tensor, cells: Mapping[str, int]) -> str:
    columns, shape = m["columns"], m["shape"]
    if len(columns) != len(shape):
        return "columns and shape differ in length"
    for j, name in enumerate(columns):
        if name not in cells:
            return f"{name!r} is not a column the model generates"
        if shape[j] != cells[name]:
            return f"{name!r} has {shape[j]} cells, the model {cells[name]}"
    if tuple(tensor.shape) != (int(np.prod(shape)),):
        return f"the counts have shape {tuple(tensor.shape)}, expected ({int(np.prod(shape))},)"
    if not torch.isfinite(tensor).all():
        return "the counts hold NaN or infinite values"
    return _row_totals_error(m.get("row_totals") or [], shape, m.get("total"))


def _row_totals_error(totals: list, shape: list, total: Any) -> str:
    """What is wrong with a marginal's row totals ('' when nothing or none)."""
    if not totals:
        return ""
    values = np.asarray(totals, dtype=np.float64)
    if len(values) != shape[0] or not np.isfinite(values).all() or (values < 0).any():
        return f"its row totals are not {shape[0]} finite counts >= 0"
    if not np.isclose(values.sum(), float(total), rtol=1e-6):
        return f"its row totals sum to {values.sum():g}, not its total {total}"
    return ""
