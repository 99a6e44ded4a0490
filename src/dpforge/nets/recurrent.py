"""An LSTM layer built from two ``nn.Linear`` maps, for critics clipped per example.

``nn.LSTM`` runs a fused kernel whose per-example gradients the fast clipping cannot see.
:class:`DPLSTM` computes the same recurrence (torch's gate order and equations) with an input
map ``ih`` applied to every time step at once and a recurrent map ``hh`` applied step by step.
Every use of a parameter goes through :meth:`DPLSTM.recurrence`'s ``apply`` argument, so
:mod:`dpforge.privacy.ghost_layers` can record each application (a "T-position" tap: ``W_ih``
at the inputs ``x_t``, ``W_hh`` at the hidden states ``h_{t-1}``) and compute per-example
gradient norms without materialising per-example gradients.

Used in a critic: ``nn.Sequential(DPLSTM(channels, hidden), nn.Linear(hidden, 1))`` on series
shaped ``(n, channels, length)``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

# apply(linear, x) -> linear(x): how the recurrence evaluates one of its Linear maps.
LinearApply = Callable[[nn.Linear, torch.Tensor], torch.Tensor]


def _call(linear: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return linear(x)


class DPLSTM(nn.Module):
    """Single-layer LSTM over ``(n, channels, length)``, returning the last hidden state.

    Gates follow ``nn.LSTM``: ``i, f, g, o = split(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``,
    ``c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(g)``, ``h_t = sigmoid(o) tanh(c_t)``, with
    ``h_{-1} = c_{-1} = 0``. ``bias=False`` drops both biases.
    """

    def __init__(self, channels: int, hidden: int, bias: bool = True) -> None:
        super().__init__()
        if channels < 1 or hidden < 1:
            raise ValueError(f"channels and hidden must be >= 1, got {channels} and {hidden}")
        self.hidden = hidden
        self.ih = nn.Linear(channels, 4 * hidden, bias=bias)
        self.hh = nn.Linear(hidden, 4 * hidden, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The last hidden state (n, hidden) of the series ``x`` (n, channels, length)."""
        return self.recurrence(x, _call)

    def recurrence(self, x: torch.Tensor, apply: LinearApply) -> torch.Tensor:
        """The LSTM recurrence, evaluating ``ih`` and ``hh`` only through ``apply``."""
        if x.dim() != 3 or x.shape[1] != self.ih.in_features or x.shape[2] < 1:
            raise ValueError(
                f"DPLSTM expects (n, {self.ih.in_features}, length >= 1) inputs, "
                f"got {tuple(x.shape)}"
            )
        inputs = apply(self.ih, x.transpose(1, 2))  # (n, length, 4 hidden): all steps at once
        h = x.new_zeros(x.shape[0], self.hidden)
        c = h
        for t in range(x.shape[2]):
            gates = inputs[:, t] + apply(self.hh, h)
            i, f, g, o = gates.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h
