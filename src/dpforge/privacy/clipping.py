"""Fast per-example gradient clipping ("ghost norm" clipping) for MLP and convolutional critics.

DP-SGD needs, at every step, the SUM over examples of each example's gradient clipped to norm C
(design.md section 2, rule 4). Materialising n per-example gradients with autograd costs n
times the memory of the model and is ~100x slower than a plain backward. For the layers of
:mod:`dpforge.privacy.ghost_layers` neither is needed: every parameter's per-example gradient
is a small function of the layer's input and of the gradient of the loss with respect to the
layer's output. This module is the engine around them:

1. validate the ``nn.Sequential`` (below: anything the formulas do not cover is rejected);
2. run it layer by layer, each supported layer through its handler, which records a *tap*
   (its input, and its output kept in the autograd graph);
3. ONE backward of the summed loss to the tapped outputs (no parameter gradients): because loss
   ``i`` depends on example ``i`` only, row ``i`` of that gradient is ``dL_i/dz_i``;
4. each tap's squared per-example norms (summed over layers) give the clip factors
   ``c_i = min(1, C / norm_i)``;
5. each tap's weighted sum ``sum_i c_i grad_i``: one matrix product (or convolution weight
   gradient) per layer, or a product with per-example gradients already formed in step 4.

Microbatches (DP-CGAN's ``m < B``) clip the MEAN gradient of each group of examples; a group is
a unit whose gradient is the per-example formula applied to its members' stacked positions.

Privacy-relevant restrictions, all checked (a silent mistake would under-count the norm):

* every parameter belongs to a supported layer (``nn.Linear``, ``nn.Conv1d``/``nn.Conv2d`` with
  ``groups=1`` and zeros padding, ``nn.GroupNorm``, ``nn.LayerNorm``, ``DPLSTM``; nested
  ``nn.Sequential`` containers are flattened); a child with parameters of any other type is
  rejected, and so is a parameter registered on the container itself;
* no parameter is shared between layers and no layer is used twice (the per-example gradient
  would then have cross terms the formulas miss);
* BatchNorm layers (even without parameters) and parameter-free layers with buffers are rejected:
  batch statistics mix examples, so one example's gradient would depend on the others;
* supported layers with parametrizations (``torch.nn.utils.parametrize``), hooks or an
  overridden ``forward``, and Sequential subclasses with their own ``forward``, are rejected:
  the function trained would not be the one the formulas assume. (Supported layers are
  evaluated functionally, ``F.linear``, ``F.conv2d``, ..., so the returned norms and gradients
  always belong to the same computation.)

What cannot be checked and is the caller's responsibility: parameter-free layers must act on each
example separately (all of torch's activations, ``Dropout``, ``Flatten``, ``Identity`` do), and
``per_example_loss`` must return losses where loss ``i`` depends on output row ``i`` only.

Parameters with ``requires_grad=False`` are not trained: they add nothing to the norms and their
entry in :attr:`ClippedGradients.grads` is a zero tensor (data-independent, so nothing leaks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from dpforge.errors import PrivacyError
from dpforge.privacy.ghost_handlers import SUPPORTED, LayerHandler, check_plain_module, handler_for
from dpforge.privacy.ghost_tap import Tap, TapNorms, UnsupportedLayerError
from dpforge.privacy.units import Units

__all__ = [
    "ClippedGradients",
    "UnsupportedLayerError",
    "clip_factors",
    "checked_clip_norm",
    "clipped_gradient_sum",
    "per_example_gradient_norms",
    "validated_layers",
]

# Added to the norm before dividing: keeps C / norm finite for a zero gradient and makes the
# clipped norm c * norm = C * norm / (norm + eps) strictly below C.
_NORM_EPS = 1e-12
# Relative margin of the clip factors, in units of the gradients' machine epsilon: a norm
# computed in float32 and a factor rounded back to float32 can each be off by a few units in the
# last place, which let clipped norms reach 1.0000002 C. Factors are computed in float64 and aim
# at C (1 - 16 eps) (float32: 1.9e-6 below C; float64: 3.6e-15), so that the clipped gradient,
# as stored, has norm <= C. Clipping a little below C only lowers the sensitivity: the noise std
# stays sigma C and the accounting is unchanged.
CLIP_MARGIN_ULPS = 16

PerExampleLoss = Callable[[torch.Tensor], torch.Tensor]
_Layer = tuple[str, nn.Module, LayerHandler | None]


@dataclass(frozen=True)
class ClippedGradients:
    """Result of :func:`clipped_gradient_sum`.

    Attributes:
        grads: one tensor per model parameter, in ``model.parameters()`` order: the SUM over
            examples (or groups) of the clipped gradients. No noise, no averaging. Zeros for
            parameters with ``requires_grad=False``.
        norms: unclipped gradient norm of each example (``groups is None``, shape ``(n,)``) or of
            each group's mean gradient (shape ``(n_groups,)``; 0 for an empty group).
        losses: the per-example losses, detached, shape ``(n,)``.
    """

    grads: list[torch.Tensor]
    norms: torch.Tensor
    losses: torch.Tensor


# ---------------------------------------------------------------------------------- validation


def _leaf_modules(module: nn.Module, prefix: str) -> Iterator[tuple[str, nn.Module]]:
    """Yield ``(name, module)`` for the children of ``module``, flattening nested Sequentials."""
    # Not named_children(): it skips a module's second occurrence, which Sequential still runs.
    if type(module).forward is not nn.Sequential.forward:
        raise UnsupportedLayerError(
            f"{type(module).__name__} overrides nn.Sequential.forward; ghost-norm clipping runs "
            "the children in order and needs a plain nn.Sequential"
        )
    for name, child in module._modules.items():
        path = f"{prefix}{name}"
        if isinstance(child, nn.Sequential):
            yield from _leaf_modules(child, f"{path}.")
        else:
            yield path, child


def _check_parameter_free(name: str, layer: nn.Module) -> None:
    """Reject unsupported layers that have parameters or that may mix examples of a batch."""
    if isinstance(layer, nn.modules.batchnorm._BatchNorm) or any(True for _ in layer.buffers()):
        raise UnsupportedLayerError(
            f"layer {name!r} ({type(layer).__name__}) uses batch statistics or buffers; "
            "BatchNorm mixes examples and breaks per-example privacy (use GroupNorm or "
            "LayerNorm, or remove the layer)"
        )
    if any(True for _ in layer.parameters()):
        raise UnsupportedLayerError(
            f"layer {name!r} ({type(layer).__name__}) has parameters but is not a layer type "
            f"ghost-norm clipping supports ({SUPPORTED}); use those, or a per-example clipping "
            "that supports this layer"
        )


def validated_layers(model: nn.Sequential) -> list[_Layer]:
    """Flatten ``model`` into ``(name, layer, handler)`` triples after checking it is supported.

    Raises:
        UnsupportedLayerError: for a layer this module cannot clip exactly, for a parameter not
            owned by a supported child, or for a parameter or layer used twice.
    """
    if not isinstance(model, nn.Sequential):
        raise UnsupportedLayerError(
            f"ghost-norm clipping needs an nn.Sequential, got {type(model).__name__}"
        )
    layers: list[_Layer] = []
    seen: set[int] = set()
    covered: dict[int, str] = {}
    for name, layer in _leaf_modules(model, ""):
        handler = handler_for(layer)
        layers.append((name, layer, handler))
        if handler is None:
            _check_parameter_free(name, layer)
            continue
        check_plain_module(name, layer, handler)
        handler.check(name, layer)
        if id(layer) in seen:
            raise UnsupportedLayerError(
                f"layer {name!r} is used more than once in the network; shared layers are not "
                "supported"
            )
        seen.add(id(layer))
        for pname, param in layer.named_parameters():
            if id(param) in covered:
                raise UnsupportedLayerError(
                    f"parameter {name}.{pname} is shared with {covered[id(param)]}; shared "
                    "parameters are not supported"
                )
            covered[id(param)] = f"{name}.{pname}"
    missing = [n for n, p in model.named_parameters() if id(p) not in covered]
    if missing:
        raise UnsupportedLayerError(
            f"parameters {missing} do not belong to any supported layer of the Sequential "
            f"({SUPPORTED}); per-example clipping would not see them"
        )
    return layers


# ------------------------------------------------------------------------ forward and backward


def _forward_with_taps(
    layers: list[_Layer], inputs: torch.Tensor
) -> tuple[torch.Tensor, list[Tap]]:
    """Run the layers one by one, supported layers through their handlers.

    Taps of layers whose parameters are all frozen are dropped: they contribute nothing to the
    norms (gradients still flow through them to the layers before).
    """
    hidden = inputs
    taps: list[Tap] = []
    for name, layer, handler in layers:
        if handler is None:
            hidden = layer(hidden)
        else:
            hidden, layer_taps = handler.run(name, layer, hidden)
            taps += [tap for tap in layer_taps if tap.trainable()]
    return hidden, taps


def _per_example_losses(
    outputs: torch.Tensor, per_example_loss: PerExampleLoss, n: int
) -> torch.Tensor:
    """Apply the loss and check that it returns one loss per example."""
    losses = per_example_loss(outputs)
    if not isinstance(losses, torch.Tensor) or losses.shape != (n,):
        shape = tuple(losses.shape) if isinstance(losses, torch.Tensor) else type(losses).__name__
        raise ValueError(
            f"per_example_loss must return a tensor of shape ({n},), one loss per example, got "
            f"{shape}; use reduction='none' in torch losses"
        )
    return losses


def _output_gradients(losses: torch.Tensor, taps: list[Tap]) -> list[list[torch.Tensor]]:
    """Gradients of the summed loss w.r.t. every tap's outputs, by ONE backward pass.

    Because loss ``i`` depends on row ``i`` only, row ``i`` of ``dsum(L)/dz`` is ``dL_i/dz_i``.
    The backward computes no parameter gradients: only the graph down to the tapped outputs.
    """
    if not taps:
        return []
    flat = torch.autograd.grad(
        losses.sum(),
        [output for tap in taps for output in tap.outputs],
        allow_unused=True,
        materialize_grads=True,
    )
    grads, start = [], 0
    for tap in taps:
        grads.append(list(flat[start : start + len(tap.outputs)]))
        start += len(tap.outputs)
    return grads


@dataclass(frozen=True)
class _Backward:
    """Everything the one backward pass yields."""

    taps: list[Tap]
    grads: list[list[torch.Tensor]]  # per tap, the gradients of its outputs
    losses: torch.Tensor


def _ghost_backward(
    model: nn.Sequential, inputs: torch.Tensor, per_example_loss: PerExampleLoss
) -> _Backward:
    """Validate, run the forward with taps and one backward to the tapped outputs."""
    layers = validated_layers(model)
    if inputs.dim() < 1 or inputs.shape[0] < 1:
        raise ValueError(f"inputs must hold at least one example, got shape {tuple(inputs.shape)}")
    with torch.enable_grad():  # the caller may hold torch.no_grad(); we need a graph
        outputs, taps = _forward_with_taps(layers, inputs)
        losses = _per_example_losses(outputs, per_example_loss, inputs.shape[0])
        if taps and not losses.requires_grad:
            raise ValueError(
                "the per-example losses do not depend on the model's parameters (did "
                "per_example_loss detach the outputs?)"
            )
        return _Backward(taps, _output_gradients(losses, taps), losses)


# ------------------------------------------------------------------------ norms and clipped sums


def _unit_norms(backward: _Backward, units: Units) -> tuple[torch.Tensor, list[TapNorms]]:
    """Norm of each unit's (summed) gradient over all trainable parameters, and each tap's part."""
    per_tap = [
        tap.unit_norms(g, units) for tap, g in zip(backward.taps, backward.grads, strict=True)
    ]
    if not per_tap:
        return backward.losses.new_zeros(units.count).detach(), per_tap
    # Summed in float64: the per-layer parts are exact enough; their sum must not round down.
    total = per_tap[0].sq.double()
    for part in per_tap[1:]:
        total = total + part.sq.double()
    return total.sqrt().to(per_tap[0].sq.dtype), per_tap


def clip_factors(norms: torch.Tensor, clip_norm: float) -> torch.Tensor:
    """Factors ``c = min(1, C (1 - 16 eps) / (norm + 1e-12))`` that bring each norm below C.

    ``eps`` is the machine epsilon of ``norms``' dtype. Computed in float64 and returned in
    ``norms``' dtype: ``c * g`` has norm <= C even after round-off of the norm, of the factor
    and of the product (see ``CLIP_MARGIN_ULPS``); the small constant handles zero norms.
    ``clip_norm = math.inf`` gives factors of exactly 1.
    """
    if math.isinf(clip_norm):
        return torch.ones_like(norms)
    target = clip_norm * (1.0 - CLIP_MARGIN_ULPS * torch.finfo(norms.dtype).eps)
    factors = torch.clamp(target / (norms.double() + _NORM_EPS), max=1.0)
    return factors.to(norms.dtype)


def checked_clip_norm(clip_norm: float) -> float:
    """Return ``clip_norm`` as a float, rejecting anything but a positive number or ``inf``."""
    try:
        value = float(clip_norm)
    except (TypeError, ValueError):
        value = math.nan
    if math.isnan(value) or value <= 0:
        raise PrivacyError(
            f"clip_norm must be a positive number (math.inf for no clipping), got {clip_norm!r}"
        )
    return value


@torch.no_grad()
def _weighted_sums(
    model: nn.Module,
    backward: _Backward,
    tap_norms: list[TapNorms],
    units: Units,
    unit_weights: torch.Tensor,
) -> list[torch.Tensor]:
    """``sum_units w_u * grad_u`` for every parameter, in ``model.parameters()`` order."""
    example_weights = unit_weights if units.ids is None else unit_weights[units.ids]
    sums: dict[int, torch.Tensor] = {}
    for tap, grads, norms in zip(backward.taps, backward.grads, tap_norms, strict=True):
        sums.update(tap.weighted_sums(grads, norms, example_weights, unit_weights))
    return [
        sums[id(p)] if id(p) in sums else torch.zeros_like(p, memory_format=torch.preserve_format)
        for p in model.parameters()
    ]


def per_example_gradient_norms(
    model: nn.Sequential, inputs: torch.Tensor, per_example_loss: PerExampleLoss
) -> torch.Tensor:
    """Norm of each example's gradient of its loss over the model's trainable parameters.

    Args:
        model: an ``nn.Sequential`` of supported layers (see the module docstring) and
            parameter-free per-example layers.
        inputs: a batch of ``n >= 1`` examples, first dimension the batch.
        per_example_loss: maps the model's output to a tensor of ``n`` losses.

    Returns:
        A detached tensor of shape ``(n,)``.
    """
    backward = _ghost_backward(model, inputs, per_example_loss)
    norms, _ = _unit_norms(backward, Units(backward.losses.shape[0]))
    return norms.detach()


def clipped_gradient_sum(
    model: nn.Sequential,
    inputs: torch.Tensor,
    per_example_loss: PerExampleLoss,
    clip_norm: float,
    groups: torch.Tensor | None = None,
    *,
    num_groups: int | None = None,
    group_mean: bool = True,
) -> ClippedGradients:
    """Sum over examples (or microbatches) of gradients each clipped to norm ``clip_norm``.

    This is the sensitivity-bounded quantity of DP-SGD: adding or removing one example changes
    it by at most ``clip_norm`` (per-example clipping) or ``clip_norm`` per group it belongs to.
    Noise and division by the expected batch size are the caller's job. Parameter ``.grad``
    fields are neither read nor written.

    Args:
        model: an ``nn.Sequential`` of supported layers (``nn.Linear``, ``nn.Conv1d``,
            ``nn.Conv2d``, ``nn.GroupNorm``, ``nn.LayerNorm``, ``DPLSTM``) and parameter-free
            per-example layers (nested Sequentials are flattened); anything else raises.
        inputs: a batch of ``n >= 1`` examples, first dimension the batch.
        per_example_loss: maps the model's output ``(n, k)`` to ``n`` losses, loss ``i``
            depending on row ``i`` only (e.g. a torch loss with ``reduction='none'``).
        clip_norm: the clipping norm C > 0; ``math.inf`` disables clipping exactly.
        groups: optional ``(n,)`` integer tensor of microbatch ids ``0..G-1``. When given, the
            MEAN gradient of each microbatch is clipped to C and the clipped means are summed.
        num_groups: the number of microbatches G (default ``groups.max() + 1``); groups without
            examples contribute nothing and get norm 0.
        group_mean: with ``groups``, clip each group's MEAN gradient (microbatches, the default)
            or, False, each group's SUMMED gradient: one person's rows under a privacy unit
            (user-level DP-SGD), so that removing a whole group moves the sum by at most C.

    Returns:
        :class:`ClippedGradients` with the summed clipped gradients, the unclipped norms and the
        per-example losses.

    Raises:
        UnsupportedLayerError: the model has a layer or parameter this method cannot clip.
        PrivacyError: ``clip_norm`` is not positive.
        ValueError: malformed ``inputs``, ``groups`` or losses.
    """
    clip_norm = checked_clip_norm(clip_norm)
    backward = _ghost_backward(model, inputs, per_example_loss)
    n, losses = backward.losses.shape[0], backward.losses
    if groups is None:
        units = Units(n)
        norms, tap_norms = _unit_norms(backward, units)
        weights = clip_factors(norms, clip_norm)
    else:
        units = Units.of_groups(groups.to(losses.device), n, num_groups)
        summed_norms, tap_norms = _unit_norms(backward, units)
        # Clip the MEAN gradient of each group: norm / k, and each member's weight is c_b / k_b.
        # An empty group has no members, norm 0 and contributes nothing.
        sizes = units.sizes.clamp(min=1).to(losses.dtype)
        if not group_mean:  # a person's summed gradient: each member weighs c_b
            sizes = torch.ones_like(sizes)
        norms = summed_norms / sizes
        weights = clip_factors(norms, clip_norm) / sizes
    grads = _weighted_sums(model, backward, tap_norms, units, weights)
    return ClippedGradients(grads=grads, norms=norms.detach(), losses=losses.detach())
