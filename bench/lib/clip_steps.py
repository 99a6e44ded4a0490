"""The discriminator steps the clipping benchmarks time side by side (one definition each)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

# -- the discriminator steps the clipping benchmarks time side by side ----------------------------
SIGMA = 1.1  # noise multiplier of the timed DP steps
CLIP = 1.0  # clipping bound C of the timed DP steps


def nonprivate_step(model, opt, real, fake) -> None:
    """Plain GAN discriminator step."""
    opt.zero_grad(set_to_none=True)
    real_logits, fake_logits = model(real)[:, 0], model(fake)[:, 0]
    loss = F.binary_cross_entropy_with_logits(
        real_logits, torch.ones_like(real_logits)
    ) + F.binary_cross_entropy_with_logits(fake_logits, torch.zeros_like(fake_logits))
    loss.backward()
    opt.step()


def noisy_update(
    model, opt, summed, batch: int, noise_gen: torch.Generator, sigma: float = SIGMA
) -> None:
    """Add N(0, sigma^2 C^2) to the clipped sum once, divide by the expected batch, step."""
    with torch.no_grad():
        for p, g in zip(model.parameters(), summed, strict=True):
            noise = torch.randn(g.shape, generator=noise_gen, dtype=g.dtype, device=g.device)
            p.grad = g.add_(noise, alpha=sigma * CLIP).div_(batch)
    opt.step()


def dp_vmap_step(model, opt, real, fake, targets, noise_gen) -> None:
    """DP step with per-example gradients materialised by torch.func (the reference)."""
    inputs = torch.cat([real, fake])
    params = {k: v.detach() for k, v in model.named_parameters()}

    def one(p, x, t):
        logit = torch.func.functional_call(model, p, (x.unsqueeze(0),))[0, 0]
        return F.binary_cross_entropy_with_logits(logit, t)

    grads = torch.func.vmap(torch.func.grad(one), in_dims=(None, 0, 0))(params, inputs, targets)
    norms = torch.cat([g.reshape(g.shape[0], -1) for g in grads.values()], dim=1).norm(dim=1)
    factors = torch.clamp(CLIP / (norms + 1e-12), max=1.0)
    summed = [torch.einsum("n,n...->...", factors, g) for g in grads.values()]
    noisy_update(model, opt, summed, real.shape[0], noise_gen)
