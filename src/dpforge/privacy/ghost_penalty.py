"""Per-example clipped gradients of a loss WITH a gradient penalty, without per-example autograd.

DP-WGAN-GP (:mod:`dpforge.methods.dpwgan`) clips, per record ``i``, the gradient of

    l_i = s(D(x_i)) + p(grad_x D(x_hat_i)),

a score term on the record and a penalty on the critic's slope at an interpolate. The slope is
itself a backward pass, so ``l_i`` involves second derivatives; :mod:`dpforge.privacy.per_example`
computes every example's gradient with ``torch.func`` (exact, but ~20x a plain step). This module
computes the same clipped sum with the ghost-clipping engine, exactly, by one observation:

Every supported layer applies its weight ``W`` through an operation ``B(a, W)`` that is linear in
the input ``a`` and in ``W`` (``F.linear`` without bias, a convolution, the scale of a
normalisation). The slope's backward pass applies ``W`` a second time, through the transpose:
``h = B_a^T(g, W)`` maps the output gradient ``g`` to the input gradient ``h``. Since
``<dh, B_a^T(g, W)> = <B(dh, W), g>``, the gradient of that use with respect to ``W`` is the
forward use's weight-gradient formula with input ``dh = dL/dh`` and output gradient ``g``. So each
example's weight gradient is a sum of forward-style terms over "rows":

* the score pass at ``x_i``:        input ``a_i``,     output gradient ``dL/dz_i``;
* the penalty's forward at ``x_hat_i``: input ``a_hat_i``, output gradient ``dL/dz_hat_i`` (the
  path through the activations' derivatives; zero for piecewise-linear activations, and then
  skipped);
* the penalty's backward:           input ``dL/dh_i``, output gradient ``g_i``.

These rows are a unit of the existing engine (like a microbatch): norms by the ghost formula or
by formed per-unit gradients (:class:`~dpforge.privacy.ghost_layers.LinearMapTap`,
:class:`~dpforge.privacy.ghost_conv.ConvTap`), biases and normalisation parameters formed
directly (:class:`~dpforge.privacy.ghost_layers.FormedTap`). The walk below writes the slope's
backward pass layer by layer so that every use of every weight is a tensor it can tap; one
autograd pass of the summed losses to those tensors (no parameter gradients) gives the rest.

Supported: ``nn.Sequential`` critics of ``nn.Linear``, ``nn.Conv1d``/``nn.Conv2d`` (groups=1,
zeros padding), ``nn.GroupNorm``, ``nn.LayerNorm`` and parameter-free per-example layers, as
validated by :mod:`dpforge.privacy.clipping`. ``DPLSTM`` raises
:class:`~dpforge.privacy.clipping.UnsupportedLayerError` (use the torch.func path).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from dpforge.privacy.clipping import (
    ClippedGradients,
    UnsupportedLayerError,
    checked_clip_norm,
    clip_factors,
    validated_layers,
)
from dpforge.privacy.ghost_conv import ConvTap, explicit_padding
from dpforge.privacy.ghost_layers import LinearMapTap
from dpforge.privacy.ghost_tap import FormedTap, Tap
from dpforge.privacy.units import Units

__all__ = ["clipped_gradient_sum_with_penalty", "supports_penalty"]

PerExampleLoss = Callable[[torch.Tensor], torch.Tensor]

_NORMS = (nn.GroupNorm, nn.LayerNorm)
_MAPS = (nn.Linear, nn.Conv1d, nn.Conv2d)


def supports_penalty(model: nn.Module) -> bool:
    """Whether :func:`clipped_gradient_sum_with_penalty` handles ``model`` (else torch.func)."""
    try:
        _penalty_layers(model)
    except UnsupportedLayerError:
        return False
    return True


def _penalty_layers(model: nn.Module) -> list:
    """The validated layers of ``model``; layer types without a written transpose raise."""
    layers = validated_layers(model)
    for name, layer, handler in layers:
        if handler is not None and not isinstance(layer, _MAPS + _NORMS):
            raise UnsupportedLayerError(
                f"layer {name!r} ({type(layer).__name__}): the gradient-penalty ghost path "
                "supports Linear, Conv1d, Conv2d, GroupNorm and LayerNorm; use torch.func"
            )
    return layers


# ------------------------------------------------------------------------------ the forward walk


@dataclass
class _Run:
    """One parametric layer applied in one pass: in-graph input and output (``z``)."""

    name: str
    layer: nn.Module
    inputs: torch.Tensor
    output: torch.Tensor
    normalised: torch.Tensor | None = None  # GroupNorm / LayerNorm: the input normalised


def _norm_shape(layer: nn.Module, hidden: torch.Tensor) -> tuple[int, ...]:
    """How a normalisation layer's parameters broadcast over ``hidden``."""
    if isinstance(layer, nn.GroupNorm):
        return (1, layer.num_channels) + (1,) * (hidden.dim() - 2)
    shape = tuple(layer.normalized_shape)
    return (1,) * (hidden.dim() - len(shape)) + shape


def _forward_layer(name: str, layer: nn.Module, hidden: torch.Tensor) -> _Run:
    """Apply a supported layer functionally, as its own ``forward`` would."""
    if isinstance(layer, nn.Linear):
        return _Run(name, layer, hidden, F.linear(hidden, layer.weight, layer.bias))
    if isinstance(layer, (nn.Conv1d, nn.Conv2d)):
        conv = F.conv1d if isinstance(layer, nn.Conv1d) else F.conv2d
        output = conv(hidden, layer.weight, layer.bias, layer.stride, layer.padding, layer.dilation)
        return _Run(name, layer, hidden, output)
    if isinstance(layer, nn.GroupNorm):
        normalised = F.group_norm(hidden, layer.num_groups, None, None, layer.eps)
    else:
        normalised = F.layer_norm(hidden, tuple(layer.normalized_shape), None, None, layer.eps)
    shape = _norm_shape(layer, hidden)
    output = normalised
    if layer.weight is not None:
        output = output * layer.weight.view(shape)
    if layer.bias is not None:
        output = output + layer.bias.view(shape)
    return _Run(name, layer, hidden, output, normalised)


# (name, layer, input, output or _Run) of every layer of the penalty's forward pass
_Trace = list[tuple[str, nn.Module, torch.Tensor, "torch.Tensor | _Run"]]


def _forward(
    layers: list, inputs: torch.Tensor, trace: _Trace | None
) -> tuple[torch.Tensor, list[_Run]]:
    """Run the critic; ``trace`` (when given) receives every layer's input and output (a
    :class:`_Run` for parametric layers), for the backward walk."""
    hidden, runs = inputs, []
    for name, layer, handler in layers:
        if handler is None:
            output = layer(hidden)
            if trace is not None:
                trace.append((name, layer, hidden, output))
            hidden = output
            continue
        run = _forward_layer(name, layer, hidden)
        runs.append(run)
        if trace is not None:
            trace.append((name, layer, hidden, run))
        hidden = run.output
    return hidden, runs


# ----------------------------------------------------------------------------- the backward walk


def _conv_transpose(layer: nn.Conv1d | nn.Conv2d, g: torch.Tensor, like: torch.Tensor):
    """Input gradient of the convolution for output gradient ``g`` (weight held fixed)."""
    pads = explicit_padding(layer)
    transpose = F.conv_transpose1d if isinstance(layer, nn.Conv1d) else F.conv_transpose2d
    full = transpose(g, layer.weight.detach(), None, layer.stride, 0, 0, 1, layer.dilation)
    # ``full`` covers the padded input from its start; positions no window reached get zero.
    for axis, (left, _) in enumerate(pads, start=2):
        padded = like.shape[axis] + sum(pads[axis - 2])
        if full.shape[axis] < padded:
            grow = [0, 0] * (full.dim() - 2)
            grow[2 * (full.dim() - 1 - axis) + 1] = padded - full.shape[axis]
            full = F.pad(full, grow)
        full = full.narrow(axis, left, like.shape[axis])
    return full


def _transpose(run: _Run, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(h, input gradient)``: ``h`` is the tensor through which the backward pass uses the
    layer's weight (its gradient is tapped); the input gradient flows on."""
    layer = run.layer
    if isinstance(layer, nn.Linear):
        h = g @ layer.weight.detach()
        return h, h
    if isinstance(layer, (nn.Conv1d, nn.Conv2d)):
        h = _conv_transpose(layer, g, run.inputs)
        return h, h
    h = g * layer.weight.detach().view(_norm_shape(layer, g)) if layer.weight is not None else g
    (grad_in,) = torch.autograd.grad(run.normalised, run.inputs, h, create_graph=True)
    return h, grad_in


def _backward(trace: _Trace, start: torch.Tensor) -> tuple[torch.Tensor, dict[int, tuple]]:
    """The critic's input gradient for output gradient ``start``, differentiable, and for each
    parametric layer ``(h, g)``: its weight's backward use and the output gradient it saw."""
    g, uses = start, {}
    for _name, layer, hidden, out in reversed(trace):
        if isinstance(out, _Run):
            h, grad_in = _transpose(out, g)
            uses[id(layer)] = (h, g)
            g = grad_in
        else:
            (g,) = torch.autograd.grad(out, hidden, g, create_graph=True)
    return g, uses


# ------------------------------------------------------------------------------------ taps


@dataclass(frozen=True)
class _Rows:
    """Forward-formula rows of one weight: inputs ``source`` and output gradients ``grads``,
    ``k`` rows per example (example ``i``'s rows are ``i, n + i, 2n + i, ...``)."""

    source: torch.Tensor
    grads: torch.Tensor
    units: Units


def _stack(pairs: list[tuple[torch.Tensor, torch.Tensor]], n: int) -> _Rows:
    """Stack (input, output gradient) pairs; pairs whose gradient is exactly zero add nothing
    and are dropped (the derivative paths of piecewise-linear activations)."""
    kept = [(s, g) for s, g in pairs if bool(g.any())] or pairs[:1]
    source = torch.cat([s for s, _ in kept]) if len(kept) > 1 else kept[0][0]
    grads = torch.cat([g for _, g in kept]) if len(kept) > 1 else kept[0][1]
    if len(kept) == 1:
        return _Rows(source, grads, Units(n))
    ids = torch.arange(n, device=grads.device).repeat(len(kept))
    return _Rows(source, grads, Units.of_groups(ids, len(kept) * n, n))


def _reduce_to(x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Sum (n, ...) over the dimensions a parameter of broadcast ``shape`` is broadcast on."""
    dims = tuple(d for d in range(1, x.dim()) if shape[d] == 1)
    summed = x.sum(dims) if dims else x
    return summed.reshape(x.shape[0], -1)


def _layer_taps(
    name: str,
    layer: nn.Module,
    forward: list[tuple[torch.Tensor, torch.Tensor]],
    backward: tuple[torch.Tensor, torch.Tensor],
    n: int,
) -> list[tuple[Tap, Units, list[torch.Tensor]]]:
    """Taps (with their units and output gradients) of one layer's weight and bias.

    ``forward``: (input or normalised input, dL/dz) per pass; ``backward``: (dL/dh, g).
    """
    taps = []
    bias = layer.bias if layer.bias is not None and layer.bias.requires_grad else None
    if isinstance(layer, _NORMS):
        shape = _norm_shape(layer, forward[0][1])
        formed = {}
        if layer.weight is not None:
            pairs = forward + [backward]
            formed[layer.weight] = sum(_reduce_to(s * g, shape) for s, g in pairs).view(
                n, *layer.weight.shape
            )
        if bias is not None:
            formed[bias] = sum(_reduce_to(g, shape) for _, g in forward).view(n, *bias.shape)
        return [(FormedTap(name, formed), Units(n), [])] if formed else []
    if bias is not None:
        per_example = sum(g.flatten(2).sum(2) if g.dim() > 2 else g for _, g in forward)
        taps.append((FormedTap(name, {bias: per_example}), Units(n), []))
    if layer.weight.requires_grad:
        rows = _stack(forward + [backward], n)
        if isinstance(layer, nn.Linear):
            tap = LinearMapTap(name, layer.weight, None, [], rows.source.unsqueeze(1))
        else:
            tap = ConvTap(name, layer, rows.grads, rows.source, with_bias=False)
        taps.append((tap, rows.units, [rows.grads]))
    return taps


# ------------------------------------------------------------------------------------ engine


def _checked_losses(losses: torch.Tensor, n: int, what: str) -> torch.Tensor:
    if not isinstance(losses, torch.Tensor) or losses.shape != (n,):
        shape = tuple(losses.shape) if isinstance(losses, torch.Tensor) else type(losses).__name__
        raise ValueError(
            f"{what} must return a tensor of shape ({n},), one per example, got {shape}"
        )
    return losses


@dataclass(frozen=True)
class _Passes:
    """The graph of one call: the taps' tensors and the per-example losses."""

    real: list[_Run]
    hat: list[_Run]
    uses: dict[int, tuple[torch.Tensor, torch.Tensor]]
    losses: torch.Tensor


def _passes(
    layers: list,
    inputs: torch.Tensor,
    per_example_loss: PerExampleLoss,
    penalty_records: torch.Tensor,
    join: Callable[[torch.Tensor], torch.Tensor],
    penalty: PerExampleLoss,
) -> _Passes:
    """Score pass, penalty forward, the slope's backward walk and the per-example losses."""
    n = inputs.shape[0]
    real_out, real_runs = _forward(layers, inputs, None)
    records = penalty_records.detach().requires_grad_(True)
    hat_in = join(records)
    trace: _Trace = []
    hat_out, hat_runs = _forward(layers, hat_in, trace)
    if hat_out.dim() != 2 or hat_out.shape[1] != 1:
        raise ValueError(f"the critic must return (n, 1) scores, got {tuple(hat_out.shape)}")
    # A leaf that requires grad, so that the last layer's backward use is in the graph too.
    start = torch.ones_like(hat_out).requires_grad_(True)
    grad_in, uses = _backward(trace, start)
    (slopes,) = torch.autograd.grad(hat_in, records, grad_in, create_graph=True)
    score = _checked_losses(per_example_loss(real_out), n, "per_example_loss")
    losses = score + _checked_losses(penalty(slopes), n, "penalty")
    return _Passes(real_runs, hat_runs, uses, losses)


def _trainable(layer: nn.Module) -> bool:
    return any(p.requires_grad for p in layer.parameters())


def _all_taps(passes: _Passes, n: int) -> list[tuple[Tap, Units, list[torch.Tensor]]]:
    """Every trainable layer's taps, after ONE autograd pass of the summed losses to the
    outputs ``z`` of both passes and to the backward uses ``h`` (no parameter gradients)."""
    pairs = [(r, h) for r, h in zip(passes.real, passes.hat, strict=True) if _trainable(r.layer)]
    if not pairs:
        return []
    tensors = [t for real, hat in pairs for t in (real.output, hat.output)]
    tensors += [passes.uses[id(real.layer)][0] for real, _ in pairs]
    grads = torch.autograd.grad(
        passes.losses.sum(), tensors, allow_unused=True, materialize_grads=True
    )
    taps = []
    for i, (real, hat) in enumerate(pairs):
        layer = real.layer
        norm = isinstance(layer, _NORMS)
        src_real = (real.normalised if norm else real.inputs).detach()
        src_hat = (hat.normalised if norm else hat.inputs).detach()
        forward = [(src_real, grads[2 * i]), (src_hat, grads[2 * i + 1])]
        backward = (grads[2 * len(pairs) + i], passes.uses[id(layer)][1].detach())
        taps += _layer_taps(real.name, layer, forward, backward, n)
    return taps


def _by_group(
    taps: list[tuple[Tap, Units, list[torch.Tensor]]], groups: torch.Tensor, count: int
) -> list[tuple[Tap, Units, list[torch.Tensor]]]:
    """The taps regrouped so that a unit is a group of examples (a person), not one example:
    a tap's rows are mapped to their example's group; formed per-example gradients are summed
    per group."""
    if groups.numel() and (int(groups.min()) < 0 or int(groups.max()) >= count):
        raise ValueError(f"group ids must lie in 0..{count - 1}")
    regrouped = []
    for tap, units, grads in taps:
        if isinstance(tap, FormedTap):
            summed = {
                p: g.new_zeros((count, *g.shape[1:])).index_add_(0, groups, g)
                for p, g in tap.formed.items()
            }
            regrouped.append((FormedTap(tap.name, summed), Units(count), grads))
        else:
            ids = groups if units.ids is None else groups[units.ids]
            regrouped.append((tap, Units.of_groups(ids, units.n, count), grads))
    return regrouped


def clipped_gradient_sum_with_penalty(
    model: nn.Sequential,
    inputs: torch.Tensor,
    per_example_loss: PerExampleLoss,
    penalty_records: torch.Tensor,
    join: Callable[[torch.Tensor], torch.Tensor],
    penalty: PerExampleLoss,
    clip_norm: float,
    groups: torch.Tensor | None = None,
    num_groups: int | None = None,
) -> ClippedGradients:
    """Sum over examples of the gradients of ``score_i + penalty_i``, each clipped to C.

    Example ``i``'s loss is ``per_example_loss(model(inputs))[i] + penalty(slopes)[i]`` with
    ``slopes[i]`` the gradient of ``model(join(penalty_records))[i, 0]`` with respect to
    ``penalty_records[i]``. Exact (the same quantity as
    :func:`dpforge.privacy.per_example.clipped_sum_of_example_gradients` on that loss), without
    per-example autograd; see the module docstring.

    Args:
        model: an ``nn.Sequential`` critic returning ``(n, 1)`` scores, of Linear, Conv1d,
            Conv2d, GroupNorm, LayerNorm and parameter-free per-example layers.
        inputs: ``(n, ...)`` critic inputs of the score term (the records, condition joined).
        per_example_loss: ``(n, 1)`` scores -> ``n`` losses, loss ``i`` from row ``i`` only.
        penalty_records: ``(n, ...)`` points (e.g. interpolates) where the slope is taken.
        join: maps ``(n, ...)`` records to critic inputs row by row (e.g. appends the label
            channels); the slope is taken with respect to the records, not what join adds.
        penalty: ``(n, ...)`` slopes -> ``n`` penalties, penalty ``i`` from row ``i`` only.
        clip_norm: C > 0; ``math.inf`` disables clipping.
        groups: optional ``(n,)`` int64 unit of each example, ``0..num_groups-1`` (a person's
            rows under a privacy unit): then each unit's SUMMED gradient is clipped to C, and
            ``norms`` has one entry per unit.
        num_groups: the number of units (default ``groups.max() + 1``).

    Returns:
        :class:`~dpforge.privacy.clipping.ClippedGradients` (losses: score plus penalty).

    Raises:
        UnsupportedLayerError: the critic has a layer this path cannot handle.
        PrivacyError: ``clip_norm`` is not positive.
        ValueError: malformed inputs, scores or losses.
    """
    clip_norm = checked_clip_norm(clip_norm)
    layers = _penalty_layers(model)
    n = inputs.shape[0]
    if n < 1 or penalty_records.shape[0] != n:
        raise ValueError(
            f"inputs and penalty_records must hold the same n >= 1 examples, got "
            f"{tuple(inputs.shape)} and {tuple(penalty_records.shape)}"
        )
    with torch.enable_grad():
        passes = _passes(layers, inputs, per_example_loss, penalty_records, join, penalty)
        taps = _all_taps(passes, n)
    count = n
    if groups is not None:
        if groups.shape != (n,) or groups.dtype != torch.int64:
            raise ValueError(f"groups must be an int64 tensor of shape ({n},), one per example")
        count = int(groups.max()) + 1 if num_groups is None else num_groups
        taps = _by_group(taps, groups.to(passes.losses.device), count)
    norms_by_tap = [tap.unit_norms(grads, units) for tap, units, grads in taps]
    total = passes.losses.new_zeros(count, dtype=torch.float64)
    for part in norms_by_tap:
        total = total + part.sq.double()
    norms = total.sqrt().to(passes.losses.dtype)
    weights = clip_factors(norms, clip_norm)
    sums: dict[int, torch.Tensor] = {}
    for (tap, units, grads), part in zip(taps, norms_by_tap, strict=True):
        example_weights = weights if units.ids is None else weights[units.ids]
        sums.update(tap.weighted_sums(grads, part, example_weights, weights))
    grads = [sums[id(p)] if id(p) in sums else torch.zeros_like(p) for p in model.parameters()]
    losses = passes.losses.detach()
    return ClippedGradients(grads=grads, norms=norms.detach(), losses=losses)
