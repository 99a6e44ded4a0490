"""Per-layer pieces of ghost clipping: how each supported layer runs with taps, what its
per-example squared gradient norms are, and what its clipped gradient sum is.

The engine (:mod:`dpforge.privacy.clipping`) validates the network, runs it layer by layer,
differentiates the summed loss ONCE with respect to the tapped layer outputs, turns norms into
clip factors and asks every tap for its weighted gradient sums. This module knows the layers.

Two kinds of taps cover every supported layer:

* :class:`LinearMapTap`, a weight ``W`` (o x d) and an optional bias applied at ``T`` positions of
  each example, ``z_t = W a_t + b``: ``nn.Linear`` (``T = 1``), ``nn.Conv1d``/``nn.Conv2d``
  (positions are output pixels, ``a_t`` the unfolded input patch), the input and recurrent maps
  of :class:`~dpforge.nets.recurrent.DPLSTM` (positions are time steps). With ``A_i`` (T x d) and
  ``G_i = dL_i/dZ_i`` (T x o), example ``i``'s weight gradient is ``G_i^T A_i``; its squared norm
  is computed either by forming it (``T o d`` per example, by batched matrix products or, for
  convolutions, by the convolution's weight-gradient kernel with one group per example; the
  formed gradients are reused for the clipped sum when that pays) or by the ghost formula
  ``||G^T A||^2 = sum_{t,t'} (a_t . a_t')(g_t . g_t')`` (``T^2 (o + d)``), whichever is cheaper,
  in chunks of examples so that temporaries stay small. The bias gradient is ``sum_t g_t``.
* :class:`AffineTap`, an element-wise scale and shift of a normalised input
  (``nn.GroupNorm``, ``nn.LayerNorm``): statistics are per example, and the per-example gradients
  ``sum (g * x_hat)`` and ``sum g`` over the broadcast dimensions are small, so they are formed.

A microbatch (a group of ``k`` examples whose MEAN gradient is clipped) is a unit with ``k T``
positions: its summed gradient is the same formula on its members' stacked positions (zero rows
pad short groups and add nothing). See :class:`dpforge.privacy.units.Units`.

This module keeps the tuning constants (tests patch them here) and :class:`LinearMapTap`, which
reads them; the tap interface and the small taps are in :mod:`dpforge.privacy.ghost_tap`, the
convolution tap in :mod:`dpforge.privacy.ghost_conv` and the per-layer handlers in
:mod:`dpforge.privacy.ghost_handlers`. Their names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from dpforge.privacy.ghost_tap import (
    AffineTap,
    FormedTap,
    Tap,
    TapNorms,
    UnsupportedLayerError,
    _row_sq_norms,
    _trainable_or_none,
)
from dpforge.privacy.units import Units

__all__ = [
    "AffineTap",
    "ConvTap",  # noqa: F822 (resolved by __getattr__)
    "FormedTap",
    "LayerHandler",  # noqa: F822 (resolved by __getattr__)
    "LinearMapTap",
    "Tap",
    "TapNorms",
    "UnsupportedLayerError",
    "check_plain_module",  # noqa: F822 (resolved by __getattr__)
    "explicit_padding",  # noqa: F822 (resolved by __getattr__)
    "handler_for",  # noqa: F822 (resolved by __getattr__)
]

# "auto" picks the cheaper way per layer; "ghost" or "materialise" force one (for tests).
NORM_STRATEGY = "auto"
# Formed per-unit weight gradients (units x o x d) are kept for the clipped sum, sparing one
# weight-gradient product of n T o d multiply-adds, only when they fit in MAX_FORMED_BYTES per
# layer and units span at least KEEP_MIN_POSITIONS positions: on CPU, the page faults of a fresh
# o x d per unit cost about as much as ~100 positions' worth of that product.
MAX_FORMED_BYTES = 2**25
KEEP_MIN_POSITIONS = 100
# Target size of the temporaries of one chunk of units (patches, Gram matrices, gradients):
# small enough to be recycled by the allocator, large enough to keep the number of kernel
# calls (each a parallel region, slow on a busy machine) low. Tuned on the 2-core machine.
CHUNK_BYTES = 2**22


class LinearMapTap(Tap):
    """A weight (o x d) and optional bias applied at T positions: ``z_t = W a_t + b``.

    The default source is the stacked inputs (n, T, d) of one or more ``F.linear`` calls;
    subclasses (convolutions) override :meth:`patches`, :meth:`_form` and :meth:`param_sum`.
    """

    # Cost of the ghost formula per multiply-add, relative to forming the gradients.
    ghost_cost = 1.0
    # Most units whose gradients one call of :meth:`_form` computes (None: CHUNK_BYTES decides).
    form_units: int | None = None

    def __init__(
        self,
        name: str,
        weight: nn.Parameter,
        bias: nn.Parameter | None,
        outputs: list[torch.Tensor],
        source: torch.Tensor,
    ) -> None:
        super().__init__(name, outputs)
        self.weight = _trainable_or_none(weight)
        self.bias = _trainable_or_none(bias)
        self.source = source
        self.in_features = weight[0].numel()

    def trainable(self) -> list[nn.Parameter]:
        return [p for p in (self.weight, self.bias) if p is not None]

    def patches(self, rows: torch.Tensor) -> torch.Tensor:
        """(m, T, d) input vectors at each position, for rows ``rows`` of :attr:`source`."""
        return rows

    def position_grads(self, grads: Sequence[torch.Tensor]) -> torch.Tensor:
        """(n, T, o) output gradients at each position."""
        n, o = grads[0].shape[0], grads[0].shape[-1]
        if len(grads) == 1:
            return grads[0].reshape(n, -1, o)
        return torch.cat([g.reshape(n, -1, o) for g in grads], dim=1)

    @torch.no_grad()
    def unit_norms(self, grads: Sequence[torch.Tensor], units: Units) -> TapNorms:
        g = self.position_grads(grads)
        if units.rows_per_unit * g.shape[1] == 1 and NORM_STRATEGY != "materialise":
            return self._one_position_norms(g, units)
        sq, formed = None, {}
        if self.bias is not None:
            per_unit = units.sum_rows(g.sum(1))
            sq = _row_sq_norms(per_unit)
            formed[id(self.bias)] = [per_unit]
        if self.weight is not None:
            weight_sq, weight_formed = self._weight_norms(g, grads, units)
            sq = weight_sq if sq is None else sq.add_(weight_sq)
            if weight_formed:
                formed[id(self.weight)] = weight_formed
        return TapNorms(sq, formed)

    def _one_position_norms(self, g: torch.Tensor, units: Units) -> TapNorms:
        """One position per unit (``nn.Linear`` per example): ``||g a^T|| = ||g|| ||a||``."""
        g = units.gather(g, 0, units.count).flatten(1)  # (units, o)
        g_sq = _row_sq_norms(g)
        sq, formed = None, {}
        if self.weight is not None:
            rows = units.gather(self.source, 0, units.count, zero_padding=False)
            sq = g_sq * _row_sq_norms(self.patches(rows.flatten(0, 1)))
        if self.bias is not None:
            sq = g_sq if sq is None else sq.add_(g_sq)
            formed[id(self.bias)] = [g]
        return TapNorms(sq, formed)

    def _weight_norms(
        self, g: torch.Tensor, grads: Sequence[torch.Tensor], units: Units
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Squared norms of the units' weight gradients, and those gradients (in chunks of
        units) if they are kept for the clipped sum."""
        positions, o, d = units.rows_per_unit * g.shape[1], g.shape[2], self.in_features
        materialise, keep = _choose(units, g.shape[1], o, d, g.element_size(), self.ghost_cost)
        if materialise:
            per_unit = self._formed_numbers(positions, o, d)
        else:
            per_unit = positions * (d + o + 2 * positions)
        chunk = max(1, CHUNK_BYTES // (per_unit * g.element_size()))
        if materialise and self.form_units is not None:
            chunk = min(chunk, self.form_units)
        sq, formed = g.new_empty(units.count), []
        for start in range(0, units.count, chunk):
            stop = min(units.count, start + chunk)
            if materialise:
                summed = self._form(g, grads, units, start, stop)
                sq[start:stop] = torch.linalg.vector_norm(summed, dim=(1, 2)).square()
                formed += [summed] if keep else []
            else:
                a = self._unit_patches(units, start, stop)
                gu = units.gather(g, start, stop).reshape(stop - start, positions, o)
                # A sum of products of Gram matrices, whose terms may cancel: in float32 the
                # round-off can be far above the clip margin, so the sum is formed in float64
                # (it may still dip just below zero).
                a, gu = a.double(), gu.double()
                gram = torch.bmm(a, a.mT).mul_(torch.bmm(gu, gu.mT))
                sq[start:stop] = gram.sum((1, 2)).clamp_(min=0).to(sq.dtype)
        return sq, formed

    def _unit_patches(self, units: Units, start: int, stop: int) -> torch.Tensor:
        """(units, k T, d): the stacked patches of each unit's (padded) rows."""
        rows = units.gather(self.source, start, stop, zero_padding=False)
        a = self.patches(rows.flatten(0, 1))
        return a.reshape(stop - start, -1, self.in_features)

    def _formed_numbers(self, positions: int, o: int, d: int) -> int:
        """Numbers held per unit while forming its weight gradient (chunk sizing)."""
        return positions * (d + o) + o * d

    def _form(
        self, g: torch.Tensor, grads: Sequence[torch.Tensor], units: Units, start: int, stop: int
    ) -> torch.Tensor:
        """Weight gradients (units, o, d) of units ``start..stop-1``: ``G_u^T A_u``."""
        gu = units.gather(g, start, stop).reshape(stop - start, -1, g.shape[2])
        return torch.bmm(gu.mT, self._unit_patches(units, start, stop))

    def param_sum(
        self, param: nn.Parameter, grads: Sequence[torch.Tensor], weights: torch.Tensor
    ) -> torch.Tensor:
        g = self.position_grads(grads) * weights.view(-1, 1, 1)
        return (g.flatten(0, 1).mT @ self.patches(self.source).flatten(0, 1)).view(param.shape)


def _choose(
    units: Units, positions: int, o: int, d: int, itemsize: int, ghost_cost: float
) -> tuple[bool, bool]:
    """Whether to form the units' weight gradients, and whether to keep them for the sum.

    Forming costs ``U P o d`` multiply-adds for ``U`` units of ``P`` positions, the ghost formula
    ``ghost_cost * U P^2 (o + d)`` (the factor weighs its extra copies and slower kernels); the
    clipped sum costs another ``n T o d`` unless the formed gradients are kept (see
    :data:`MAX_FORMED_BYTES`).
    """
    count, per_unit = units.count, units.rows_per_unit * positions
    fits = count * o * d * itemsize <= MAX_FORMED_BYTES and per_unit >= KEEP_MIN_POSITIONS
    if NORM_STRATEGY != "auto":
        materialise = NORM_STRATEGY == "materialise"
        return materialise, materialise and fits
    ghost = ghost_cost * count * per_unit * per_unit * (o + d)
    if fits:
        materialise = count * per_unit * o * d <= ghost + units.n * positions * o * d
    else:
        materialise = o * d <= ghost_cost * per_unit * (o + d)
    return materialise, materialise and fits
