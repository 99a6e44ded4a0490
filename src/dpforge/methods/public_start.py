"""A discriminator initialised on public data before the private refinement (issue 24 part 3).

With a declared public image set, DP-CGAN's discriminator may first train WITHOUT privacy on
the public images (target "real") against samples of the anchored generator (target "fake"),
then continue with DP-SGD on the private records. Neither input is private: the public set
may be published as it is, and the anchored generator is a function of DP releases only
(post-processing). So the warm start costs no budget and writes no ledger entry; it never
reads a private record (it runs in the fit stage, which has no access to the engine).

Each warm-start step is the DP-CGAN discriminator step with the noise left out: a uniform
batch of ``batch_size`` public images and as many generated rows, every row's gradient
clipped to C (so the discriminator's weights move on the same scale as in the private steps
that follow) and the sum divided by the batch size, with the method's optimizer at its
starting learning rate. The generator is not trained here.

Public class ``j`` stands for private class ``j mod K`` (as in generator pre-training on the
public set); an unlabelled public set goes round the classes.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from dpforge.errors import PrivacyError
from dpforge.privacy.clipping import clipped_gradient_sum
from dpforge.statistics.perceptual import PublicImages

__all__ = ["NO_PUBLIC_SET", "public_classes", "refuse_without_public", "warm_start_on_public"]

NO_PUBLIC_SET = (
    "public_warm_start_steps trains the discriminator on a "
    "declared public set: pass public_data ([data] public_data), or leave it at 0"
)


def refuse_without_public(options: object, public: object | None) -> None:
    """Refuse a warm start asked for without a declared public set (never silently skipped)."""
    if getattr(options, "public_warm_start_steps", 0) and public is None:
        raise PrivacyError(NO_PUBLIC_SET)


def public_classes(public: PublicImages, n_classes: int) -> np.ndarray | None:
    """The private class each public image stands for (None for an unconditional model)."""
    if n_classes == 0:
        return None
    n = len(public.values)
    labels = np.arange(n) if public.labels is None else np.asarray(public.labels)
    return labels.astype(np.int64) % n_classes


def warm_start_on_public(
    method: object, public: PublicImages, steps: int, generator: torch.Generator
) -> list[float]:
    """Train ``method``'s discriminator ``steps`` non-private steps on ``public`` (real) against
    its current generator (fake); the mean loss of each step (public: no record enters it).
    Deterministic given ``generator`` (every draw comes from it)."""
    device = next(method.discriminator.parameters()).device
    x = torch.as_tensor(public.values, dtype=torch.float32, device=device)
    classes = public_classes(public, method.n_classes)
    y = None if classes is None else torch.as_tensor(classes, device=device)
    batch = method.config.batch_size
    method.set_d_learning_rate(0)
    losses = []
    for _ in range(steps):
        index = torch.randint(len(x), (batch,), generator=generator, device=generator.device)
        index = index.to(device)
        losses.append(_step(method, x[index], None if y is None else y[index], generator))
    return losses


def _step(method, real, real_labels, generator: torch.Generator) -> float:
    """One step: clipped per-row gradients of real (target 1) and generated (target 0) rows,
    summed, divided by the batch size, no noise."""
    batch = real.shape[0]
    with torch.no_grad():
        fake, fake_labels = method.generate(batch, generator, training=True)
    inputs = torch.cat([method.d_input(real, real_labels), method.d_input(fake, fake_labels)])
    targets = torch.cat([inputs.new_ones(batch), inputs.new_zeros(batch)])

    def per_example_loss(logits: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits[:, 0], targets, reduction="none")

    clip = method.config.clip_norm
    clipped = clipped_gradient_sum(method.discriminator, inputs, per_example_loss, clip)
    method.apply_d_gradients(clipped.grads, batch)
    return float(clipped.losses.mean())
