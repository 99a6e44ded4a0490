"""The convolution tap of ghost clipping: a Conv1d/Conv2d weight applied at every output pixel
(:class:`ConvTap`, a :class:`~dpforge.privacy.ghost_layers.LinearMapTap` whose positions are
unfolded input patches), and the explicit zero padding torch applies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from dpforge.privacy.ghost_layers import LinearMapTap
from dpforge.privacy.units import Units


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
