"""Fast per-example gradient clipping for MLPs ("ghost norm" clipping).

DP-SGD needs, at every step, the SUM over examples of each example's gradient clipped to norm C
(design.md section 2, rule 4). Materialising n per-example gradients costs n times the memory of
the model and is ~100x slower than a plain backward. For a network made of ``nn.Linear`` layers
and parameter-free, row-wise layers, neither is needed:

* a Linear layer ``z = a W^T + b`` has per-example gradients ``dW_i = g_i a_i^T`` and
  ``db_i = g_i``, where ``a_i`` is the layer's input row and ``g_i = dL_i/dz_i``. Hence
  ``||dW_i||^2 + ||db_i||^2 = ||g_i||^2 (||a_i||^2 + 1)`` (the "ghost norm"): one backward to the
  layer outputs gives every per-example norm without forming a per-example gradient;
* the clipped sum is ``sum_i c_i dW_i = (c * g)^T a`` and ``sum_i c_i db_i = (c * g).sum(0)``:
  one matrix product per layer, no second backward.

Microbatches (DP-CGAN's ``m < B``) clip the MEAN gradient of each group of examples; the norm of a
group's summed gradient ``S_b = sum_{i in b} g_i a_i^T`` comes from forming ``S_b`` (one batched
matrix product, reused for the clipped sum) or, when the ``S_b`` would not fit in memory or cost
more, from Gram matrices, ``||S_b||^2 = sum_{i,j in b} (g_i . g_j)(a_i . a_j)``.

Privacy-relevant restrictions, all checked (a silent mistake would under-count the norm):

* every parameter of the model belongs to an ``nn.Linear`` child (nested ``nn.Sequential``
  containers are flattened); a child with parameters of any other type (BatchNorm, LayerNorm,
  Embedding, Conv, ...) is rejected, and so is a parameter registered on the container itself;
* no parameter is shared between two Linear layers and no Linear layer is used twice (the
  per-example gradient would then have cross terms the ghost norm misses);
* BatchNorm layers (even without parameters) and parameter-free layers with buffers are rejected:
  batch statistics mix examples, so one example's gradient would depend on the others;
* Linear layers with parametrizations (``torch.nn.utils.parametrize``), forward hooks or an
  overridden ``forward``, and Sequential subclasses with their own ``forward``, are rejected: the
  function trained would not be ``z = a W^T + b`` layer after layer, as the norm formula assumes.
  (Linear layers are evaluated with ``F.linear`` on the recorded input, so the returned norms and
  gradients always belong to the same computation.)

What cannot be checked and is the caller's responsibility: parameter-free layers must act on each
row separately (all of torch's activations, ``Dropout``, ``Flatten``, ``Identity`` do), and
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
from torch.nn import functional as F
from torch.nn.utils import parametrize

from dpsynth.errors import PrivacyError

__all__ = [
    "ClippedGradients",
    "UnsupportedLayerError",
    "clip_factors",
    "clipped_gradient_sum",
    "per_example_gradient_norms",
]

# Added to the norm before dividing: keeps C / norm finite for a zero gradient and makes the
# clipped norm c * norm = C * norm / (norm + eps) strictly below C.
_NORM_EPS = 1e-12

# Largest number of entries of per-group weight gradients (n_groups x out x in) that microbatch
# clipping forms explicitly (64 MB in float32); above it, the Gram trick is used.
_MAX_GROUP_SUM_NUMBERS = 2**24

PerExampleLoss = Callable[[torch.Tensor], torch.Tensor]


class UnsupportedLayerError(PrivacyError):
    """The network contains a layer whose per-example gradient norm this module cannot compute."""


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


@dataclass(frozen=True)
class _Tap:
    """What the forward pass keeps of one Linear layer with trainable parameters."""

    layer: nn.Linear
    name: str
    activation: torch.Tensor  # the layer's input a (n x d), detached
    output: torch.Tensor  # the layer's output z (n x o), still in the autograd graph


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


def _check_linear(name: str, layer: nn.Linear) -> None:
    """Reject Linear layers whose trainable tensors are not plain ``weight`` and ``bias``."""
    if parametrize.is_parametrized(layer):
        raise UnsupportedLayerError(
            f"layer {name!r} ({type(layer).__name__}) has a parametrization (e.g. spectral or "
            "weight norm); per-example gradient norms of parametrized weights are not supported"
        )
    extra = [n for n, _ in layer.named_parameters() if n not in ("weight", "bias")]
    if extra:
        raise UnsupportedLayerError(
            f"layer {name!r} ({type(layer).__name__}) has parameters {extra} besides weight and "
            "bias; per-example clipping would not see them"
        )
    if (
        type(layer).forward is not nn.Linear.forward
        or layer._forward_hooks
        or (layer._forward_pre_hooks)
    ):
        raise UnsupportedLayerError(
            f"layer {name!r} ({type(layer).__name__}) overrides Linear.forward or has forward "
            "hooks; ghost-norm clipping needs the plain z = a W^T + b"
        )
    if any(nn.parameter.is_lazy(p) for p in layer.parameters()):
        raise UnsupportedLayerError(
            f"layer {name!r} is an uninitialised lazy layer; run one forward pass first"
        )


def _check_parameter_free(name: str, layer: nn.Module) -> None:
    """Reject non-Linear layers that have parameters or that may mix examples of a batch."""
    if any(True for _ in layer.parameters()):
        raise UnsupportedLayerError(
            f"layer {name!r} ({type(layer).__name__}) has parameters but is not nn.Linear; "
            "ghost-norm clipping supports only nn.Linear layers with parameters (use a plain MLP, "
            "or a per-example clipping that supports this layer)"
        )
    if isinstance(layer, nn.modules.batchnorm._BatchNorm) or any(True for _ in layer.buffers()):
        raise UnsupportedLayerError(
            f"layer {name!r} ({type(layer).__name__}) uses batch statistics or buffers; "
            "BatchNorm mixes examples and breaks per-example privacy (use LayerNorm/GroupNorm "
            "in networks clipped by other means, or remove the layer)"
        )


def _validated_layers(model: nn.Sequential) -> list[tuple[str, nn.Module]]:
    """Flatten ``model`` into ``(name, layer)`` pairs after checking it is supported.

    Raises:
        UnsupportedLayerError: for a layer this module cannot clip exactly, for a parameter not
            owned by a Linear child, or for a parameter or Linear layer used twice.
    """
    if not isinstance(model, nn.Sequential):
        raise UnsupportedLayerError(
            f"ghost-norm clipping needs an nn.Sequential, got {type(model).__name__}"
        )
    layers = list(_leaf_modules(model, ""))
    seen_linear: set[int] = set()
    covered: dict[int, str] = {}
    for name, layer in layers:
        if isinstance(layer, nn.Linear):
            _check_linear(name, layer)
            if id(layer) in seen_linear:
                raise UnsupportedLayerError(
                    f"layer {name!r} is used more than once in the network; shared layers are not "
                    "supported"
                )
            seen_linear.add(id(layer))
            for pname, param in layer.named_parameters():
                if id(param) in covered:
                    raise UnsupportedLayerError(
                        f"parameter {name}.{pname} is shared with {covered[id(param)]}; shared "
                        "parameters are not supported"
                    )
                covered[id(param)] = f"{name}.{pname}"
        else:
            _check_parameter_free(name, layer)
    missing = [n for n, p in model.named_parameters() if id(p) not in covered]
    if missing:
        raise UnsupportedLayerError(
            f"parameters {missing} do not belong to any nn.Linear layer of the Sequential; "
            "per-example clipping would not see them"
        )
    return layers


def _forward_with_taps(
    layers: list[tuple[str, nn.Module]], inputs: torch.Tensor
) -> tuple[torch.Tensor, list[_Tap]]:
    """Run the layers one by one, keeping input and output of every trainable Linear layer.

    A Linear layer whose parameters are all frozen is run but not tapped: it contributes nothing
    to the norms (gradients still flow through it to the layers before).
    """
    hidden = inputs
    taps: list[_Tap] = []
    for name, layer in layers:
        if isinstance(layer, nn.Linear) and any(p.requires_grad for p in layer.parameters()):
            if hidden.dim() != 2:
                raise UnsupportedLayerError(
                    f"layer {name!r} received an input of shape {tuple(hidden.shape)}; ghost-norm "
                    "clipping supports Linear layers on (batch, features) inputs only (add "
                    "nn.Flatten before it)"
                )
            # F.linear, not layer(): the norm formula is exact for this very computation.
            output = F.linear(hidden, layer.weight, layer.bias)
            taps.append(_Tap(layer, name, hidden.detach(), output))
            hidden = output
        else:
            hidden = layer(hidden)
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


def _output_gradients(losses: torch.Tensor, taps: list[_Tap]) -> list[torch.Tensor]:
    """Gradients of the summed loss w.r.t. every tapped layer output, by ONE backward pass.

    Because loss ``i`` depends on row ``i`` only, row ``i`` of ``dsum(L)/dz`` is ``dL_i/dz_i``.
    The backward computes no weight gradients: only the graph down to the tapped outputs.
    """
    if not taps:
        return []
    return list(
        torch.autograd.grad(
            losses.sum(),
            [tap.output for tap in taps],
            allow_unused=True,
            materialize_grads=True,
        )
    )


def _bias_trains(layer: nn.Linear) -> bool:
    """Whether ``layer`` has a bias that is trained."""
    return layer.bias is not None and layer.bias.requires_grad


def _row_sq_norms(x: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean norm of each row, without an (n x d) temporary as ``x.square()`` has."""
    return torch.linalg.vector_norm(x, dim=1).square()


def _per_example_sq_norms(taps: list[_Tap], out_grads: list[torch.Tensor]) -> torch.Tensor:
    """Squared norm of each example's gradient over all trainable parameters: the ghost norm."""
    total = None
    for tap, g in zip(taps, out_grads, strict=True):
        g_sq = _row_sq_norms(g)
        layer_sq = None
        if tap.layer.weight.requires_grad:
            layer_sq = g_sq * _row_sq_norms(tap.activation)
        if _bias_trains(tap.layer):
            layer_sq = g_sq if layer_sq is None else layer_sq + g_sq
        total = layer_sq if total is None else total + layer_sq
    return total


@dataclass(frozen=True)
class _Groups:
    """Microbatch layout: each group's rows as a padded (n_groups x max_size) index matrix."""

    ids: torch.Tensor  # (n,) group id of each example
    sizes: torch.Tensor  # (n_groups,) number of examples in each group
    index: torch.Tensor  # (n_groups, max_size) row numbers; n (a zero row) pads short groups


def _group_layout(groups: torch.Tensor, n: int, num_groups: int | None) -> _Groups:
    """Check ``groups`` and arrange the row numbers of each group in a padded matrix."""
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
    starts = torch.cumsum(sizes, 0) - sizes
    slot = torch.arange(n, device=ids.device) - starts[sorted_ids]
    index = torch.full((num_groups, int(sizes.max())), n, dtype=torch.long, device=ids.device)
    index[sorted_ids, slot] = order
    return _Groups(ids, sizes, index)


def _padded(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows of ``x`` arranged as (n_groups, max_size, features), zero rows as padding."""
    return torch.cat([x, x.new_zeros(1, x.shape[1])])[index]


def _materialise_group_sums(n: int, layout: _Groups, out_dim: int, in_dim: int) -> bool:
    """Whether forming each group's weight gradient ``S_b`` beats the Gram trick for a layer.

    Forming ``S_b`` costs ``G k o d`` multiply-adds (``G`` groups padded to ``k`` rows) and the
    clipped sum then follows from the ``S_b`` for free; the Gram trick costs ``G k^2 (o + d)``
    plus the ``n o d`` of the weighted matrix product. Memory (``G o d`` numbers) is capped.
    """
    n_groups, k = layout.index.shape
    if n_groups * out_dim * in_dim > _MAX_GROUP_SUM_NUMBERS:
        return False
    return n_groups * k * out_dim * in_dim <= n_groups * k * k * (out_dim + in_dim) + (
        n * out_dim * in_dim
    )


def _group_sq_norms(
    taps: list[_Tap], out_grads: list[torch.Tensor], layout: _Groups
) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
    """Squared norm of each group's SUMMED gradient (zero-padded rows add nothing).

    For a Linear layer the group's weight gradient is ``S_b = sum_{i in b} g_i a_i^T``: either
    formed explicitly (returned, keyed by tap position, for reuse in the clipped sum) or, see
    :func:`_materialise_group_sums`, measured with the Gram trick
    ``||S_b||^2 = sum_{i,j in b} (g_i . g_j)(a_i . a_j)``. The bias adds
    ``||sum_{i in b} g_i||^2``.
    """
    total = None
    group_sums: dict[int, torch.Tensor] = {}
    n = layout.ids.shape[0]
    for position, (tap, g) in enumerate(zip(taps, out_grads, strict=True)):
        g_pad = _padded(g, layout.index)
        layer_sq = g_pad.new_zeros(g_pad.shape[0])
        if tap.layer.weight.requires_grad:
            a_pad = _padded(tap.activation, layout.index)
            if _materialise_group_sums(n, layout, g.shape[1], tap.activation.shape[1]):
                summed = g_pad.mT @ a_pad
                group_sums[position] = summed
                layer_sq = layer_sq + torch.linalg.vector_norm(summed, dim=(1, 2)).square()
            else:
                gram = (g_pad @ g_pad.mT) * (a_pad @ a_pad.mT)
                layer_sq = layer_sq + gram.sum((1, 2))
        if _bias_trains(tap.layer):
            layer_sq = layer_sq + _row_sq_norms(g_pad.sum(1))
        total = layer_sq if total is None else total + layer_sq
    return total, group_sums


def clip_factors(norms: torch.Tensor, clip_norm: float) -> torch.Tensor:
    """Factors ``c = min(1, C / (norm + 1e-12))`` that bring each norm to at most ``C``.

    ``c * norm < C`` always (the small constant keeps it strict and handles zero norms), and
    ``clip_norm = math.inf`` gives factors of exactly 1.
    """
    if math.isinf(clip_norm):
        return torch.ones_like(norms)
    return torch.clamp(clip_norm / (norms + _NORM_EPS), max=1.0)


def _checked_clip_norm(clip_norm: float) -> float:
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
    taps: list[_Tap],
    out_grads: list[torch.Tensor],
    weights: torch.Tensor,
    group_sums: tuple[dict[int, torch.Tensor], torch.Tensor] | None = None,
) -> list[torch.Tensor]:
    """``sum_i w_i * grad_i`` for every parameter, one matrix product per Linear layer.

    For a Linear layer ``sum_i w_i g_i a_i^T = (w * g)^T a`` and ``sum_i w_i g_i = w @ g``.
    ``group_sums``, when given, holds per-group weight gradients ``S_b`` already formed for some
    layers (by tap position) and the per-group weights ``u_b``: those layers use ``sum_b u_b S_b``.
    """
    formed, group_weights = group_sums if group_sums is not None else ({}, weights)
    sums: dict[int, torch.Tensor] = {}
    for position, (tap, g) in enumerate(zip(taps, out_grads, strict=True)):
        weighted = g * weights.to(g.dtype).unsqueeze(1)
        if position in formed:
            summed = formed[position]
            u = group_weights.to(summed.dtype)
            sums[id(tap.layer.weight)] = (u @ summed.flatten(1)).view(summed.shape[1:])
        elif tap.layer.weight.requires_grad:
            sums[id(tap.layer.weight)] = weighted.T @ tap.activation
        if _bias_trains(tap.layer):
            sums[id(tap.layer.bias)] = weighted.sum(0)
    return [
        sums[id(p)] if id(p) in sums else torch.zeros_like(p, memory_format=torch.preserve_format)
        for p in model.parameters()
    ]


def _ghost_backward(
    model: nn.Sequential, inputs: torch.Tensor, per_example_loss: PerExampleLoss
) -> tuple[list[_Tap], list[torch.Tensor], torch.Tensor]:
    """Validate, run the forward with taps and one backward to the Linear outputs."""
    layers = _validated_layers(model)
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
        return taps, _output_gradients(losses, taps), losses


def per_example_gradient_norms(
    model: nn.Sequential, inputs: torch.Tensor, per_example_loss: PerExampleLoss
) -> torch.Tensor:
    """Norm of each example's gradient of its loss over the model's trainable parameters.

    Args:
        model: an ``nn.Sequential`` of ``nn.Linear`` and parameter-free row-wise layers.
        inputs: a batch of ``n >= 1`` examples, first dimension the batch.
        per_example_loss: maps the model's output to a tensor of ``n`` losses.

    Returns:
        A detached tensor of shape ``(n,)``.
    """
    taps, out_grads, losses = _ghost_backward(model, inputs, per_example_loss)
    if not taps:
        return losses.new_zeros(losses.shape[0]).detach()
    return _per_example_sq_norms(taps, out_grads).sqrt().detach()


def clipped_gradient_sum(
    model: nn.Sequential,
    inputs: torch.Tensor,
    per_example_loss: PerExampleLoss,
    clip_norm: float,
    groups: torch.Tensor | None = None,
    *,
    num_groups: int | None = None,
) -> ClippedGradients:
    """Sum over examples (or microbatches) of gradients each clipped to norm ``clip_norm``.

    This is the sensitivity-bounded quantity of DP-SGD: adding or removing one example changes
    it by at most ``clip_norm`` (per-example clipping) or ``clip_norm`` per group it belongs to.
    Noise and division by the expected batch size are the caller's job. Parameter ``.grad``
    fields are neither read nor written.

    Args:
        model: an ``nn.Sequential`` of ``nn.Linear`` and parameter-free row-wise layers
            (nested Sequentials are flattened); anything else raises.
        inputs: a batch of ``n >= 1`` examples, first dimension the batch.
        per_example_loss: maps the model's output ``(n, k)`` to ``n`` losses, loss ``i``
            depending on row ``i`` only (e.g. a torch loss with ``reduction='none'``).
        clip_norm: the clipping norm C > 0; ``math.inf`` disables clipping exactly.
        groups: optional ``(n,)`` integer tensor of microbatch ids ``0..G-1``. When given, the
            MEAN gradient of each microbatch is clipped to C and the clipped means are summed.
        num_groups: the number of microbatches G (default ``groups.max() + 1``); groups without
            examples contribute nothing and get norm 0.

    Returns:
        :class:`ClippedGradients` with the summed clipped gradients, the unclipped norms and the
        per-example losses.

    Raises:
        UnsupportedLayerError: the model has a layer or parameter this method cannot clip.
        PrivacyError: ``clip_norm`` is not positive.
        ValueError: malformed ``inputs``, ``groups`` or losses.
    """
    clip_norm = _checked_clip_norm(clip_norm)
    taps, out_grads, losses = _ghost_backward(model, inputs, per_example_loss)
    n = losses.shape[0]
    if groups is None:
        norms = _per_example_sq_norms(taps, out_grads).sqrt() if taps else losses.new_zeros(n)
        grads = _weighted_sums(model, taps, out_grads, clip_factors(norms, clip_norm))
    else:
        layout = _group_layout(groups.to(losses.device), n, num_groups)
        if taps:
            sq, formed = _group_sq_norms(taps, out_grads, layout)
        else:
            sq, formed = losses.new_zeros(len(layout.sizes)), {}
        # Clip the MEAN gradient of each group: norm / k, and each member's weight is c_b / k_b.
        # An empty group has no members, norm 0 and contributes nothing.
        sizes = layout.sizes.clamp(min=1).to(losses.dtype)
        norms = sq.clamp(min=0).sqrt() / sizes
        group_weights = clip_factors(norms, clip_norm) / sizes
        weights = group_weights[layout.ids]
        grads = _weighted_sums(model, taps, out_grads, weights, (formed, group_weights))
    return ClippedGradients(grads=grads, norms=norms.detach(), losses=losses.detach())
