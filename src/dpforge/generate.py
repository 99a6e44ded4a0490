"""Synthetic records from a fitted generator: post-processing, free of privacy cost.

Labels are drawn from the (uniform, declared or DP-estimated) label prior, or fixed by a
condition on the label; the generator's outputs are decoded by the run's encoder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from dpforge.data.arrays import ArrayData
from dpforge.data.encoder import SOFTMAX
from dpforge.data.rules import abiding_rows
from dpforge.data.tables import canonical_text
from dpforge.errors import DataError
from dpforge.kinds import kind_of
from dpforge.statistics.marginal_release import MarginalRelease
from dpforge.statistics.marginals import indexed_cells
from dpforge.statistics.match_stream import MatchStream
from dpforge.statistics.particles import Draw, MoveSettings, SampleRelease, drawn_moved
from dpforge.statistics.reweight import MarginalTargets, ReweightSettings

# ``n`` generated records (encoded, in [-1, 1]) for the labels, drawn by ``Draw`` and moved (or
# selected and moved) to the release: post-processing only.
Mover = Callable[[Draw, "torch.Tensor | None", int], torch.Tensor]
SAMPLE_CHUNK_ROWS = 20_000  # rows generated and decoded at once when streaming


@dataclass(frozen=True)
class FittedModel:
    """What sampling reads of a fit (or of a loaded model folder): nothing else of the facade."""

    schema: Any
    encoder: Any
    generator: torch.nn.Module
    label_prior: np.ndarray | None
    device: str
    release: SampleRelease | MarginalRelease | None = None


@dataclass(frozen=True)
class RowMatcher:
    """Table rows matched to the stored marginals (:mod:`dpforge.statistics.reweight`), one
    :class:`MatchStream` per conditioned class (None: none) through the chunks of one sample
    call, so that the weights are fitted once and carried from chunk to chunk."""

    release: MarginalRelease
    settings: ReweightSettings
    streams: dict[int | None, MatchStream] = field(default_factory=dict, compare=False)

    def stream(self, label_name: str | None, label_class: int | None) -> MatchStream:
        """The stream of ``label_class`` (made at its first chunk)."""
        if label_class not in self.streams:
            targets = MarginalTargets(self.release.marginals, label_name, label_class)
            self.streams[label_class] = MatchStream(targets, self.settings)
        return self.streams[label_class]


def sample_mover(
    release: SampleRelease | MarginalRelease | None,
    move: bool | MoveSettings | ReweightSettings | None,
    by_default: bool,
) -> Mover | RowMatcher | None:
    """The post-processing ``move`` asks for: None (default) moves (series) or matches (tables)
    when the model holds the release and its kind does so ``by_default`` (the kind's
    ``moved_by_default``); True (the default settings)
    or settings need the release (refused without it); False leaves the samples as drawn."""
    if move is not None and not isinstance(move, (bool, MoveSettings, ReweightSettings)):
        raise DataError(
            f"move must be True, False, None, a MoveSettings or a ReweightSettings, got {move!r}"
        )
    if move is None:
        move = release is not None and by_default
    if move is False:
        return None
    if release is None:
        raise DataError(
            "this model holds no release to match samples to (a model folder saved before "
            "dpforge stored it, or a model fitted without anchoring): sample with move=False "
            "(--no-move), or fit again to store the release"
        )
    if isinstance(release, MarginalRelease):
        if isinstance(move, MoveSettings):
            raise DataError("a table model matches rows with ReweightSettings, not MoveSettings")
        return RowMatcher(
            release, move if isinstance(move, ReweightSettings) else ReweightSettings()
        )
    if isinstance(move, ReweightSettings):
        raise DataError("ReweightSettings are for tables; series and images take MoveSettings")
    settings = move if isinstance(move, MoveSettings) else MoveSettings()
    loss = release.loss()
    return lambda draw, labels, n: drawn_moved(draw, labels, n, loss, settings)


def sample_chunks(
    model: FittedModel,
    n: int,
    conditions: dict[str, Any],
    generator: torch.Generator,
    mover: Mover | RowMatcher | None,
    chunk_rows: int,
) -> Iterator[pd.DataFrame | ArrayData]:
    """``n`` records as consecutive chunks of at most ``chunk_rows``, one random stream
    through them (the same seed and chunk size give the same records)."""
    for start in range(0, n, chunk_rows):
        yield sample_batch(model, min(chunk_rows, n - start), conditions, generator, mover)


def default_mover(model: FittedModel, move: Any) -> Mover | RowMatcher | None:
    """:func:`sample_mover` for ``model``'s stored release and kind."""
    return sample_mover(model.release, move, kind_of(model.schema).moved_by_default(model.schema))


def sample_batch(
    model: FittedModel,
    n: int,
    conditions: dict[str, Any],
    generator: torch.Generator,
    mover: Mover | None = None,
) -> pd.DataFrame | ArrayData:
    """``n`` records from ``model``'s fitted generator (moved by ``mover`` if given), decoded;
    rows that break a rule of the schema are drawn again, then repaired
    (:mod:`dpforge.data.rules`); table rows matched to the release by a :class:`RowMatcher`."""
    if isinstance(mover, RowMatcher):
        return _matched(model, n, conditions, generator, mover)
    labels = condition_labels(model, n, conditions, generator)
    rows = _decode(model, _generated(model, labels, n, generator, mover), labels, generator)
    return _abiding(model, rows, labels, generator)


def _abiding(
    model: FittedModel, rows: Any, labels: torch.Tensor | None, generator: torch.Generator
):
    """``rows`` with those that break a rule of the schema drawn again, then repaired."""
    schema = getattr(model.encoder, "schema", None)
    if not getattr(schema, "rules", ()):
        return rows
    labels_np = None if labels is None else labels.cpu().numpy()

    def draw(index: np.ndarray) -> pd.DataFrame:
        chosen = None if labels is None else labels[torch.as_tensor(index, device=labels.device)]
        return _decode(model, _generated(model, chosen, len(index), generator), chosen, generator)

    seed = int(torch.randint(2**62, (1,), generator=generator))
    return abiding_rows(rows, labels_np, schema, draw, np.random.default_rng(seed))


def _matched(
    model: FittedModel,
    n: int,
    conditions: dict[str, Any],
    generator: torch.Generator,
    matcher: RowMatcher,
) -> pd.DataFrame:
    """``n`` table rows, chunk by chunk: a pool drawn down to its cells for each, weighted to
    the stored marginals (given the conditioned class, if any) and resampled by the
    matcher's stream (:mod:`dpforge.statistics.match_stream`), then decoded (a pool row drawn
    twice gets values inside its cells and keys of its own). Post-processing of the release."""
    encoder, settings = model.encoder, matcher.settings
    name, _ = kind_of(model.schema).label(model.schema)
    stream = matcher.stream(name, condition_class(model, conditions))
    rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=generator)))
    softmax = [s for s in encoder.spans if s.activation == SOFTMAX]
    parts = []
    for start in range(0, n, settings.chunk):
        size = min(settings.chunk, n - start)
        cells, dense, labels = _pool(model, stream.pool_rows(size), conditions, generator, rng)
        pool = indexed_cells(cells.T, softmax, labels, name, encoder.n_classes)
        chosen = stream.chunk_index(pool, size, rng)
        picked = None if labels is None else torch.as_tensor(labels[chosen], device=model.device)
        features = encoder.with_cells(cells[chosen], dense[chosen])
        rows = _decode(model, features, picked, generator)
        parts.append(_abiding(model, rows, picked, generator))
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


POOL_BATCH = 16_384  # generator outputs held at once while a pool is drawn down to its cells


def _pool(model: FittedModel, size: int, conditions, generator: torch.Generator, rng):
    """``size`` generated rows as their cells (rows, softmax blocks), their other outputs and
    their labels, drawn ``POOL_BATCH`` at a time so that memory stays at a few integers a row."""
    encoder, dense_at = model.encoder, model.encoder.dense_positions()
    cells, dense, labels = [], [], []
    for start in range(0, size, POOL_BATCH):
        count = min(POOL_BATCH, size - start)
        chosen = condition_labels(model, count, conditions, generator)
        drawn = _generated(model, chosen, count, generator)
        cells.append(encoder.picked_cells(drawn, rng))
        dense.append(drawn[:, dense_at])
        labels.append(None if chosen is None else chosen.cpu().numpy())
    label = None if labels[0] is None else np.concatenate(labels)
    return np.concatenate(cells), np.concatenate(dense), label


def _generated(
    model: FittedModel,
    labels: torch.Tensor | None,
    n: int,
    generator: torch.Generator,
    mover: Mover | None = None,
) -> np.ndarray:
    """``n`` generator outputs for ``labels`` (drawn and moved by ``mover``), as numpy."""

    def draw(chosen: torch.Tensor | None, count: int) -> torch.Tensor:
        with torch.no_grad():
            return model.generator(model.generator.sample_latent(count, generator), chosen)

    rows = draw(labels, n) if mover is None else mover(draw, labels, n)
    return rows.cpu().numpy()


def _decode(
    model: FittedModel,
    features: np.ndarray,
    labels: torch.Tensor | None,
    generator: torch.Generator,
) -> pd.DataFrame | ArrayData:
    """Generator outputs decoded by the encoder (cells drawn with a seed from ``generator``)."""
    labels_np = None if labels is None else labels.cpu().numpy()
    if not _draws_cells(model.encoder):
        return model.encoder.inverse_transform(features, labels_np)
    seed = int(torch.randint(2**62, (1,), generator=generator))
    return model.encoder.inverse_transform(features, labels_np, np.random.default_rng(seed))


def _draws_cells(encoder: Any) -> bool:
    """Whether decoding draws from the generator's cells (binned or nullable columns, fresh
    keys) with a seeded generator, rather than taking each block's most probable value."""
    if getattr(encoder, "n_bins", None) is not None or getattr(encoder, "bins", None):
        return True
    schema = getattr(encoder, "schema", None)
    return any(c.type == "surrogate" for c in getattr(schema, "columns", ()))


def condition_class(model: FittedModel, conditions: dict[str, Any]) -> int | None:
    """The class index a condition on the label fixes (None without a condition)."""
    name, classes = kind_of(model.schema).label(model.schema)
    unknown = [k for k in conditions if name is None or k != name]
    if unknown:
        raise DataError(
            f"can only condition on the label ({name or 'this model has none'}); got {unknown}"
        )
    if name is None or not conditions:
        return None
    value = canonical_text(conditions[name])
    if value not in classes:
        raise DataError(
            f"condition {name}={value!r}: not a class of '{name}'; choose one of {list(classes)}"
        )
    return classes.index(value)


def condition_labels(
    model: FittedModel, n: int, conditions: dict[str, Any], generator: torch.Generator
) -> torch.Tensor | None:
    """The label of each record: the condition's class, else drawn from the label prior."""
    fixed = condition_class(model, conditions)
    if kind_of(model.schema).label(model.schema)[0] is None:
        return None
    if fixed is not None:
        return torch.full((n,), fixed, dtype=torch.long, device=model.device)
    prior = torch.as_tensor(model.label_prior, dtype=torch.float32, device=model.device)
    return torch.multinomial(prior, n, replacement=True, generator=generator)
