"""The critic steps dpsgd_speed.py times: non-private, ours (ghost clipping, torch.func) and
Opacus' (hooks, ghost), on dpwgan's MNIST conv critic."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from dpforge.nets.conv import condition_channels, conv_critic
from dpforge.privacy.clipping import clipped_gradient_sum
from dpforge.privacy.ghost_penalty import clipped_gradient_sum_with_penalty
from dpforge.privacy.per_example import clip_and_sum, per_example_gradients
from lib.clip_steps import CLIP, noisy_update

SIGMA, LR, GP = 1.0, 0.01, 10.0
SHAPE, CLASSES = (1, 28, 28), 10


def make_critic(seed: int) -> nn.Sequential:
    """dpwgan's default MNIST critic, initialised from a seeded generator."""
    model = conv_critic(SHAPE, CLASSES, (32, 64), "none")
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            bound = 1.0 / math.sqrt(p[0].numel() if p.dim() > 1 else p.shape[0])
            p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * bound)
    return model


class Batch:
    """Real-like records, generated-like rows, partners' interpolates and one-hot labels."""

    def __init__(self, b: int, seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.real = torch.rand(b, *SHAPE, generator=gen) * 2 - 1
        self.fake = torch.rand(b, *SHAPE, generator=gen) * 2 - 1
        partners = torch.rand(b, *SHAPE, generator=gen) * 2 - 1
        mix = torch.rand(b, 1, 1, 1, generator=gen)
        self.hat = mix * self.real + (1 - mix) * partners
        labels = torch.randint(0, CLASSES, (b,), generator=gen)
        self.onehot = nn.functional.one_hot(labels, CLASSES).float()
        self.real_in = condition_channels(self.real, self.onehot)
        self.fake_in = condition_channels(self.fake, self.onehot)
        self.both_in = torch.cat([self.real_in, self.fake_in])
        self.signs = torch.cat([-torch.ones(b), torch.ones(b)])
        self.b = b

    def join(self, x: torch.Tensor) -> torch.Tensor:
        return condition_channels(x, self.onehot)


def penalty(slopes: torch.Tensor) -> torch.Tensor:
    """Per row: GP (||slope|| - 1)^2, as dpwgan computes it."""
    return GP * (torch.sqrt(slopes.flatten(1).square().sum(1) + 1e-12) - 1.0) ** 2


def _real_loss(scores: torch.Tensor) -> torch.Tensor:
    return -scores[:, 0]


def _fake_loss(scores: torch.Tensor) -> torch.Tensor:
    return scores[:, 0]


def np_plain(model, opt, batch: Batch) -> None:
    opt.zero_grad(set_to_none=True)
    loss = -model(batch.real_in)[:, 0].mean() + model(batch.fake_in)[:, 0].mean()
    loss.backward()
    opt.step()


def np_gp(model, opt, batch: Batch) -> None:
    opt.zero_grad(set_to_none=True)
    hat = batch.hat.clone().requires_grad_(True)
    (slopes,) = torch.autograd.grad(model(batch.join(hat))[:, 0].sum(), hat, create_graph=True)
    loss = -model(batch.real_in)[:, 0].mean() + model(batch.fake_in)[:, 0].mean()
    (loss + penalty(slopes).mean()).backward()
    opt.step()


def dp_gp_ghost(model, opt, batch: Batch, gen: torch.Generator) -> None:
    real = clipped_gradient_sum_with_penalty(
        model, batch.real_in, _real_loss, batch.hat, batch.join, penalty, CLIP
    )
    fake = clipped_gradient_sum(model, batch.fake_in, _fake_loss, CLIP)
    summed = [r + f for r, f in zip(real.grads, fake.grads, strict=True)]
    noisy_update(model, opt, summed, batch.b, gen, SIGMA)


def dp_gp_torchfunc(model, opt, batch: Batch, gen: torch.Generator) -> None:
    def example_loss(forward, x_real, x_hat, y):
        score = forward(x_real.unsqueeze(0))[0, 0]
        slope = torch.func.grad(lambda x: forward(condition_channels(x[None], y[None]))[0, 0])(
            x_hat
        )
        return -score + penalty(slope[None])[0]

    grads, losses = per_example_gradients(
        model, example_loss, (batch.real_in, batch.hat, batch.onehot)
    )
    real = clip_and_sum(model, grads, losses, CLIP)
    fake = clipped_gradient_sum(model, batch.fake_in, _fake_loss, CLIP)
    summed = [r + f for r, f in zip(real.grads, fake.grads, strict=True)]
    noisy_update(model, opt, summed, batch.b, gen, SIGMA)


def dp_plain_ghost(model, opt, batch: Batch, gen: torch.Generator) -> None:
    signs = batch.signs
    clipped = clipped_gradient_sum(model, batch.both_in, lambda s: signs * s[:, 0], CLIP)
    noisy_update(model, opt, clipped.grads, batch.b, gen, SIGMA)


class _WassersteinLoss(nn.Module):
    """Per row: sign * score (-1 for records, +1 for generated rows); Opacus' criterion API."""

    def __init__(self) -> None:
        super().__init__()
        self.reduction = "sum"

    def forward(self, scores: torch.Tensor, signs: torch.Tensor) -> torch.Tensor:
        per_row = signs * scores[:, 0]
        return per_row if self.reduction == "none" else per_row.sum()


def _make_private(mode: str, batch: Batch, seed: int, sigma: float, lr: float):
    """An Opacus-wrapped critic (``make_private``) and its step; None without Opacus."""
    try:
        import opacus
    except ImportError:
        return None
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(batch.both_in, batch.signs), batch_size=2 * batch.b
    )
    model = make_critic(seed)
    engine = opacus.PrivacyEngine(accountant="rdp")
    made = engine.make_private(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=lr),
        criterion=_WassersteinLoss(),
        data_loader=loader,
        noise_multiplier=sigma,
        max_grad_norm=CLIP,
        loss_reduction="sum",
        poisson_sampling=False,
        grad_sample_mode=mode,
    )
    return model, _opacus_step(mode, made, batch)


def opacus_steps(batch: Batch, seed: int) -> dict[str, Callable[[], None]]:
    """Opacus' hooks and ghost DP steps on the plain critic loss ({} without Opacus)."""
    steps = {}
    for mode in ("hooks", "ghost"):
        made = _make_private(mode, batch, seed, SIGMA, LR)
        if made is not None:
            steps[f"opacus_{mode}"] = made[1]
    return steps


def same_update_as_opacus(batch: Batch, seed: int) -> dict[str, float]:
    """Check that the compared steps compute the same thing: with sigma = 0 and lr 1, Opacus'
    update (with loss_reduction="sum" it does not divide the clipped sum) against our clipped
    sum; the max difference relative to the largest coordinate."""
    ours = clipped_gradient_sum(
        make_critic(seed), batch.both_in, lambda s: batch.signs * s[:, 0], CLIP
    ).grads
    out = {}
    for mode in ("hooks", "ghost"):
        made = _make_private(mode, batch, seed, 0.0, 1.0)
        if made is None:
            continue
        model, step = made
        before = [p.detach().clone() for p in model.parameters()]
        step()
        after = model.parameters()
        update = torch.cat([(b - a.detach()).flatten() for b, a in zip(before, after, strict=True)])
        expected = torch.cat([g.flatten() for g in ours])
        out[mode] = float((update - expected).abs().max() / expected.abs().max())
    return out


def _opacus_step(mode: str, made: tuple, batch: Batch) -> Callable[[], None]:
    if mode == "hooks":
        module, optimizer, _ = made
        criterion = _WassersteinLoss()
    else:
        module, optimizer, criterion, _ = made
    # With loss_reduction="sum" Opacus does not divide the noisy sum; ours divides by B. The
    # scale differs by a constant only; the work is the same.

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(module(batch.both_in), batch.signs)
        loss.backward()
        optimizer.step()

    return step
