"""The supported layers of ghost clipping: for each layer type, the checks that reject
configurations the taps do not cover and the run that computes the layer's output together
with its taps (:data:`HANDLERS`, looked up by :func:`handler_for`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import parametrize

from dpforge.nets.recurrent import DPLSTM
from dpforge.privacy.ghost_conv import ConvTap
from dpforge.privacy.ghost_layers import LinearMapTap
from dpforge.privacy.ghost_tap import AffineTap, Tap, UnsupportedLayerError

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
