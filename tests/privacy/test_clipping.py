"""Ghost-norm clipping checked against an oracle that materialises per-example gradients.

The oracle is ``torch.func.vmap(torch.func.grad(...))`` over ``functional_call`` (one gradient
per example, computed independently of the module under test); microbatches are checked against
a plain autograd loop over the groups.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dpforge.errors import DpforgeError, PrivacyError
from dpforge.privacy import ghost_layers
from dpforge.privacy.clipping import (
    ClippedGradients,
    UnsupportedLayerError,
    clip_factors,
    clipped_gradient_sum,
    per_example_gradient_norms,
)

Loss = Callable[[torch.Tensor], torch.Tensor]
RTOL = {torch.float64: 1e-5, torch.float32: 2e-4}


# ----------------------------------------------------------------------------- fixtures / helpers


def _init_(model: nn.Module, seed: int, dtype: torch.dtype) -> nn.Module:
    """Cast ``model`` and overwrite its parameters from a seeded generator (no global RNG)."""
    gen = torch.Generator().manual_seed(seed)
    model.to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=dtype) / math.sqrt(p.shape[-1]))
    return model.eval()


ARCHITECTURES: dict[str, Callable[[], nn.Sequential]] = {
    "one_linear": lambda: nn.Sequential(nn.Linear(7, 1)),
    "one_linear_no_bias": lambda: nn.Sequential(nn.Linear(7, 3, bias=False)),
    "two_linear_leaky": lambda: nn.Sequential(
        nn.Linear(7, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1)
    ),
    "three_linear_mixed": lambda: nn.Sequential(
        nn.Flatten(),
        nn.Linear(7, 12, bias=False),
        nn.Tanh(),
        nn.Dropout(0.5),  # eval mode: identity
        nn.Linear(12, 9),
        nn.ReLU(),
        nn.Identity(),
        nn.Linear(9, 3),
        nn.Sigmoid(),
    ),
}


def _bce_loss(targets: torch.Tensor) -> Loss:
    """Per-example BCE-with-logits on the first output column (the discriminator's loss)."""
    return lambda out: F.binary_cross_entropy_with_logits(out[:, 0], targets, reduction="none")


def _ce_loss(labels: torch.Tensor) -> Loss:
    """Per-example cross-entropy (for multi-output heads)."""
    return lambda out: F.cross_entropy(out, labels, reduction="none")


def _problem(arch: str, n: int, dtype: torch.dtype, seed: int = 0):
    """A model, a batch and a per-example loss, all from seeded generators."""
    model = _init_(ARCHITECTURES[arch](), seed, dtype)
    gen = torch.Generator().manual_seed(seed + 1000)
    x = torch.randn(n, 7, generator=gen, dtype=dtype) * 2.0
    out_dim = model(x[:1]).shape[1]
    if out_dim == 1:
        loss = _bce_loss(torch.randint(0, 2, (n,), generator=gen).to(dtype))
    else:
        loss = _ce_loss(torch.randint(0, out_dim, (n,), generator=gen))
    return model, x, loss


def _trainable(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}


def _oracle_per_example_grads(model: nn.Module, x: torch.Tensor, loss: Loss) -> torch.Tensor:
    """(n x P) matrix of flattened per-example gradients over the trainable parameters."""
    params = _trainable(model)

    def one(p: dict[str, torch.Tensor], xi: torch.Tensor, pick: torch.Tensor) -> torch.Tensor:
        out = torch.func.functional_call(model, p, (xi.unsqueeze(0),))
        # The loss closes over per-batch targets: evaluate it on a full-size output whose rows
        # are all this example's output, then pick row i with a one-hot vector.
        full = out.expand(x.shape[0], -1)
        return loss(full) @ pick

    eye = torch.eye(x.shape[0], dtype=x.dtype)
    grads = torch.func.vmap(torch.func.grad(one), in_dims=(None, 0, 0))(params, x, eye)
    return torch.cat([g.reshape(x.shape[0], -1) for g in grads.values()], dim=1)


def _flat(result: ClippedGradients, model: nn.Module) -> torch.Tensor:
    """Flatten the result's gradients of the trainable parameters, in oracle order."""
    return torch.cat(
        [
            g.reshape(-1)
            for g, p in zip(result.grads, model.parameters(), strict=True)
            if p.requires_grad
        ]
    )


def _plain_group_mean_grads(
    model: nn.Module, x: torch.Tensor, loss: Loss, groups: torch.Tensor, n_groups: int
) -> list[torch.Tensor | None]:
    """Each group's mean gradient by plain autograd (None for an empty group)."""
    params = [p for p in model.parameters() if p.requires_grad]
    means: list[torch.Tensor | None] = []
    for b in range(n_groups):
        member = groups == b
        if not member.any():
            means.append(None)
            continue
        losses = loss(model(x))[member]
        grads = torch.autograd.grad(losses.mean(), params)
        means.append(torch.cat([g.reshape(-1) for g in grads]))
    return means


# ---------------------------------------------------------------------- per-example (m = B) path


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("clip_norm", [0.05, 0.7, 1e6])
def test_matches_oracle(arch: str, dtype: torch.dtype, clip_norm: float) -> None:
    model, x, loss = _problem(arch, n=33, dtype=dtype)
    per_ex = _oracle_per_example_grads(model, x, loss)
    oracle_norms = per_ex.norm(dim=1)
    factors = torch.clamp(clip_norm / oracle_norms, max=1.0)
    oracle_sum = (factors.unsqueeze(1) * per_ex).sum(0)

    result = clipped_gradient_sum(model, x, loss, clip_norm)

    rtol = RTOL[dtype]
    torch.testing.assert_close(result.norms, oracle_norms, rtol=rtol, atol=0.0)
    torch.testing.assert_close(_flat(result, model), oracle_sum, rtol=rtol, atol=rtol * 1e-3)
    torch.testing.assert_close(result.losses, loss(model(x)).detach())
    assert all(g.dtype == dtype for g in result.grads)
    if clip_norm == 0.05:
        assert (oracle_norms > clip_norm).float().mean() > 0.9  # the small C clips most
    if clip_norm == 1e6:
        assert (oracle_norms < clip_norm).all()  # the large C clips none


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_infinite_clip_norm_is_the_plain_summed_gradient(arch: str) -> None:
    model, x, loss = _problem(arch, n=20, dtype=torch.float64)
    plain = torch.autograd.grad(loss(model(x)).sum(), list(model.parameters()))
    result = clipped_gradient_sum(model, x, loss, math.inf)
    for got, want in zip(result.grads, plain, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert torch.equal(clip_factors(result.norms, math.inf), torch.ones_like(result.norms))


@pytest.mark.parametrize("clip_norm", [0.01, 0.3, 2.0])
def test_clipped_per_example_norms_are_at_most_c(clip_norm: float) -> None:
    model, x, loss = _problem("three_linear_mixed", n=50, dtype=torch.float32)
    result = clipped_gradient_sum(model, x, loss, clip_norm)
    per_ex = _oracle_per_example_grads(model, x, loss)
    clipped = clip_factors(result.norms, clip_norm).unsqueeze(1) * per_ex
    assert (clipped.norm(dim=1) <= clip_norm * (1 + 1e-6)).all()


def test_single_example_batch() -> None:
    model, x, loss = _problem("two_linear_leaky", n=1, dtype=torch.float64)
    per_ex = _oracle_per_example_grads(model, x, loss)
    result = clipped_gradient_sum(model, x, loss, 0.1)
    torch.testing.assert_close(result.norms, per_ex.norm(dim=1), rtol=1e-10, atol=0.0)
    torch.testing.assert_close(_flat(result, model).norm(), torch.tensor(0.1, dtype=torch.float64))


def test_per_example_gradient_norms_matches_oracle() -> None:
    model, x, loss = _problem("three_linear_mixed", n=17, dtype=torch.float64)
    norms = per_example_gradient_norms(model, x, loss)
    oracle = _oracle_per_example_grads(model, x, loss).norm(dim=1)
    torch.testing.assert_close(norms, oracle, rtol=1e-10, atol=0.0)


def test_dropout_in_training_mode_with_p_zero_and_nested_sequential() -> None:
    net = nn.Sequential(
        nn.Sequential(nn.Linear(7, 10), nn.ELU()), nn.Dropout(0.0), nn.Sequential(nn.Linear(10, 1))
    )
    model = _init_(net, 3, torch.float64).train()
    _, x, loss = _problem("one_linear", n=21, dtype=torch.float64)
    per_ex = _oracle_per_example_grads(model, x, loss)
    result = clipped_gradient_sum(model, x, loss, 0.5)
    factors = torch.clamp(0.5 / per_ex.norm(dim=1), max=1.0)
    torch.testing.assert_close(
        _flat(result, model), (factors.unsqueeze(1) * per_ex).sum(0), rtol=1e-10, atol=1e-12
    )


def test_frozen_parameters_get_zero_gradients_and_no_norm() -> None:
    model, x, loss = _problem("three_linear_mixed", n=19, dtype=torch.float64)
    model[1].weight.requires_grad_(False)  # first Linear frozen entirely (it has no bias)
    model[4].bias.requires_grad_(False)  # only the bias of the second Linear frozen
    per_ex = _oracle_per_example_grads(model, x, loss)  # trainable parameters only
    result = clipped_gradient_sum(model, x, loss, 0.4)
    torch.testing.assert_close(result.norms, per_ex.norm(dim=1), rtol=1e-10, atol=0.0)
    factors = torch.clamp(0.4 / per_ex.norm(dim=1), max=1.0)
    torch.testing.assert_close(
        _flat(result, model), (factors.unsqueeze(1) * per_ex).sum(0), rtol=1e-10, atol=1e-12
    )
    for g, p in zip(result.grads, model.parameters(), strict=True):
        assert g.shape == p.shape
        if not p.requires_grad:
            assert torch.equal(g, torch.zeros_like(p))


def test_all_parameters_frozen_gives_zeros() -> None:
    model, x, loss = _problem("two_linear_leaky", n=5, dtype=torch.float64)
    model.requires_grad_(False)
    result = clipped_gradient_sum(model, x, loss, 1.0)
    assert torch.equal(result.norms, torch.zeros(5, dtype=torch.float64))
    assert all(torch.equal(g, torch.zeros_like(g)) for g in result.grads)


def test_leaves_grad_fields_alone_and_works_under_no_grad() -> None:
    model, x, loss = _problem("two_linear_leaky", n=9, dtype=torch.float64)
    expected = clipped_gradient_sum(model, x, loss, 0.3)
    with torch.no_grad():
        result = clipped_gradient_sum(model, x, loss, 0.3)
    assert all(p.grad is None for p in model.parameters())
    for got, want in zip(result.grads, expected.grads, strict=True):
        torch.testing.assert_close(got, want)


# ------------------------------------------------------------------------- microbatches (m < B)


def _group_oracle(model, x, loss, groups, n_groups, clip_norm):
    means = _plain_group_mean_grads(model, x, loss, groups, n_groups)
    norms = torch.stack([m.norm() if m is not None else x.new_zeros(()) for m in means])
    total = sum(m * min(1.0, clip_norm / float(m.norm())) for m in means if m is not None)
    return norms, total


@pytest.fixture(params=["group_sums", "gram"])
def group_strategy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run microbatch tests with per-group sums formed explicitly, and with the Gram trick."""
    if request.param == "gram":
        monkeypatch.setattr(ghost_layers, "NORM_STRATEGY", "ghost")
    else:  # formed and kept for the clipped sum
        monkeypatch.setattr(ghost_layers, "NORM_STRATEGY", "materialise")
        monkeypatch.setattr(ghost_layers, "KEEP_MIN_POSITIONS", 0)
    return request.param


@pytest.mark.parametrize("arch", ["one_linear_no_bias", "two_linear_leaky", "three_linear_mixed"])
@pytest.mark.parametrize("clip_norm", [0.02, 0.5, math.inf])
@pytest.mark.parametrize("n_groups", [3, 15])
def test_microbatches_match_a_loop_over_groups(
    arch: str, clip_norm: float, n_groups: int, group_strategy: str
) -> None:
    model, x, loss = _problem(arch, n=30, dtype=torch.float64)
    gen = torch.Generator().manual_seed(7)
    groups = torch.randint(0, n_groups, (30,), generator=gen)
    groups[:n_groups] = torch.arange(n_groups)  # every group non-empty
    norms, total = _group_oracle(model, x, loss, groups, n_groups, clip_norm)

    result = clipped_gradient_sum(model, x, loss, clip_norm, groups)

    torch.testing.assert_close(result.norms, norms, rtol=1e-5, atol=0.0)
    torch.testing.assert_close(_flat(result, model), total, rtol=1e-5, atol=1e-10)


def test_microbatches_float32(group_strategy: str) -> None:
    model, x, loss = _problem("two_linear_leaky", n=24, dtype=torch.float32)
    groups = torch.arange(24) % 4
    norms, total = _group_oracle(model, x, loss, groups, 4, 0.05)
    result = clipped_gradient_sum(model, x, loss, 0.05, groups)
    torch.testing.assert_close(result.norms, norms, rtol=2e-4, atol=0.0)
    torch.testing.assert_close(_flat(result, model), total, rtol=2e-4, atol=1e-6)


def test_empty_groups_contribute_nothing(group_strategy: str) -> None:
    model, x, loss = _problem("two_linear_leaky", n=12, dtype=torch.float64)
    groups = torch.tensor([0, 0, 2, 2, 2, 0, 4, 4, 0, 2, 4, 4])  # 1 and 3 empty, 5 declared
    norms, total = _group_oracle(model, x, loss, groups, 6, 0.1)
    result = clipped_gradient_sum(model, x, loss, 0.1, groups, num_groups=6)
    assert result.norms.shape == (6,)
    assert torch.equal(result.norms[[1, 3, 5]], torch.zeros(3, dtype=torch.float64))
    torch.testing.assert_close(result.norms, norms, rtol=1e-8, atol=0.0)
    torch.testing.assert_close(_flat(result, model), total, rtol=1e-8, atol=1e-12)


def test_singleton_groups_equal_per_example_clipping(group_strategy: str) -> None:
    model, x, loss = _problem("three_linear_mixed", n=15, dtype=torch.float64)
    per_example = clipped_gradient_sum(model, x, loss, 0.2)
    grouped = clipped_gradient_sum(model, x, loss, 0.2, torch.arange(15).flip(0))
    torch.testing.assert_close(grouped.norms, per_example.norms.flip(0), rtol=1e-10, atol=0.0)
    for got, want in zip(grouped.grads, per_example.grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_clipped_group_means_are_at_most_c(group_strategy: str) -> None:
    model, x, loss = _problem("three_linear_mixed", n=40, dtype=torch.float32)
    groups = torch.arange(40) % 5
    result = clipped_gradient_sum(model, x, loss, 0.01, groups)
    means = _plain_group_mean_grads(model, x, loss, groups, 5)
    for b, mean in enumerate(means):
        clipped = clip_factors(result.norms, 0.01)[b] * mean
        assert clipped.norm() <= 0.01 * (1 + 1e-6)


@pytest.mark.parametrize(
    "bad",
    [
        torch.tensor([0, 1, 2]),  # wrong length
        torch.zeros(4),  # not integer
        torch.tensor([0, 1, -1, 0]),  # negative id
    ],
)
def test_rejects_malformed_groups(bad: torch.Tensor) -> None:
    model, x, loss = _problem("one_linear", n=4, dtype=torch.float64)
    with pytest.raises(ValueError, match="group"):
        clipped_gradient_sum(model, x, loss, 1.0, bad)


def test_rejects_group_ids_beyond_num_groups() -> None:
    model, x, loss = _problem("one_linear", n=4, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"0\.\.1"):
        clipped_gradient_sum(model, x, loss, 1.0, torch.tensor([0, 1, 2, 0]), num_groups=2)


# ------------------------------------------------------------------------------------- rejection


@pytest.mark.parametrize(
    ("layer", "match"),
    [
        (nn.BatchNorm1d(8), "BatchNorm1d"),
        (nn.BatchNorm1d(8, affine=False), "batch statistics"),
        (nn.Sequential(nn.Unflatten(1, (1, 8)), nn.ConvTranspose1d(1, 1, 3, padding=1)), "Conv"),
        (nn.Sequential(nn.Unflatten(1, (1, 8)), nn.InstanceNorm1d(1, affine=True)), "Instance"),
        (nn.PReLU(), "PReLU"),
    ],
)
def test_rejects_layers_it_cannot_clip(layer: nn.Module, match: str) -> None:
    model = nn.Sequential(nn.Linear(7, 8), layer, nn.Flatten(), nn.Linear(8, 1)).double()
    _, x, loss = _problem("one_linear", n=4, dtype=torch.float64)
    with pytest.raises(UnsupportedLayerError, match=match) as info:
        clipped_gradient_sum(model, x, loss, 1.0)
    assert isinstance(info.value, DpforgeError) and isinstance(info.value, ValueError)


def test_rejects_embedding() -> None:
    model = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(8, 1))
    with pytest.raises(UnsupportedLayerError, match="'0'.*Embedding"):
        clipped_gradient_sum(model, torch.zeros(3, 2, dtype=torch.long), lambda o: o[:, 0], 1.0)


def test_rejects_parameter_outside_linear_layers() -> None:
    model = nn.Sequential(nn.Linear(7, 1))
    model.register_parameter("temperature", nn.Parameter(torch.ones(1)))
    with pytest.raises(UnsupportedLayerError, match="temperature"):
        clipped_gradient_sum(model, torch.zeros(2, 7), lambda o: o[:, 0], 1.0)


def test_rejects_shared_layers_and_parameters() -> None:
    shared = nn.Linear(5, 5)
    with pytest.raises(UnsupportedLayerError, match="more than once"):
        clipped_gradient_sum(
            nn.Sequential(shared, nn.ReLU(), shared), torch.zeros(2, 5), lambda o: o[:, 0], 1.0
        )
    other = nn.Linear(5, 5)
    other.weight = shared.weight
    with pytest.raises(UnsupportedLayerError, match="shared"):
        clipped_gradient_sum(
            nn.Sequential(shared, nn.ReLU(), other), torch.zeros(2, 5), lambda o: o[:, 0], 1.0
        )


def test_rejects_parametrized_linear() -> None:
    model = nn.Sequential(nn.utils.parametrizations.spectral_norm(nn.Linear(7, 3)))
    with pytest.raises(UnsupportedLayerError, match="parametrization"):
        clipped_gradient_sum(model, torch.zeros(2, 7), lambda o: o[:, 0], 1.0)


def test_rejects_non_sequential_and_sequence_inputs() -> None:
    with pytest.raises(UnsupportedLayerError, match="Sequential"):
        clipped_gradient_sum(nn.Linear(3, 1), torch.zeros(2, 3), lambda o: o[:, 0], 1.0)
    model = nn.Sequential(nn.Linear(3, 1))
    with pytest.raises(UnsupportedLayerError, match=r"\(2, 4, 3\)"):
        clipped_gradient_sum(model, torch.zeros(2, 4, 3), lambda o: o[:, 0, 0], 1.0)


@pytest.mark.parametrize("clip_norm", [0.0, -1.0, math.nan, "big"])
def test_rejects_bad_clip_norm(clip_norm: object) -> None:
    model, x, loss = _problem("one_linear", n=4, dtype=torch.float64)
    with pytest.raises(PrivacyError, match="clip_norm"):
        clipped_gradient_sum(model, x, loss, clip_norm)  # type: ignore[arg-type]


def test_rejects_losses_of_the_wrong_shape() -> None:
    model, x, _ = _problem("one_linear", n=4, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"shape \(4,\).*reduction='none'"):
        clipped_gradient_sum(model, x, lambda out: out.mean(), 1.0)
    with pytest.raises(ValueError, match="detach"):
        clipped_gradient_sum(model, x, lambda out: out[:, 0].detach(), 1.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu() -> None:
    model, x, loss_cpu = _problem("three_linear_mixed", n=40, dtype=torch.float64)
    expected = clipped_gradient_sum(model, x, loss_cpu, 0.3, torch.arange(40) % 7)
    _, _, loss_gpu = _problem("three_linear_mixed", n=40, dtype=torch.float64)
    model_gpu = model.to("cuda")

    def loss(out: torch.Tensor) -> torch.Tensor:
        return loss_gpu(out.cpu()).to(out.device)

    result = clipped_gradient_sum(model_gpu, x.cuda(), loss, 0.3, torch.arange(40).cuda() % 7)
    for got, want in zip(result.grads, expected.grads, strict=True):
        assert got.device.type == "cuda"
        torch.testing.assert_close(got.cpu(), want, rtol=1e-10, atol=1e-12)


def test_rejects_custom_forward_and_hooks() -> None:
    class Skip(nn.Sequential):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self[1](self[0](x) + x)

    with pytest.raises(UnsupportedLayerError, match="overrides nn.Sequential.forward"):
        clipped_gradient_sum(
            Skip(nn.Linear(4, 4), nn.Linear(4, 1)), torch.zeros(2, 4), lambda o: o[:, 0], 1.0
        )

    class Scaled(nn.Linear):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return 2 * super().forward(x)

    with pytest.raises(UnsupportedLayerError, match="overrides Linear.forward"):
        clipped_gradient_sum(nn.Sequential(Scaled(4, 1)), torch.zeros(2, 4), lambda o: o[:, 0], 1.0)
    hooked = nn.Linear(4, 1)
    hooked.register_forward_pre_hook(lambda module, args: (args[0] * 3,))
    with pytest.raises(UnsupportedLayerError, match="hooks"):
        clipped_gradient_sum(nn.Sequential(hooked), torch.zeros(2, 4), lambda o: o[:, 0], 1.0)


# ------------------------------------------------------------------- float32 edges (issue 13.8)


def test_clip_factors_never_let_a_float32_norm_exceed_c() -> None:
    """Norms and factors in float32 used to give clipped norms of up to 1.0000002 C."""
    gen = torch.Generator().manual_seed(0)
    scales = torch.exp(torch.randn(20000, 1, generator=gen) * 3)
    x = torch.randn(20000, 300, generator=gen) * scales
    for clip in (1.0, 0.3, 7.0):
        clipped = x * clip_factors(x.norm(dim=1), clip).unsqueeze(1)
        assert (clipped.double().norm(dim=1) <= clip).all()


@pytest.mark.parametrize("path", ["ghost", "torch.func"])
def test_one_clipped_example_never_exceeds_c(path: str) -> None:
    """The clipped gradient of a single example, as summed, has norm <= C (not C (1 + ulp))."""
    from dpforge.privacy.per_example import clipped_sum_of_example_gradients

    model = _init_(nn.Sequential(nn.Linear(50, 1)), 3, torch.float32)
    x = torch.randn(150, 50, generator=torch.Generator().manual_seed(1)) * 10

    def example_loss(forward, row):
        return forward(row[None])[0, 0]

    for row in x:
        if path == "ghost":
            result = clipped_gradient_sum(model, row[None], lambda o: o[:, 0], 0.7)
        else:
            result = clipped_sum_of_example_gradients(model, example_loss, (row[None],), 0.7)
        assert torch.cat([g.flatten() for g in result.grads]).double().norm() <= 0.7
