"""DPLSTM: nn.LSTM's recurrence built from two Linear maps (for per-example clipping)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dpforge.nets.recurrent import DPLSTM


def _copy_from(ref: nn.LSTM, ours: DPLSTM) -> None:
    with torch.no_grad():
        ours.ih.weight.copy_(ref.weight_ih_l0)
        ours.hh.weight.copy_(ref.weight_hh_l0)
        if ours.ih.bias is not None:
            ours.ih.bias.copy_(ref.bias_ih_l0)
            ours.hh.bias.copy_(ref.bias_hh_l0)


@pytest.mark.parametrize("bias", [True, False])
def test_matches_torch_lstm_last_hidden_state(bias: bool) -> None:
    gen = torch.Generator().manual_seed(0)
    ref = nn.LSTM(3, 4, batch_first=True, bias=bias).double()
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
    ours = DPLSTM(3, 4, bias=bias).double()
    _copy_from(ref, ours)
    x = torch.randn(5, 3, 7, generator=gen, dtype=torch.float64)
    _, (h, _) = ref(x.transpose(1, 2))
    torch.testing.assert_close(ours(x), h[0], rtol=1e-12, atol=1e-12)


def test_gradients_match_torch_lstm() -> None:
    gen = torch.Generator().manual_seed(1)
    ref = nn.LSTM(2, 3, batch_first=True).double()
    ours = DPLSTM(2, 3).double()
    _copy_from(ref, ours)
    x = torch.randn(4, 2, 5, generator=gen, dtype=torch.float64)
    ours(x).square().sum().backward()
    ref(x.transpose(1, 2))[1][0].square().sum().backward()
    torch.testing.assert_close(ours.ih.weight.grad, ref.weight_ih_l0.grad)
    torch.testing.assert_close(ours.hh.weight.grad, ref.weight_hh_l0.grad)
    torch.testing.assert_close(ours.hh.bias.grad, ref.bias_hh_l0.grad)


def test_recurrence_uses_parameters_only_through_apply() -> None:
    """The clipping engine relies on this: every use of ih and hh goes through ``apply``."""
    model = DPLSTM(2, 3)
    calls: list[tuple[str, tuple[int, ...]]] = []

    def apply(linear: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        calls.append(("ih" if linear is model.ih else "hh", tuple(x.shape)))
        return linear(x)

    out = model.recurrence(torch.randn(4, 2, 6), apply)
    assert out.shape == (4, 3)
    assert calls == [("ih", (4, 6, 2))] + [("hh", (4, 3))] * 6


@pytest.mark.parametrize("shape", [(4, 3, 5), (4, 2), (4, 2, 0)])
def test_rejects_malformed_inputs(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="DPLSTM expects"):
        DPLSTM(2, 3)(torch.zeros(shape))


def test_rejects_empty_sizes() -> None:
    with pytest.raises(ValueError, match="channels and hidden"):
        DPLSTM(0, 3)
