"""Initial weights drawn from a generator the run owns (never torch's global random state).

PyTorch's own ``reset_parameters`` draws from the global generator; a run must be reproducible
from its seed alone (design.md section 2, rule 7), so every layer type used by dpforge's
networks is initialised here, and a parameter of any other layer is an error.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from dpforge.nets.gaussian import SubspaceGaussianGenerator

_NORMS = (nn.GroupNorm, nn.LayerNorm)


def _uniform(param: torch.Tensor, bound: float, generator: torch.Generator) -> None:
    """Fill ``param`` with U(-bound, bound) drawn on the CPU from ``generator``."""
    draw = torch.empty_like(param, device="cpu").uniform_(-bound, bound, generator=generator)
    param.copy_(draw)


def _fan_in_uniform(weight: torch.Tensor, generator: torch.Generator) -> None:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in as PyTorch counts it (dim 1 x kernel)."""
    _uniform(weight, 1.0 / math.sqrt(weight.shape[1] * math.prod(weight.shape[2:])), generator)


def _initialise_layer(layer: nn.Module, generator: torch.Generator) -> list[nn.Parameter]:
    """Initialise ``layer``'s own parameters; return those it initialised."""
    own = list(layer.parameters(recurse=False))
    if isinstance(layer, nn.Linear | nn.modules.conv._ConvNd):
        _fan_in_uniform(layer.weight, generator)
        if layer.bias is not None:
            layer.bias.zero_()
    elif isinstance(layer, _NORMS):
        if layer.weight is not None:
            layer.weight.fill_(1.0)
        if layer.bias is not None:
            layer.bias.zero_()
    elif isinstance(layer, nn.LSTM):
        bound = 1.0 / math.sqrt(layer.hidden_size)
        for name, param in layer.named_parameters():
            if name.startswith("weight"):
                _uniform(param, bound, generator)
            else:
                param.zero_()
    elif isinstance(layer, SubspaceGaussianGenerator):  # set from DP releases, never drawn
        layer.reset_release()
    elif own:
        raise TypeError(f"no initialisation rule for {type(layer).__name__}'s parameters")
    return own


def initialise(module: nn.Module, generator: torch.Generator) -> None:
    """(Re)initialise every parameter of ``module`` from ``generator`` (a CPU generator).

    Linear and convolution weights: uniform with bound 1/sqrt(fan in); biases zero.
    GroupNorm/LayerNorm: weight 1, bias 0 (the identity). LSTM: uniform(±1/sqrt(hidden)).
    The subspace Gaussian generator resets to its pre-release state: it draws nothing.
    """
    with torch.no_grad():
        for layer in module.modules():
            _initialise_layer(layer, generator)
