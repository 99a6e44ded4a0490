"""Per-example clipped gradient sums for any network and any per-example loss (torch.func).

The ghost-norm path (``dpforge.privacy.clipping``) is fast but needs a plain MLP and a loss
that is a function of the network's output rows. Some losses are not: the WGAN-GP gradient
penalty differentiates the critic with respect to its input, so an example's loss involves a
second derivative. Here every example's gradient is computed explicitly with
``torch.func.vmap(torch.func.grad(...))``: slower (memory grows with batch x parameters) but
exact for any differentiable loss, and obviously correct, which also makes it the oracle of the
fast path in the tests.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from dpforge.privacy.clipping import ClippedGradients, clip_factors

# loss(forward, *one_example) -> scalar; ``forward(x)`` runs the network on a batch ``x``.
ExampleLoss = Callable[..., torch.Tensor]


def per_example_gradients(
    module: nn.Module, example_loss: ExampleLoss, examples: tuple[torch.Tensor, ...]
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Every example's gradient, as {parameter name: (n, *shape)}, and the losses (n,)."""
    params = {name: p.detach() for name, p in module.named_parameters() if p.requires_grad}

    def loss_of(parameters: dict[str, torch.Tensor], *example: torch.Tensor) -> torch.Tensor:
        def forward(x: torch.Tensor) -> torch.Tensor:
            return functional_call(module, parameters, (x,))

        loss = example_loss(forward, *example)
        return loss, loss.detach()

    in_dims = (None,) + (0,) * len(examples)
    grads, losses = vmap(grad(loss_of, has_aux=True), in_dims=in_dims)(params, *examples)
    return grads, losses


def clipped_sum_of_example_gradients(
    module: nn.Module,
    example_loss: ExampleLoss,
    examples: tuple[torch.Tensor, ...],
    clip_norm: float,
) -> ClippedGradients:
    """Sum over examples of each example's gradient clipped to ``clip_norm`` (per parameter,
    in ``module.parameters()`` order; zeros for frozen parameters)."""
    grads, losses = per_example_gradients(module, example_loss, examples)
    return clip_and_sum(module, grads, losses, clip_norm)


def flat_example_gradients(grads: dict[str, torch.Tensor]) -> torch.Tensor:
    """The per-example gradients as one (n, number of parameters) matrix."""
    return torch.cat([g.reshape(g.shape[0], -1) for g in grads.values()], dim=1)


def _example_norms(grads: dict[str, torch.Tensor], losses: torch.Tensor) -> torch.Tensor:
    """Each example's gradient norm, summed in float64 (clipping must not see it too small)."""
    n = losses.shape[0]
    if not grads:
        return losses.new_zeros(n)
    squares = [g.reshape(n, -1).double().square().sum(1) for g in grads.values()]
    return torch.stack(squares).sum(0).sqrt().to(next(iter(grads.values())).dtype)


def clip_and_sum(
    module: nn.Module,
    grads: dict[str, torch.Tensor],
    losses: torch.Tensor,
    clip_norm: float,
    groups: torch.Tensor | None = None,
    num_groups: int | None = None,
) -> ClippedGradients:
    """Clip each example's gradient (from :func:`per_example_gradients`) and sum them; with
    ``groups`` ((n,) int64, a person's rows under a privacy unit), each group's SUMMED gradient
    is clipped instead (user-level DP-SGD), and ``norms`` has one entry per group."""
    if groups is not None:
        grads, losses = _group_sums(grads, losses, groups, num_groups)
    norms = _example_norms(grads, losses)
    factors = clip_factors(norms, clip_norm)
    sums = []
    for name, param in module.named_parameters():
        if name in grads:
            g = grads[name]
            sums.append((g * factors.view(-1, *([1] * (g.dim() - 1)))).sum(0))
        else:
            sums.append(torch.zeros_like(param))
    return ClippedGradients(grads=sums, norms=norms, losses=losses)


def _group_sums(
    grads: dict[str, torch.Tensor],
    losses: torch.Tensor,
    groups: torch.Tensor,
    num_groups: int | None,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Per-example gradients (and losses) summed per group: (groups, *shape)."""
    n = losses.shape[0]
    if groups.shape != (n,) or groups.dtype != torch.int64:
        raise ValueError(f"groups must be an int64 tensor of shape ({n},), one per example")
    count = (int(groups.max()) + 1 if n else 0) if num_groups is None else num_groups
    summed = {
        name: g.new_zeros((count, *g.shape[1:])).index_add_(0, groups, g)
        for name, g in grads.items()
    }
    return summed, losses.new_zeros(count).index_add_(0, groups, losses)
