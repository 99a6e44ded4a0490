"""Fitting a generator to an anchor loss: Adam on the generator alone, batches with every class
in turn, one intra-op thread on CPU (moved out of :mod:`dpforge.statistics.anchor`, which
re-exports them)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from dpforge.statistics.features import FeatureAnchorConfig
    from dpforge.statistics.phase_steps import AnchorPhase

__all__ = ["single_thread", "stratified_labels", "train_anchor"]


def stratified_labels(n: int, n_classes: int, device: torch.device | str) -> torch.Tensor | None:
    """Labels 0..K-1 in turn: every class gets n/K generated rows, rare classes included."""
    if n_classes == 0:
        return None
    return torch.arange(n, device=device) % n_classes


def train_anchor(
    generator: torch.nn.Module,
    loss: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor],
    n_classes: int,
    config: AnchorPhase | FeatureAnchorConfig,
    rng: torch.Generator,
    *,
    betas: tuple[float, float] = (0.9, 0.999),
    one_thread: bool = True,
) -> float:
    """Adam on the generator alone against an anchor loss (lr decaying linearly to 0 over
    ``config.steps``, batches of ``config.batch_size`` with stratified labels); returns the
    final loss. Used for tables (:class:`AnchorLoss`) and arrays (the embedding loss).

    The loss reads only noisy releases and generated records, so the value is public.
    ``one_thread``: run on one intra-op thread (see :func:`single_thread`).
    """
    optimizer = torch.optim.Adam(generator.parameters(), lr=config.lr, betas=betas)
    decay = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: 1.0 - i / max(1, config.steps))
    device = next(generator.parameters()).device
    labels = stratified_labels(config.batch_size, n_classes, device)
    value = float("nan")
    with single_thread(device) if one_thread else nullcontext():
        for _ in range(config.steps):
            z = generator.sample_latent(config.batch_size, rng)
            current = loss(generator(z, labels), labels)
            optimizer.zero_grad(set_to_none=True)
            current.backward()
            optimizer.step()
            decay.step()
            value = float(current.detach())
    return value


@contextmanager
def single_thread(device: torch.device) -> Iterator[None]:
    """One intra-op thread on CPU for the anchor's many small operations: measured 48 ms per
    step against 290 ms with two threads on a busy 2-core machine
    (bench/results/tables/anchor_defaults.md)."""
    if torch.device(device).type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
