"""The tap interface of ghost clipping (:class:`Tap`, :class:`TapNorms`) and the two taps whose
per-example gradients are small enough to form directly: :class:`AffineTap` (the scale and
shift of ``nn.GroupNorm``/``nn.LayerNorm``) and :class:`FormedTap` (gradients formed by the
caller). The weight taps that choose between forming and the ghost formula are in
:mod:`dpforge.privacy.ghost_layers` and :mod:`dpforge.privacy.ghost_conv`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from dpforge.errors import PrivacyError
from dpforge.privacy.units import Units


class UnsupportedLayerError(PrivacyError):
    """The network contains a layer whose per-example gradient norm this module cannot compute."""


# ---------------------------------------------------------------------------------------- taps


def _row_sq_norms(x: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean norm of each row of (n, ...) without a squared temporary."""
    return torch.linalg.vector_norm(x.flatten(1), dim=1).square()


@dataclass(frozen=True)
class TapNorms:
    """A tap's squared norm per unit and the per-unit gradients it formed on the way.

    ``formed`` maps ``id(parameter)`` to (units, *parameter shape) tensors, consecutive chunks
    of the units; the clipped sum of such a parameter is then ``unit_weights @ formed``, with
    no further pass over the data.
    """

    sq: torch.Tensor
    formed: dict[int, list[torch.Tensor]]


class Tap(ABC):
    """What the forward pass keeps of one layer (or one weight matrix) with trainable parameters.

    ``outputs`` are the tensors of the autograd graph whose gradients the tap needs; the engine
    hands their gradients back, in that order, as ``grads``.
    """

    def __init__(self, name: str, outputs: list[torch.Tensor]) -> None:
        self.name = name
        self.outputs = outputs

    @abstractmethod
    def trainable(self) -> list[nn.Parameter]:
        """The trainable parameters whose gradients this tap accounts for."""

    @abstractmethod
    def unit_norms(self, grads: Sequence[torch.Tensor], units: Units) -> TapNorms:
        """Squared norm of each unit's summed gradient over :meth:`trainable`."""

    def param_sum(
        self, param: nn.Parameter, grads: Sequence[torch.Tensor], weights: torch.Tensor
    ) -> torch.Tensor:
        """``sum_i weights_i * grad_i`` of ``param`` when no per-unit gradient was formed."""
        raise NotImplementedError(f"{type(self).__name__} always forms its per-unit gradients")

    @torch.no_grad()
    def weighted_sums(
        self,
        grads: Sequence[torch.Tensor],
        norms: TapNorms,
        example_weights: torch.Tensor,
        unit_weights: torch.Tensor,
    ) -> dict[int, torch.Tensor]:
        """``id(param) -> sum_i w_i grad_i`` for every trainable parameter of the tap."""
        sums = {}
        for param in self.trainable():
            chunks = norms.formed.get(id(param))
            if chunks is None:
                sums[id(param)] = self.param_sum(param, grads, example_weights.to(param.dtype))
                continue
            total, start = None, 0
            for chunk in chunks:  # consecutive units
                w = unit_weights[start : start + chunk.shape[0]].to(chunk.dtype)
                part = w @ chunk.flatten(1)
                total = part if total is None else total.add_(part)
                start += chunk.shape[0]
            sums[id(param)] = total.view(param.shape)
        return sums


def _trainable_or_none(param: nn.Parameter | None) -> nn.Parameter | None:
    return param if param is not None and param.requires_grad else None


class AffineTap(Tap):
    """``z = x_hat * weight + bias`` with ``x_hat`` a per-example normalised input."""

    def __init__(
        self,
        name: str,
        weight: nn.Parameter | None,
        bias: nn.Parameter | None,
        output: torch.Tensor,
        normalised: torch.Tensor,
        broadcast: tuple[int, ...],
    ) -> None:
        super().__init__(name, [output])
        self.weight = _trainable_or_none(weight)
        self.bias = _trainable_or_none(bias)
        self.normalised = normalised
        # Dimensions over which a parameter is broadcast: its gradient sums over them.
        self.reduce = tuple(d for d in range(1, len(broadcast)) if broadcast[d] == 1)

    def trainable(self) -> list[nn.Parameter]:
        return [p for p in (self.weight, self.bias) if p is not None]

    def _per_example(self, x: torch.Tensor, param: nn.Parameter) -> torch.Tensor:
        """Sum ``x`` over the broadcast dimensions -> (n, *param shape)."""
        summed = x.sum(self.reduce) if self.reduce else x  # sum(()) would sum everything
        return summed.reshape(x.shape[0], *param.shape)

    @torch.no_grad()
    def unit_norms(self, grads: Sequence[torch.Tensor], units: Units) -> TapNorms:
        g = grads[0]
        formed = {}
        if self.weight is not None:
            formed[id(self.weight)] = self._per_example(g * self.normalised, self.weight)
        if self.bias is not None:
            formed[id(self.bias)] = self._per_example(g, self.bias)
        formed = {key: units.sum_rows(value) for key, value in formed.items()}
        sq = sum(_row_sq_norms(value) for value in formed.values())
        return TapNorms(sq, {key: [value] for key, value in formed.items()})


class FormedTap(Tap):
    """Per-example gradients formed by the caller: ``{parameter: (n, *parameter shape)}``.

    For small parameters whose per-example gradient is cheap to write down (biases, the scale
    and shift of normalisation layers in :mod:`dpforge.privacy.ghost_penalty`). Each example
    is one unit (no microbatches).
    """

    def __init__(self, name: str, formed: dict[nn.Parameter, torch.Tensor]) -> None:
        super().__init__(name, [])
        self.formed = {p: g for p, g in formed.items() if p.requires_grad}

    def trainable(self) -> list[nn.Parameter]:
        return list(self.formed)

    @torch.no_grad()
    def unit_norms(self, grads: Sequence[torch.Tensor], units: Units) -> TapNorms:
        if units.ids is not None:
            raise ValueError("FormedTap holds per-example gradients, not microbatches")
        values = list(self.formed.values())
        sq = _row_sq_norms(values[0])
        for value in values[1:]:
            sq = sq.add_(_row_sq_norms(value))
        return TapNorms(sq, {id(p): [g] for p, g in self.formed.items()})
