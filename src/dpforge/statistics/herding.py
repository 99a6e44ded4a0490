"""Selected samples: draw a pool, keep the records whose mean embedding best matches the release.

``n`` i.i.d. draws from the generator match the released per-class mean embedding only on
average; by chance a given set clumps. Kernel herding (Chen, Welling and Smola, UAI 2010) picks,
from ``pool`` x n draws of each class, one record at a time, the one that brings the mean
embedding of those picked so far closest to the release: the picked set spreads over the
distribution the way the release says the data does. It reads only the released per-class
mean embedding (already in the ledger, stored in ``release.safetensors``), the public random
feature map and the generator's draws: post-processing, free of privacy cost. The picked
records are then moved as before (:func:`dpforge.statistics.particles.move_samples`).

``select="margin"`` instead keeps, of each class's draws, those whose features lie furthest on
their own class's side of the release: the largest ``phi . t_k - max_{j != k} phi . t_j`` (the
kernel mean-embedding classifier that the release defines; draws that look like another class
are dropped). It needs two classes or more.

Greedy step ``j`` (``s`` the feature sum of the ``j - 1`` records picked, ``t`` the release's
class mean): pick the unpicked ``i`` minimising ``|s + phi_i - j t|^2``, i.e.
``|phi_i|^2 + 2 phi_i . (s - j t)``. Cost per class: picks x pool x picks x feature dimension.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from dpforge.statistics.array_anchor import EmbeddingLoss

__all__ = ["Draw", "SELECTIONS", "herd", "select_samples"]

SELECTIONS = ("herding", "margin")

# Draws ``count`` generated records (encoded, in [-1, 1]) for ``labels`` (None: unlabelled).
Draw = Callable[["torch.Tensor | None", int], torch.Tensor]


def herd(phi: torch.Tensor, target: torch.Tensor, picks: int) -> torch.Tensor:
    """Indices (sorted) of ``picks`` rows of ``phi`` (candidates x features) picked greedily
    so that their mean is close to ``target``; each row at most once."""
    if not 0 <= picks <= phi.shape[0]:
        raise ValueError(f"cannot pick {picks} of {phi.shape[0]} candidates")
    phi = phi.double()
    target = target.to(phi)
    norms = (phi * phi).sum(dim=1)
    free = torch.ones(phi.shape[0], dtype=torch.bool)
    total = torch.zeros_like(target)
    chosen = []
    for j in range(1, picks + 1):
        score = norms + 2.0 * (phi @ (total - j * target))
        score[~free] = torch.inf
        i = int(torch.argmin(score))
        chosen.append(i)
        free[i] = False
        total += phi[i]
    return torch.as_tensor(sorted(chosen), dtype=torch.long)


def margin_pick(phi: torch.Tensor, targets: torch.Tensor, k: int, picks: int) -> torch.Tensor:
    """Indices (sorted) of the ``picks`` rows of ``phi`` with the largest margin for class
    ``k`` under the release's class means ``targets`` (classes x features)."""
    if targets.shape[0] < 2:
        raise ValueError('select="margin" needs two classes or more: use select="herding"')
    scores = phi.double() @ targets.double().T
    others = torch.cat([scores[:, :k], scores[:, k + 1 :]], dim=1).max(dim=1).values
    picked = torch.topk(scores[:, k] - others, picks).indices
    return picked.sort().values


def select_samples(
    draw: Draw,
    labels: torch.Tensor | None,
    n: int,
    loss: EmbeddingLoss,
    pool: int,
    chunk: int,
    how: str = "herding",
) -> torch.Tensor:
    """``n`` records for ``labels``: per chunk of ``chunk`` records, ``pool`` times as many
    drawn with the same labels, and the records of each class selected from its own draws
    (``how``: "herding" or "margin"; ``pool == 1``: the draws as they come)."""
    if how not in SELECTIONS:
        raise ValueError(f"select must be one of {SELECTIONS}, got {how!r}")
    if pool == 1:
        return draw(labels, n)
    if how == "margin" and (labels is None or loss.n_classes < 2):
        raise ValueError('select="margin" needs two classes or more: use select="herding"')
    out = []
    for start in range(0, n, chunk):
        count = min(chunk, n - start)
        part = None if labels is None else labels[start : start + count]
        out.append(_select_chunk(draw, part, count, loss, pool, how))
    return torch.cat(out)


def _select_chunk(
    draw: Draw, labels: torch.Tensor | None, count: int, loss: EmbeddingLoss, pool: int, how: str
) -> torch.Tensor:
    """One chunk: ``pool`` x ``count`` draws, selected class by class into the labels'
    places."""
    wanted = torch.zeros(count, dtype=torch.long) if labels is None else labels.cpu()
    candidates = draw(None if labels is None else labels.repeat(pool), pool * count)
    drawn = wanted.repeat(pool)
    out = torch.empty((count, *candidates.shape[1:]), dtype=candidates.dtype)
    for k in torch.unique(wanted).tolist():
        places = torch.nonzero(wanted == k).flatten()
        rows = torch.nonzero(drawn == k).flatten()
        with torch.no_grad():
            phi = loss.features(candidates[rows].float())
        if how == "margin":
            picked = margin_pick(phi, loss.targets, k, len(places))
        else:
            picked = herd(phi, loss.targets[k], len(places))
        out[places] = candidates[rows[picked]].cpu()
    return out.to(candidates.device)
