"""Units of clipping: single examples, or microbatches of them (DP-CGAN's ``m < B``).

Shared by the clipping engine (:mod:`dpforge.privacy.clipping`) and the layer formulas
(:mod:`dpforge.privacy.ghost_layers`), which both need it; it lives here so that neither
imports the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Units"]


@dataclass(frozen=True)
class Units:
    """What is clipped: each of ``n`` examples, or microbatches of them (``ids`` given).

    ``index`` arranges each microbatch's row numbers in a padded (units x k) matrix; ``n`` (a
    zero row) pads short microbatches.
    """

    n: int
    ids: torch.Tensor | None = None  # (n,) microbatch of each example
    sizes: torch.Tensor | None = None  # (units,) examples in each microbatch
    index: torch.Tensor | None = None  # (units, k) row numbers, n pads

    @classmethod
    def of_groups(cls, groups: torch.Tensor, n: int, num_groups: int | None) -> Units:
        """Check microbatch ids ``groups`` and lay the rows of each microbatch out."""
        if groups.shape != (n,) or groups.dtype not in (torch.int64, torch.int32):
            raise ValueError(
                f"groups must be an integer tensor of shape ({n},), got dtype {groups.dtype} and "
                f"shape {tuple(groups.shape)}"
            )
        low, high = int(groups.min()), int(groups.max())
        if num_groups is None:
            num_groups = high + 1
        if low < 0 or high >= num_groups:
            raise ValueError(f"group ids must lie in 0..{num_groups - 1}, got {low}..{high}")
        ids = groups.long()
        sizes = torch.bincount(ids, minlength=num_groups)
        order = torch.argsort(ids, stable=True)
        sorted_ids = ids[order]
        slot = torch.arange(n, device=ids.device) - (torch.cumsum(sizes, 0) - sizes)[sorted_ids]
        index = torch.full((num_groups, int(sizes.max())), n, dtype=torch.long, device=ids.device)
        index[sorted_ids, slot] = order
        return cls(n, ids, sizes, index)

    @property
    def count(self) -> int:
        """Number of units."""
        return self.n if self.index is None else self.index.shape[0]

    @property
    def rows_per_unit(self) -> int:
        """Rows of each unit (padded): 1 per example, the largest group size for microbatches."""
        return 1 if self.index is None else self.index.shape[1]

    def gather(
        self, x: torch.Tensor, start: int, stop: int, zero_padding: bool = True
    ) -> torch.Tensor:
        """Rows of units ``start..stop-1`` as (units, k, *row shape).

        Padding rows are zeros, or, with ``zero_padding=False`` (for layer inputs, whose every
        use is multiplied by the matching output gradient, zero there), copies of a real row:
        that spares a pass over the larger tensor.
        """
        if self.index is None:
            return x[start:stop].unsqueeze(1)
        rows = self.index[start:stop]
        picked = x[rows.clamp(max=self.n - 1)]
        if zero_padding:
            mask = (rows < self.n).view(*rows.shape, *([1] * (x.dim() - 1)))
            picked.mul_(mask.to(picked.dtype))
        return picked

    def sum_rows(self, x: torch.Tensor) -> torch.Tensor:
        """Sum of each unit's rows of ``x`` (n, ...) -> (units, ...)."""
        if self.ids is None:
            return x
        return self.gather(x, 0, self.count).sum(1)  # index_add_ is slow on CPU
