"""The gradient-penalty ghost path against the torch.func oracle, in float64.

The oracle (:func:`dpforge.privacy.per_example.per_example_gradients`) forms every example's
gradient of ``score + penalty`` with ``vmap(grad(...))`` (the penalty by an inner
``torch.func.grad``), independently of the taps under test. Checked: the per-example norms and
the clipped sums, for MLP and convolutional critics (with GroupNorm/LayerNorm, smooth and
piecewise-linear activations, asymmetric 'same' padding), with and without clipping binding,
with the label joined as channels, and the penalty weight 0 against plain ghost clipping.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch import nn

from dpforge.nets.conv import condition_channels, conv_critic
from dpforge.nets.recurrent import DPLSTM
from dpforge.privacy import ghost_layers
from dpforge.privacy.clipping import UnsupportedLayerError, clipped_gradient_sum
from dpforge.privacy.ghost_penalty import clipped_gradient_sum_with_penalty, supports_penalty
from dpforge.privacy.per_example import clip_and_sum, per_example_gradients

RTOL = 1e-9
GP = 10.0


def _penalty(slopes: torch.Tensor) -> torch.Tensor:
    return GP * (torch.sqrt(slopes.flatten(1).square().sum(1) + 1e-12) - 1.0) ** 2


def _score(scores: torch.Tensor) -> torch.Tensor:
    return -scores[:, 0]


def _cat_label(rows: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
    return torch.cat([rows, onehot], dim=1)


# name -> (critic builder, record shape, number of classes, join of records and one-hot)
CRITICS: dict[str, tuple[Callable[[], nn.Sequential], tuple[int, ...], int, Callable]] = {
    "mlp_leaky": (
        lambda: nn.Sequential(
            nn.Linear(5 + 2, 8),
            nn.LeakyReLU(0.2),
            nn.Linear(8, 6),
            nn.LeakyReLU(0.2),
            nn.Linear(6, 1),
        ),
        (5,),
        2,
        _cat_label,
    ),
    "mlp_smooth_layernorm": (
        lambda: nn.Sequential(
            nn.Linear(4, 7),
            nn.LayerNorm(7),
            nn.Tanh(),
            nn.Linear(7, 5, bias=False),
            nn.ELU(),
            nn.Linear(5, 1),
        ),
        (4,),
        0,
        _cat_label,
    ),
    "conv_dcgan": (
        lambda: conv_critic((1, 8, 8), 3, channels=(4, 6), norm="group"),
        (1, 8, 8),
        3,
        condition_channels,
    ),
    "conv_smooth_same": (
        lambda: nn.Sequential(
            nn.Conv2d(2, 3, 4, padding="same", dilation=(1, 2)),
            nn.GroupNorm(1, 3),
            nn.Softplus(),
            nn.Conv2d(3, 2, 3, stride=2),
            nn.Flatten(),
            nn.Linear(2 * 2 * 2, 1),
        ),
        (2, 6, 6),
        0,
        condition_channels,
    ),
    "conv1d": (
        lambda: nn.Sequential(
            nn.Conv1d(1 + 2, 4, 4, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv1d(4, 3, 3, 1, 1),
            nn.SiLU(),
            nn.Flatten(),
            nn.Linear(3 * 5, 1),
        ),
        (1, 10),
        2,
        condition_channels,
    ),
}


def _problem(name: str, n: int = 7, seed: int = 0, scale: float = 1.0):
    build, shape, k, join = CRITICS[name]
    gen = torch.Generator().manual_seed(seed)
    model = build().double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.4 * scale)
    records = torch.randn(n, *shape, generator=gen, dtype=torch.float64)
    hats = torch.randn(n, *shape, generator=gen, dtype=torch.float64)
    labels = torch.randint(0, max(k, 1), (n,), generator=gen)
    onehot = nn.functional.one_hot(labels, k).double() if k else torch.zeros(n, 0).double()
    return model, join(records, onehot), hats, onehot, join


def _oracle(model, inputs, hats, onehot, join, clip):
    def example_loss(forward, x, x_hat, y):
        score = -forward(x.unsqueeze(0))[0, 0]
        slope = torch.func.grad(lambda r: forward(join(r[None], y[None]))[0, 0])(x_hat)
        return score + _penalty(slope[None])[0]

    grads, losses = per_example_gradients(model, example_loss, (inputs, hats, onehot))
    return clip_and_sum(model, grads, losses, clip)


def _ghost(model, inputs, hats, onehot, join, clip):
    return clipped_gradient_sum_with_penalty(
        model, inputs, _score, hats, lambda r: join(r, onehot), _penalty, clip
    )


def _assert_same(got, expected):
    torch.testing.assert_close(got.norms, expected.norms, rtol=RTOL, atol=1e-12)
    torch.testing.assert_close(got.losses, expected.losses, rtol=RTOL, atol=1e-12)
    for g, e in zip(got.grads, expected.grads, strict=True):
        torch.testing.assert_close(g, e, rtol=RTOL, atol=1e-11)


@pytest.mark.parametrize("strategy", ["auto", "ghost", "materialise"])
@pytest.mark.parametrize("name", sorted(CRITICS))
def test_clipped_sum_with_penalty_matches_torch_func(name, strategy, monkeypatch):
    monkeypatch.setattr(ghost_layers, "NORM_STRATEGY", strategy)
    model, inputs, hats, onehot, join = _problem(name)
    unclipped = _oracle(model, inputs, hats, onehot, join, math.inf)
    # A clip norm between the smallest and the largest per-example norm: some examples clip.
    clip = float(unclipped.norms.median())
    assert (unclipped.norms > clip).any() and (unclipped.norms < clip).any()
    for c in (math.inf, clip):
        _assert_same(
            _ghost(model, inputs, hats, onehot, join, c),
            _oracle(model, inputs, hats, onehot, join, c),
        )


def test_penalty_term_is_a_large_part_of_the_gradient():
    """The oracle checks would also pass for a path that dropped the penalty if the penalty's
    gradient were negligible: here it is as large as the score's."""
    model, inputs, hats, onehot, join = _problem("conv_dcgan")
    with_gp = _ghost(model, inputs, hats, onehot, join, math.inf).grads
    score_only = clipped_gradient_sum(model, inputs, _score, math.inf).grads
    difference = torch.cat([(a - b).flatten() for a, b in zip(with_gp, score_only, strict=True)])
    score = torch.cat([b.flatten() for b in score_only])
    assert difference.norm() > score.norm()


def test_zero_penalty_equals_plain_ghost_clipping():
    model, inputs, hats, onehot, join = _problem("conv_dcgan")
    got = clipped_gradient_sum_with_penalty(
        model, inputs, _score, hats, lambda r: join(r, onehot), lambda s: 0 * s.sum((1, 2, 3)), 0.3
    )
    plain = clipped_gradient_sum(model, inputs, _score, 0.3)
    for g, e in zip(got.grads, plain.grads, strict=True):
        torch.testing.assert_close(g, e, rtol=RTOL, atol=1e-12)


def test_float32_agrees_with_the_oracle_and_clips_below_c():
    model, inputs, hats, onehot, join = _problem("conv_dcgan", n=16, seed=3)
    model, inputs, hats, onehot = model.float(), inputs.float(), hats.float(), onehot.float()
    expected = _oracle(model, inputs, hats, onehot, join, 0.5)
    got = _ghost(model, inputs, hats, onehot, join, 0.5)
    torch.testing.assert_close(got.norms, expected.norms, rtol=1e-4, atol=1e-6)
    for g, e in zip(got.grads, expected.grads, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5)


def test_frozen_parameters_get_zero_gradients_and_no_norm():
    model, inputs, hats, onehot, join = _problem("mlp_leaky")
    model[0].requires_grad_(False)
    got = _ghost(model, inputs, hats, onehot, join, math.inf)
    expected = _oracle(model, inputs, hats, onehot, join, math.inf)
    torch.testing.assert_close(got.norms, expected.norms, rtol=RTOL, atol=1e-12)
    assert not got.grads[0].any() and not got.grads[1].any()


def test_unsupported_critics_are_named():
    lstm = nn.Sequential(DPLSTM(3, 4), nn.Linear(4, 1))
    assert not supports_penalty(lstm)
    assert supports_penalty(conv_critic((1, 8, 8), 2))
    with pytest.raises(UnsupportedLayerError, match="DPLSTM"):
        clipped_gradient_sum_with_penalty(
            lstm, torch.zeros(2, 3, 5), _score, torch.zeros(2, 3, 5), lambda r: r, _penalty, 1.0
        )
    with pytest.raises(UnsupportedLayerError, match="BatchNorm"):
        bn = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2), nn.Linear(2, 1))
        clipped_gradient_sum_with_penalty(
            bn, torch.zeros(2, 2), _score, torch.zeros(2, 2), lambda r: r, _penalty, 1.0
        )


def test_malformed_scores_are_rejected():
    model = nn.Sequential(nn.Linear(3, 2))
    with pytest.raises(ValueError, match=r"\(n, 1\) scores"):
        clipped_gradient_sum_with_penalty(
            model, torch.zeros(2, 3), _score, torch.zeros(2, 3), lambda r: r, _penalty, 1.0
        )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_the_oracle():
    model, inputs, hats, onehot, join = _problem("conv_dcgan")
    expected = _oracle(model, inputs, hats, onehot, join, 0.5)
    model, inputs, hats, onehot = model.cuda(), inputs.cuda(), hats.cuda(), onehot.cuda()
    got = _ghost(model, inputs, hats, onehot, join, 0.5)
    assert all(g.device.type == "cuda" for g in got.grads)
    torch.testing.assert_close(got.norms.cpu(), expected.norms, rtol=RTOL, atol=1e-12)
    for g, e in zip(got.grads, expected.grads, strict=True):
        torch.testing.assert_close(g.cpu(), e, rtol=1e-7, atol=1e-10)
