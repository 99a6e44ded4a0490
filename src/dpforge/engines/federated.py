"""The federated engine: the table path's measurements answered by sites that keep their records.

The server runs the usual pipeline; every query its measure stage asks (the record count, the
DP bounds' histograms, the categories, the label prior, the fine histograms, the marginals,
the pair scores and the selected pairs) is sent to the sites as data (a JSON query), each site
answers with its exact local aggregate plus its own noise (:mod:`.federated_site`), and the
server sees only the sum of the noisy answers (``local`` trust) or only the securely aggregated
sum (``secagg``, Flower's SecAgg+) (:mod:`.federated_trust`). The exact aggregates and the
record count never reach the server (:meth:`FederatedEngine.size` is None). How the queries
travel is a :class:`Transport` (Flower messages: :mod:`.federated_flower`).

The categories are thresholded at each site at the full noise and the server takes the union
(post-processing): one record is in one site, so the union costs exactly the central event,
whatever the trust model; SecAgg cannot run on a domain that no party knows. Pair selection
scores each pair at each site against the round-1 estimate scaled to that site's own size (score
sensitivity 2 instead of the central 1: twice the noise, same event), and the server selects
from the noisy sum, as centrally; the sum of per-site distances bounds the central one from above.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpforge.engines.aggregates import CellRule, NoisyCells, NoisyColumn, TableAggregates
from dpforge.engines.base import REFINE, Engine, check_reading_stage
from dpforge.engines.federated_site import describe_encoder
from dpforge.engines.federated_trust import Trust
from dpforge.errors import DpforgeError, PrivacyError

REFINE_NOTE = (
    "the federated engine measures the table path's statistics at the sites; the discriminator "
    "(refine) would need records in one place: keep the anchoring's share at 1 (the default)"
)


class Transport(ABC):
    """How queries reach the sites and how their answers are combined."""

    trust: Trust

    @abstractmethod
    def command(self, query: dict[str, Any]) -> None:
        """Every site runs ``query`` (no release: checks, filters)."""

    @abstractmethod
    def noisy_sum(self, query: dict[str, Any], arrays: Sequence[np.ndarray]) -> np.ndarray:
        """The sum over the sites of their noisy answers (securely aggregated under secagg)."""

    @abstractmethod
    def union(self, query: dict[str, Any]) -> list[str]:
        """The union of the sites' released values (thresholded at each site)."""


class FederatedEngine(Engine):
    """A table split over sites: the pipeline's measure stage asks them, never the records."""

    supports_refine = False
    bounds_persons = False  # a person's rows may sit at several sites
    supports_checkpoints = False  # resuming would need the sites' own state: not offered

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._table = FederatedTable(transport)

    def _records(self) -> FederatedTable:
        return self._table

    def read(self, stage: str) -> FederatedTable:
        check_reading_stage(stage)
        if stage == REFINE:
            raise DpforgeError(REFINE_NOTE)
        return self._table

    def size(self, stage: str) -> None:
        check_reading_stage(stage)
        return None  # the server never learns N: see noisy_size

    def noisy_size(self, stage: str, std: float) -> float:
        check_reading_stage(stage)
        return float(self.transport.noisy_sum({"op": "size", "std": std}, [])[0])

    def replace(self, records: FederatedTable) -> None:
        self._table = records


class FederatedTable(TableAggregates):
    """The sites' records, checked and filtered where they are."""

    adds_noise = True

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.noise_factor = transport.trust.noise_factor

    def validated(self, schema: Any, out_of_bounds: str) -> FederatedTable:
        query = {"op": "validate", "schema": schema.to_dict(), "out_of_bounds": out_of_bounds}
        self.transport.command(query)
        return self

    def released(self, schema: Any) -> FederatedTable:
        self.transport.command({"op": "released", "schema": schema.to_dict()})
        return self

    def size(self) -> int:
        raise PrivacyError("the federated server never learns the exact number of records")

    def column(self, name: str) -> FederatedColumn:
        return FederatedColumn(self.transport, name)

    def cells(self, encoder: Any, label_name: str | None) -> FederatedCells:
        return FederatedCells(self.transport, encoder, label_name)


class FederatedColumn(NoisyColumn):
    """One column's noisy aggregates, asked of every site."""

    def __init__(self, transport: Transport, name: str) -> None:
        self.transport, self.name = transport, name
        self.noise_factor = transport.trust.noise_factor

    def noisy_bincount(self, rule: CellRule, size: int, std: float) -> np.ndarray:
        query = {"op": "bincount", "column": self.name, "rule": rule.to_dict(), "size": size}
        return self.transport.noisy_sum({**query, "std": std}, [])

    def frequent_values(self, std: float, threshold: float) -> list[str]:
        query = {"op": "frequent", "column": self.name, "std": std, "threshold": threshold}
        return sorted(self.transport.union(query))


class FederatedCells(NoisyCells):
    """The sites encode their records with the public encoder and count its cells."""

    def __init__(self, transport: Transport, encoder: Any, label_name: str | None) -> None:
        self.transport, self.label = transport, label_name
        self.encoder = describe_encoder(encoder)
        self.sizes = {s.column: s.dim for s in encoder.spans if s.activation == "softmax"}
        if label_name is not None:
            self.sizes[label_name] = encoder.n_classes
        self.noise_factor = transport.trust.noise_factor

    def noisy_counts(self, marginals: Sequence[tuple[str, ...]], std: float) -> list[np.ndarray]:
        query = {**self._base("counts", std), "marginals": [list(m) for m in marginals]}
        flat = self.transport.noisy_sum(query, [])
        shapes = [tuple(self.sizes[c] for c in m) for m in marginals]
        bounds = np.cumsum([0] + [int(np.prod(s)) for s in shapes])
        return [
            flat[a:b].reshape(s) for a, b, s in zip(bounds[:-1], bounds[1:], shapes, strict=True)
        ]

    def noisy_scores(self, model: Mapping[tuple[str, str], np.ndarray], std: float) -> np.ndarray:
        query = {**self._base("scores", std), "pairs": [list(p) for p in model]}
        arrays = [np.asarray(m, dtype=np.float64) for m in model.values()]
        return self.transport.noisy_sum(query, arrays)

    def _base(self, op: str, std: float) -> dict[str, Any]:
        return {"op": op, "std": std, "encoder": self.encoder, "label": self.label}
