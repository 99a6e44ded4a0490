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
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import parametrize

from dpforge.errors import PrivacyError
from dpforge.nets.recurrent import DPLSTM
from dpforge.privacy.units import Units

__all__ = [
    "AffineTap",
    "ConvTap",
    "FormedTap",
    "LayerHandler",
    "LinearMapTap",
    "Tap",
    "TapNorms",
    "UnsupportedLayerError",
    "check_plain_module",
    "explicit_padding",
    "handler_for",
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


class ConvTap(LinearMapTap):
    """A Conv1d/Conv2d layer: the weight, flattened to (o x C k), applied at every output pixel.

    Weight gradients are formed by the convolution's own weight-gradient kernel run as a
    grouped convolution with one group per example (``groups = m``), and the clipped sum by the
    same kernel on the weighted output gradients: both faster than unfolding the input.
    """

    # The ghost formula first copies the input T-fold into patches, then runs small batched
    # matrix products: on CPU about half as fast per multiply-add as the convolution kernel.
    ghost_cost = 2.0
    # Examples per grouped weight-gradient call. Measured on the 2-core machine (1 and 2
    # threads): 16 keeps each call's output small enough for the allocator to recycle (fresh
    # pages cost more than the kernel at batch 128); 32 to 128 gain at most ~5% at batch 1200.
    form_units = 16

    def __init__(
        self,
        name: str,
        layer: nn.Conv1d | nn.Conv2d,
        output: torch.Tensor,
        source: torch.Tensor,
        *,
        with_bias: bool = True,
    ) -> None:
        bias = layer.bias if with_bias else None
        super().__init__(name, layer.weight, bias, [output], source)
        self.spatial = source.dim() - 2
        self.kernel, self.stride, self.dilation = layer.kernel_size, layer.stride, layer.dilation
        self.pads = explicit_padding(layer)
        self.symmetric = all(left == right for left, right in self.pads)
        self.positions = output[0, 0].numel()  # T, the output pixels

    def _padded(self, rows: torch.Tensor, always: bool = False) -> tuple[torch.Tensor, tuple]:
        """The input rows and the padding left to the convolution routine (everything is
        padded here when the padding is asymmetric, 'same' with an even kernel, or ``always``)."""
        if self.symmetric and not always:
            return rows, tuple(left for left, _ in self.pads)
        flat = [side for pair in reversed(self.pads) for side in pair]
        return (F.pad(rows, flat) if any(flat) else rows), (0,) * self.spatial

    def patches(self, rows: torch.Tensor) -> torch.Tensor:
        """(m, T, C k) input patches: strided windows of the padded rows, copied once."""
        x, _ = self._padded(rows, always=True)
        for i, (k, s, d) in enumerate(zip(self.kernel, self.stride, self.dilation, strict=True)):
            x = x.unfold(2 + i, d * (k - 1) + 1, s)  # appends the window as the last dimension
            x = x[..., ::d] if d > 1 else x
        # (m, C, *out, *kernel) -> (m, *out, C, *kernel): patches flattened as the weight is.
        n_sp = self.spatial
        x = x.permute(0, *range(2, 2 + n_sp), 1, *range(2 + n_sp, 2 + 2 * n_sp))
        return x.reshape(x.shape[0], -1, self.in_features)

    def position_grads(self, grads: Sequence[torch.Tensor]) -> torch.Tensor:
        return grads[0].flatten(2).mT

    def _formed_numbers(self, positions: int, o: int, d: int) -> int:
        return positions // self.positions * o * d  # inputs and gradients stay views

    def _form(
        self, g: torch.Tensor, grads: Sequence[torch.Tensor], units: Units, start: int, stop: int
    ) -> torch.Tensor:
        # (units, k, C, *in) and (units, k, o, *out) -> the k rows of a unit on the batch axis
        # and its channels in group u: the kernel then sums the unit's k rows itself.
        rows = units.gather(self.source, start, stop, zero_padding=False).transpose(0, 1)
        out_grads = units.gather(grads[0], start, stop).transpose(0, 1)
        (k, m, c), o = rows.shape[:3], out_grads.shape[2]
        x, padding = self._padded(rows.flatten(0, 1))
        per_unit = torch.ops.aten.convolution_backward(
            out_grads.reshape(k, m * o, *out_grads.shape[3:]),
            x.reshape(k, m * c, *x.shape[2:]),
            out_grads.new_empty(1).expand(m * o, c, *self.kernel),  # only its shape is read
            None,
            self.stride,
            padding,
            self.dilation,
            False,
            (0,) * self.spatial,
            m,
            (False, True, False),
        )[1]
        return per_unit.view(m, o, c * math.prod(self.kernel))

    def param_sum(
        self, param: nn.Parameter, grads: Sequence[torch.Tensor], weights: torch.Tensor
    ) -> torch.Tensor:
        g = grads[0] * weights.view(-1, *([1] * (grads[0].dim() - 1)))
        x, padding = self._padded(self.source)
        weight_grad = (
            torch.nn.grad.conv1d_weight if self.spatial == 1 else torch.nn.grad.conv2d_weight
        )
        return weight_grad(x, param.shape, g, self.stride, padding, self.dilation)


def explicit_padding(layer: nn.Conv1d | nn.Conv2d) -> tuple[tuple[int, int], ...]:
    """(left, right) zero padding of each spatial dimension, as torch applies it."""
    if layer.padding == "valid":
        return tuple((0, 0) for _ in layer.kernel_size)
    if layer.padding == "same":  # torch puts the odd extra pixel on the right
        totals = [d * (k - 1) for d, k in zip(layer.dilation, layer.kernel_size, strict=True)]
        return tuple((t // 2, t - t // 2) for t in totals)
    return tuple((p, p) for p in layer.padding)


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


# ------------------------------------------------------------------------------------ handlers

_Run = tuple[torch.Tensor, list[Tap]]  # a layer's output and its taps


@dataclass(frozen=True)
class LayerHandler:
    """How the engine runs one supported layer type with taps.

    ``run(name, layer, hidden)`` returns the layer's output and its taps; it must compute the
    same function as ``base.forward`` (which is why subclasses overriding ``methods`` are
    rejected). ``check(name, layer)`` rejects configurations the taps do not cover.
    """

    base: type[nn.Module]
    params: tuple[str, ...]
    methods: tuple[str, ...]
    check: Callable[[str, nn.Module], None]
    run: Callable[[str, nn.Module, torch.Tensor], _Run]


def check_plain_module(name: str, layer: nn.Module, handler: LayerHandler) -> None:
    """Reject modules whose trainable tensors or forward are not those the handler assumes."""
    kind = type(layer).__name__
    if any(nn.parameter.is_lazy(p) for p in layer.parameters()):
        raise UnsupportedLayerError(
            f"layer {name!r} is an uninitialised lazy layer; run one forward pass first"
        )
    if parametrize.is_parametrized(layer):
        raise UnsupportedLayerError(
            f"layer {name!r} ({kind}) has a parametrization (e.g. spectral or weight norm); "
            "per-example gradient norms of parametrized weights are not supported"
        )
    extra = [n for n, _ in layer.named_parameters() if n not in handler.params]
    if extra:
        raise UnsupportedLayerError(
            f"layer {name!r} ({kind}) has parameters {extra} besides {list(handler.params)}; "
            "per-example clipping would not see them"
        )
    base = handler.base.__name__
    for method in handler.methods:
        if getattr(type(layer), method) is not getattr(handler.base, method):
            raise UnsupportedLayerError(
                f"layer {name!r} ({kind}) overrides {base}.{method}; ghost-norm clipping "
                f"needs the plain {base} computation"
            )
    hooks = (layer._forward_hooks, layer._forward_pre_hooks, layer._backward_hooks)
    if any(hooks) or layer._backward_pre_hooks:
        raise UnsupportedLayerError(
            f"layer {name!r} ({kind}) has forward or backward hooks; ghost-norm clipping "
            f"needs the plain {base} computation"
        )


def _no_check(name: str, layer: nn.Module) -> None:
    """Every configuration of the layer type is supported."""


def _check_input(name: str, layer: nn.Module, hidden: torch.Tensor, ok: bool, what: str) -> None:
    """Reject inputs without the batch dimension the per-example formulas assume."""
    if not ok:
        raise UnsupportedLayerError(
            f"layer {name!r} received an input of shape {tuple(hidden.shape)}; ghost-norm "
            f"clipping supports {type(layer).__name__} layers on {what} inputs only"
        )


def _run_linear(name: str, layer: nn.Linear, hidden: torch.Tensor) -> _Run:
    """``F.linear`` on a (batch, features) input: one position per example."""
    _check_input(name, layer, hidden, hidden.dim() == 2, "(batch, features)")
    # F.linear, not layer(): the norm formula is exact for this very computation.
    output = F.linear(hidden, layer.weight, layer.bias)
    source = hidden.detach().unsqueeze(1)  # one position
    return output, [LinearMapTap(name, layer.weight, layer.bias, [output], source)]


def _check_conv(name: str, layer: nn.Conv1d | nn.Conv2d) -> None:
    """Grouped convolutions and non-zero padding modes change the patch structure: reject."""
    if layer.groups != 1:
        raise UnsupportedLayerError(
            f"layer {name!r} ({type(layer).__name__}) has groups={layer.groups}; ghost-norm "
            "clipping supports convolutions with groups=1 only"
        )
    if layer.padding_mode != "zeros":
        raise UnsupportedLayerError(
            f"layer {name!r} ({type(layer).__name__}) has padding_mode={layer.padding_mode!r}; "
            "ghost-norm clipping supports padding_mode='zeros' only"
        )


def _run_conv(name: str, layer: nn.Conv1d | nn.Conv2d, hidden: torch.Tensor) -> _Run:
    """``F.conv1d``/``F.conv2d`` with the layer's geometry; the input is kept for the tap."""
    spatial = len(layer.kernel_size)
    _check_input(name, layer, hidden, hidden.dim() == spatial + 2, "(batch, channels, *spatial)")
    conv = F.conv1d if spatial == 1 else F.conv2d
    output = conv(hidden, layer.weight, layer.bias, layer.stride, layer.padding, layer.dilation)
    return output, [ConvTap(name, layer, output, hidden.detach())]


def _affine(
    name: str, layer: nn.Module, normalised: torch.Tensor, broadcast: tuple[int, ...]
) -> _Run:
    """Apply the layer's scale and shift to ``normalised`` and tap the result."""
    output = normalised
    if layer.weight is not None:
        output = output * layer.weight.view(broadcast)
    if layer.bias is not None:
        output = output + layer.bias.view(broadcast)
    tap = AffineTap(name, layer.weight, layer.bias, output, normalised.detach(), broadcast)
    return output, [tap]


def _run_group_norm(name: str, layer: nn.GroupNorm, hidden: torch.Tensor) -> _Run:
    """Per-example group statistics without affine, then the scale and shift, tapped."""
    _check_input(name, layer, hidden, hidden.dim() >= 2, "(batch, channels, *spatial)")
    normalised = F.group_norm(hidden, layer.num_groups, None, None, layer.eps)
    broadcast = (1, layer.num_channels) + (1,) * (hidden.dim() - 2)
    return _affine(name, layer, normalised, broadcast)


def _run_layer_norm(name: str, layer: nn.LayerNorm, hidden: torch.Tensor) -> _Run:
    """Per-example statistics over ``normalized_shape``, then the scale and shift, tapped."""
    shape = tuple(layer.normalized_shape)
    # Without a batch dimension outside normalized_shape, statistics would mix examples.
    _check_input(name, layer, hidden, hidden.dim() > len(shape), f"(batch, ..., *{shape})")
    normalised = F.layer_norm(hidden, shape, None, None, layer.eps)
    broadcast = (1,) * (hidden.dim() - len(shape)) + shape
    return _affine(name, layer, normalised, broadcast)


def _check_dplstm(name: str, layer: DPLSTM) -> None:
    """The recurrence applies ``ih`` and ``hh`` as plain Linear maps: check they are."""
    for child_name, child in layer.named_children():
        if type(child) is not nn.Linear:
            raise UnsupportedLayerError(
                f"layer {name!r}: DPLSTM child {child_name!r} must be a plain nn.Linear, got "
                f"{type(child).__name__}"
            )
        check_plain_module(f"{name}.{child_name}", child, HANDLERS[0])


def _run_dplstm(name: str, layer: DPLSTM, hidden: torch.Tensor) -> _Run:
    """Run the recurrence with every application of ``ih`` and ``hh`` recorded."""
    _check_input(name, layer, hidden, hidden.dim() == 3, "(batch, channels, length)")
    calls: dict[str, tuple[list[torch.Tensor], list[torch.Tensor]]] = {
        "ih": ([], []),
        "hh": ([], []),
    }
    maps = {id(layer.ih): "ih", id(layer.hh): "hh"}

    def apply(linear: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        output = F.linear(x, linear.weight, linear.bias)
        inputs, outputs = calls[maps[id(linear)]]
        inputs.append(x.detach().reshape(x.shape[0], -1, x.shape[-1]))
        outputs.append(output)
        return output

    output = layer.recurrence(hidden, apply)
    taps: list[Tap] = []
    for key, (inputs, outputs) in calls.items():
        linear = getattr(layer, key)
        if any(p.requires_grad for p in linear.parameters()):
            source = inputs[0] if len(inputs) == 1 else torch.cat(inputs, dim=1)
            taps.append(LinearMapTap(f"{name}.{key}", linear.weight, linear.bias, outputs, source))
    return output, taps


_CONV_METHODS = ("forward", "_conv_forward")
HANDLERS = (
    LayerHandler(nn.Linear, ("weight", "bias"), ("forward",), _no_check, _run_linear),
    LayerHandler(nn.Conv1d, ("weight", "bias"), _CONV_METHODS, _check_conv, _run_conv),
    LayerHandler(nn.Conv2d, ("weight", "bias"), _CONV_METHODS, _check_conv, _run_conv),
    LayerHandler(nn.GroupNorm, ("weight", "bias"), ("forward",), _no_check, _run_group_norm),
    LayerHandler(nn.LayerNorm, ("weight", "bias"), ("forward",), _no_check, _run_layer_norm),
    LayerHandler(
        DPLSTM,
        ("ih.weight", "ih.bias", "hh.weight", "hh.bias"),
        ("forward", "recurrence"),
        _check_dplstm,
        _run_dplstm,
    ),
)
SUPPORTED = ", ".join(h.base.__name__ for h in HANDLERS)


def handler_for(layer: nn.Module) -> LayerHandler | None:
    """The handler of ``layer``'s type (subclasses included), or None for other layers."""
    for handler in HANDLERS:
        if isinstance(layer, handler.base):
            return handler
    return None
