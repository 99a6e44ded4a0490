"""Ghost clipping of convolutional, normalised and recurrent critics against the torch.func oracle.

The oracle (:func:`dpforge.privacy.per_example.clipped_sum_of_example_gradients`) materialises
every example's gradient with ``vmap(grad(...))`` over ``functional_call``, independently of the
taps under test. Each network is checked with the engine's automatic choice per layer, and with
the ghost formula and the materialised per-example gradients forced, including chunked runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dpforge.nets.recurrent import DPLSTM
from dpforge.privacy import ghost_layers
from dpforge.privacy.clipping import (
    ClippedGradients,
    UnsupportedLayerError,
    clip_factors,
    clipped_gradient_sum,
    per_example_gradient_norms,
)
from dpforge.privacy.per_example import clipped_sum_of_example_gradients, per_example_gradients

Loss = Callable[[torch.Tensor], torch.Tensor]
RTOL = 1e-6

# name -> (network builder, input shape without the batch dimension)
NETWORKS: dict[str, tuple[Callable[[], nn.Sequential], tuple[int, ...]]] = {
    "conv2d_k3_s1_p1": (
        lambda: nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1), nn.GroupNorm(2, 4, affine=False), nn.ELU(), nn.Flatten()
        ),
        (3, 6, 5),
    ),
    "conv2d_k4_s2_p1_nobias": (
        lambda: nn.Sequential(nn.Conv2d(2, 5, 4, 2, 1, bias=False), nn.Flatten()),
        (2, 8, 8),
    ),
    "conv2d_rect_dilated": (
        lambda: nn.Sequential(
            nn.Conv2d(2, 3, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 1)), nn.Flatten()
        ),
        (2, 9, 7),
    ),
    "conv2d_same_even_kernel": (
        lambda: nn.Sequential(nn.Conv2d(2, 3, 4, padding="same", dilation=(1, 2)), nn.Flatten()),
        (2, 5, 6),
    ),
    "conv2d_valid": (
        lambda: nn.Sequential(nn.Conv2d(1, 2, 2, stride=3, padding="valid"), nn.Flatten()),
        (1, 7, 8),
    ),
    "conv1d_k5_s2_p2_d2": (
        lambda: nn.Sequential(nn.Conv1d(3, 4, 5, stride=2, padding=2, dilation=2), nn.Flatten()),
        (3, 13),
    ),
    "conv1d_same_groupnorm": (
        lambda: nn.Sequential(
            nn.Conv1d(2, 6, 4, padding="same"), nn.GroupNorm(3, 6), nn.Tanh(), nn.Flatten()
        ),
        (2, 9),
    ),
    "dcgan_like": (
        lambda: nn.Sequential(
            nn.Conv2d(3, 4, 4, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(4, 8, 4, 2, 1),
            nn.GroupNorm(2, 8),
            nn.LeakyReLU(0.2),
            nn.Flatten(),
            nn.Linear(8 * 2 * 2, 1),
        ),
        (3, 8, 8),
    ),
    "layernorm_mixed": (
        lambda: nn.Sequential(
            nn.Conv1d(2, 3, 3),
            nn.LayerNorm([3, 6]),
            nn.ELU(),
            nn.Flatten(),
            nn.Linear(18, 8),
            nn.LayerNorm(8, bias=False),
            nn.Sigmoid(),
            nn.Linear(8, 5),
            nn.LayerNorm(5, elementwise_affine=False),
            nn.GroupNorm(1, 5),
        ),
        (2, 8),
    ),
    "groupnorm_on_rows": (
        lambda: nn.Sequential(nn.Linear(6, 8), nn.GroupNorm(4, 8), nn.ReLU(), nn.Linear(8, 2)),
        (6,),
    ),
    "dplstm": (lambda: nn.Sequential(DPLSTM(3, 5), nn.Tanh(), nn.Linear(5, 1)), (3, 6)),
    "dplstm_no_bias": (lambda: nn.Sequential(DPLSTM(2, 4, bias=False), nn.Linear(4, 2)), (2, 5)),
}


def _init_(model: nn.Module, seed: int, dtype: torch.dtype) -> nn.Module:
    """Cast ``model`` and overwrite its parameters from a seeded generator (no global RNG)."""
    gen = torch.Generator().manual_seed(seed)
    model.to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p[0].numel() if p.dim() > 1 else p.shape[0]
            p.copy_(torch.randn(p.shape, generator=gen, dtype=dtype) / math.sqrt(fan_in))
    return model.eval()


def _problem(arch: str, n: int, dtype: torch.dtype = torch.float64, seed: int = 0):
    """Model, inputs, per-example targets and the per-example loss (BCE on the summed output)."""
    build, shape = NETWORKS[arch]
    model = _init_(build(), seed, dtype)
    gen = torch.Generator().manual_seed(seed + 1000)
    x = torch.randn(n, *shape, generator=gen, dtype=dtype) * 1.5
    targets = torch.randint(0, 2, (n,), generator=gen).to(dtype)
    return model, x, targets


def _batch_loss(targets: torch.Tensor) -> Loss:
    """Per-example loss of a batch's outputs: BCE-with-logits of each row's mean."""
    return lambda out: F.binary_cross_entropy_with_logits(out.mean(1), targets, reduction="none")


def _example_loss(forward: Callable, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The same loss for one example (the oracle's form)."""
    return F.binary_cross_entropy_with_logits(forward(x.unsqueeze(0)).mean(), target)


def _oracle(model: nn.Module, x: torch.Tensor, targets: torch.Tensor, clip_norm: float):
    return clipped_sum_of_example_gradients(model, _example_loss, (x, targets), clip_norm)


def _assert_same(got: ClippedGradients, want: ClippedGradients, rtol: float = RTOL) -> None:
    torch.testing.assert_close(got.norms, want.norms, rtol=rtol, atol=0.0)
    torch.testing.assert_close(got.losses, want.losses, rtol=rtol, atol=0.0)
    for g, w in zip(got.grads, want.grads, strict=True):
        scale = float(w.abs().max()) if w.numel() else 0.0
        torch.testing.assert_close(g, w, rtol=rtol, atol=rtol * scale + 1e-15)


@pytest.fixture(
    params=["auto", "ghost", "materialise", "materialise_kept_chunks", "materialise_chunked"]
)
def strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with each way of computing the per-example weight-gradient norms."""
    if request.param == "materialise_chunked":  # formed in chunks of one unit, never kept
        monkeypatch.setattr(ghost_layers, "NORM_STRATEGY", "materialise")
        monkeypatch.setattr(ghost_layers, "MAX_FORMED_BYTES", 0)
        monkeypatch.setattr(ghost_layers, "CHUNK_BYTES", 1)
    elif request.param == "ghost":  # and Gram chunks of a few units
        monkeypatch.setattr(ghost_layers, "NORM_STRATEGY", "ghost")
        monkeypatch.setattr(ghost_layers, "CHUNK_BYTES", 20_000)
    elif request.param.startswith("materialise"):  # formed and kept for the clipped sum
        monkeypatch.setattr(ghost_layers, "NORM_STRATEGY", "materialise")
        monkeypatch.setattr(ghost_layers, "KEEP_MIN_POSITIONS", 0)
        if request.param == "materialise_kept_chunks":  # kept as a list of one-unit chunks
            monkeypatch.setattr(ghost_layers, "CHUNK_BYTES", 1)
    return request.param


# ---------------------------------------------------------------------------- per-example path


@pytest.mark.parametrize("arch", sorted(NETWORKS))
@pytest.mark.parametrize("clipping", ["most", "none"])
def test_matches_oracle(arch: str, clipping: str, strategy: str) -> None:
    model, x, targets = _problem(arch, n=11)
    norms = _oracle(model, x, targets, math.inf).norms
    # C below most norms (most examples clipped), or above all of them.
    clip_norm = float(norms.quantile(0.25)) if clipping == "most" else 2 * float(norms.max())
    want = _oracle(model, x, targets, clip_norm)
    got = clipped_gradient_sum(model, x, _batch_loss(targets), clip_norm)
    _assert_same(got, want)


@pytest.mark.parametrize("arch", ["dcgan_like", "conv1d_same_groupnorm", "dplstm"])
def test_float32_matches_oracle(arch: str) -> None:
    model, x, targets = _problem(arch, n=9, dtype=torch.float32)
    _assert_same(
        clipped_gradient_sum(model, x, _batch_loss(targets), 0.3),
        _oracle(model, x, targets, 0.3),
        rtol=2e-4,
    )


@pytest.mark.parametrize("arch", sorted(NETWORKS))
def test_per_example_gradient_norms(arch: str, strategy: str) -> None:
    model, x, targets = _problem(arch, n=7, seed=3)
    grads, _ = per_example_gradients(model, _example_loss, (x, targets))
    oracle = torch.cat([g.reshape(7, -1) for g in grads.values()], 1).norm(dim=1)
    norms = per_example_gradient_norms(model, x, _batch_loss(targets))
    torch.testing.assert_close(norms, oracle, rtol=RTOL, atol=0.0)


@pytest.mark.parametrize(
    "arch", ["dcgan_like", "conv1d_same_groupnorm", "layernorm_mixed", "dplstm"]
)
def test_infinite_clip_norm_is_the_plain_summed_gradient(arch: str) -> None:
    model, x, targets = _problem(arch, n=10)
    loss = _batch_loss(targets)
    plain = torch.autograd.grad(loss(model(x)).sum(), list(model.parameters()))
    result = clipped_gradient_sum(model, x, loss, math.inf)
    for got, want in zip(result.grads, plain, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("clip_norm", [0.01, 0.2])
def test_clipped_norms_are_at_most_c(clip_norm: float, strategy: str) -> None:
    model, x, targets = _problem("dcgan_like", n=12, dtype=torch.float32)
    result = clipped_gradient_sum(model, x, _batch_loss(targets), clip_norm)
    grads, _ = per_example_gradients(model, _example_loss, (x, targets))
    flat = torch.cat([g.reshape(12, -1) for g in grads.values()], 1)
    clipped = clip_factors(result.norms, clip_norm).unsqueeze(1) * flat
    assert (clipped.norm(dim=1) <= clip_norm * (1 + 1e-6)).all()


def test_frozen_parameters_get_zero_gradients() -> None:
    model, x, targets = _problem("dcgan_like", n=8)
    model[0].weight.requires_grad_(False)  # first conv: only its bias trains
    model[2].requires_grad_(False)  # second conv entirely frozen
    model[3].bias.requires_grad_(False)  # GroupNorm: only its scale trains
    want = _oracle(model, x, targets, 0.2)
    got = clipped_gradient_sum(model, x, _batch_loss(targets), 0.2)
    _assert_same(got, want)
    for g, p in zip(got.grads, model.parameters(), strict=True):
        assert g.shape == p.shape
        if not p.requires_grad:
            assert torch.equal(g, torch.zeros_like(p))


def test_frozen_dplstm_recurrent_map() -> None:
    model, x, targets = _problem("dplstm", n=6)
    model[0].hh.requires_grad_(False)
    _assert_same(
        clipped_gradient_sum(model, x, _batch_loss(targets), 0.1),
        _oracle(model, x, targets, 0.1),
    )


def test_leaves_grad_fields_alone_and_works_under_no_grad() -> None:
    model, x, targets = _problem("dcgan_like", n=6)
    expected = clipped_gradient_sum(model, x, _batch_loss(targets), 0.3)
    with torch.no_grad():
        result = clipped_gradient_sum(model, x, _batch_loss(targets), 0.3)
    assert all(p.grad is None for p in model.parameters())
    for got, want in zip(result.grads, expected.grads, strict=True):
        torch.testing.assert_close(got, want, rtol=0.0, atol=0.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_oracle() -> None:
    model, x, targets = _problem("dcgan_like", n=10)
    want = _oracle(model, x, targets, 0.2)
    model = model.cuda()
    got = clipped_gradient_sum(model, x.cuda(), _batch_loss(targets.cuda()), 0.2)
    assert all(g.device.type == "cuda" for g in got.grads)
    cpu = ClippedGradients([g.cpu() for g in got.grads], got.norms.cpu(), got.losses.cpu())
    _assert_same(cpu, want)


# ------------------------------------------------------------------------- microbatches (m < B)


def _group_oracle(model, x, targets, groups, n_groups, clip_norm):
    """Each group's mean gradient by plain autograd; its norm and the clipped sum."""
    params = list(model.parameters())
    loss = _batch_loss(targets)
    norms, total = [], [torch.zeros_like(p) for p in params]
    for b in range(n_groups):
        member = groups == b
        grads = torch.autograd.grad(loss(model(x))[member].mean(), params)
        norm = torch.cat([g.reshape(-1) for g in grads]).norm()
        norms.append(norm)
        factor = min(1.0, clip_norm / float(norm))
        total = [t + factor * g for t, g in zip(total, grads, strict=True)]
    return torch.stack(norms), total


@pytest.mark.parametrize(
    "arch", ["dcgan_like", "conv1d_same_groupnorm", "layernorm_mixed", "dplstm"]
)
@pytest.mark.parametrize("clip_norm", [0.02, math.inf])
def test_microbatches_match_a_loop_over_groups(arch: str, clip_norm: float, strategy: str) -> None:
    model, x, targets = _problem(arch, n=14)
    groups = torch.tensor([0, 1, 2, 3, 0, 0, 1, 2, 2, 2, 3, 0, 1, 2])  # uneven sizes
    norms, total = _group_oracle(model, x, targets, groups, 4, clip_norm)
    result = clipped_gradient_sum(model, x, _batch_loss(targets), clip_norm, groups)
    torch.testing.assert_close(result.norms, norms, rtol=RTOL, atol=0.0)
    for got, want in zip(result.grads, total, strict=True):
        torch.testing.assert_close(got, want, rtol=RTOL, atol=1e-12)


def test_singleton_microbatches_equal_per_example_clipping(strategy: str) -> None:
    model, x, targets = _problem("dcgan_like", n=9)
    loss = _batch_loss(targets)
    per_example = clipped_gradient_sum(model, x, loss, 0.1)
    grouped = clipped_gradient_sum(model, x, loss, 0.1, torch.arange(9).flip(0))
    torch.testing.assert_close(grouped.norms, per_example.norms.flip(0), rtol=1e-10, atol=0.0)
    for got, want in zip(grouped.grads, per_example.grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-14)


# ------------------------------------------------------------------------------------ rejection


def _expect_rejection(model: nn.Module, x: torch.Tensor, match: str) -> None:
    with pytest.raises(UnsupportedLayerError, match=match):
        clipped_gradient_sum(model, x, lambda out: out.flatten(1).sum(1), 1.0)


@pytest.mark.parametrize(
    ("layer", "match"),
    [
        (nn.Conv2d(4, 4, 3, padding=1, groups=2), r"'0'.*groups=2"),
        (nn.Conv2d(4, 4, 3, padding=1, groups=4), "groups=4"),
        (nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect"), "padding_mode='reflect'"),
        (nn.Conv2d(4, 4, 3, padding=1, padding_mode="circular"), "padding_mode='circular'"),
        (nn.BatchNorm2d(4), "BatchNorm2d"),
        (nn.BatchNorm2d(4, affine=False), "batch statistics"),
        (nn.ConvTranspose2d(4, 4, 3), "ConvTranspose2d"),
        (nn.InstanceNorm2d(4, affine=True), "InstanceNorm2d"),
    ],
)
def test_rejects_unsupported_conv_configurations(layer: nn.Module, match: str) -> None:
    _expect_rejection(nn.Sequential(layer, nn.Flatten()), torch.zeros(2, 4, 5, 5), match)


def test_rejects_conv3d() -> None:
    model = nn.Sequential(nn.Conv3d(1, 1, 2), nn.Flatten())
    _expect_rejection(model, torch.zeros(2, 1, 3, 3, 3), "Conv3d")


def test_rejects_inputs_without_a_batch_dimension() -> None:
    """Unbatched conv inputs, and LayerNorm over every dimension, would mix examples."""
    _expect_rejection(nn.Sequential(nn.Conv1d(3, 2, 2)), torch.zeros(3, 5), r"\(3, 5\)")
    _expect_rejection(nn.Sequential(nn.Conv2d(3, 2, 2)), torch.zeros(3, 5, 5), r"\(3, 5, 5\)")
    _expect_rejection(nn.Sequential(nn.LayerNorm([2, 3])), torch.zeros(2, 3), "LayerNorm")
    _expect_rejection(nn.Sequential(DPLSTM(2, 3)), torch.zeros(4, 2), "DPLSTM")


def test_rejects_modified_conv_and_norm_layers() -> None:
    class Doubled(nn.Conv2d):
        def _conv_forward(self, x, weight, bias):
            return 2 * super()._conv_forward(x, weight, bias)

    _expect_rejection(
        nn.Sequential(Doubled(1, 1, 2)), torch.zeros(2, 1, 3, 3), "overrides Conv2d._conv_forward"
    )
    hooked = nn.GroupNorm(1, 2)
    hooked.register_forward_hook(lambda module, args, out: out * 3)
    _expect_rejection(nn.Sequential(hooked), torch.zeros(2, 2, 3), "hooks")
    normed = nn.utils.parametrizations.weight_norm(nn.Conv1d(2, 2, 2))
    _expect_rejection(nn.Sequential(normed), torch.zeros(2, 2, 3), "parametrization")
    lazy = nn.LazyConv2d(2, 2)
    _expect_rejection(nn.Sequential(lazy), torch.zeros(2, 1, 3, 3), "lazy")


def test_rejects_shared_conv_and_modified_dplstm() -> None:
    shared = nn.Conv1d(2, 2, 1)
    _expect_rejection(
        nn.Sequential(shared, nn.ReLU(), shared), torch.zeros(2, 2, 3), "more than once"
    )
    lstm = DPLSTM(2, 3)
    lstm.hh.register_forward_hook(lambda module, args, out: out * 2)
    _expect_rejection(nn.Sequential(lstm), torch.zeros(2, 2, 4), "'0.hh'.*hooks")

    class Scaled(nn.Linear):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return 2 * super().forward(x)

    lstm = DPLSTM(2, 3)
    lstm.ih = Scaled(2, 12)
    _expect_rejection(nn.Sequential(lstm), torch.zeros(2, 2, 4), "'ih' must be a plain nn.Linear")
    lstm = DPLSTM(2, 3)
    nn.utils.parametrizations.weight_norm(lstm.hh)
    _expect_rejection(nn.Sequential(lstm), torch.zeros(2, 2, 4), "parametrizations")

    class Reversed(DPLSTM):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x.flip(2))

    _expect_rejection(
        nn.Sequential(Reversed(2, 3)), torch.zeros(2, 2, 4), "overrides DPLSTM.forward"
    )


def test_memory_caps_do_not_change_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """The automatic choice under tight memory caps (chunks, nothing kept) gives the same sums."""
    model, x, targets = _problem("dcgan_like", n=10)
    loss = _batch_loss(targets)
    expected = clipped_gradient_sum(model, x, loss, 0.1)
    monkeypatch.setattr(ghost_layers, "MAX_FORMED_BYTES", 0)
    monkeypatch.setattr(ghost_layers, "CHUNK_BYTES", 1)
    _assert_same(clipped_gradient_sum(model, x, loss, 0.1), expected, rtol=1e-10)
