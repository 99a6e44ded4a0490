"""One federated site: its records stay here; it answers the server's queries with noise.

A query is data (a JSON-able dict and, for pair scores, arrays), never code: the site rebuilds
the public functions it names (cell rules, the encoder) from the public schema and releases.
Each answer is an exact local aggregate plus this site's noise (:mod:`.federated_trust`), and
its event is written to the site's own ledger before the answer leaves. Nothing the site
returns or raises holds an exact value: refusal messages are redacted before they are sent.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import keep_released_rows, validate_table
from dpforge.engines.aggregates import rule_from_dict
from dpforge.engines.federated_trust import Trust, check_range
from dpforge.errors import DataError, DpforgeError, PrivacyError, redacted_errors
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.table import Schema
from dpforge.statistics.cells import bins_from_edges
from dpforge.statistics.marginals import count_tables, encoded_cells
from dpforge.storage import atomic_write

__all__ = ["Site", "describe_encoder", "encoder_from_dict"]


def describe_encoder(encoder: TableEncoder) -> dict[str, Any]:
    """The public description of an encoder: schema, bins rule, DP-placed cell edges."""
    return {
        "schema": encoder.schema.to_dict(),
        "n_bins": encoder.n_bins,
        "edges": {n: b.edges.tolist() for n, b in encoder.placed_cells.items()},
    }


def encoder_from_dict(d: dict[str, Any]) -> TableEncoder:
    schema = Schema.from_dict(d["schema"])
    cells = bins_from_edges(schema.feature_columns, d["edges"])
    return TableEncoder(schema, n_bins=d["n_bins"], cells=cells)


class SiteLedger(PrivacyLedger):
    """A site's own ledger. With a ``cap`` (epsilon, delta) a release that would take it past
    the cap is refused before it runs (nothing is answered): a site that trusts nobody
    bounds what any sequence of server queries can learn about its records."""

    def __init__(self, entries=(), cap: tuple[float, float] | None = None) -> None:
        super().__init__(entries)
        self.cap = cap

    def record(self, name: str, event: Any, extra_delta: float = 0.0) -> None:
        if self.cap is not None:
            trial = PrivacyLedger(self.entries)
            trial.record(name, event, extra_delta)
            if not _within(trial, self.cap):
                raise PrivacyError(
                    f"this site refuses '{name}': its own ledger would pass its cap "
                    f"(epsilon {self.cap[0]:g}, delta {self.cap[1]:g})"
                )
        super().record(name, event, extra_delta)


def _within(ledger: PrivacyLedger, cap: tuple[float, float]) -> bool:
    try:
        return ledger.epsilon(cap[1]) <= cap[0] * (1 + 1e-3)  # PLD discretisation slack
    except PrivacyError:  # the thresholds' delta alone passes the cap's
        return False


class Site:
    """A site's records, its noise (``trust``) and its own ledger.

    A deployed ClientApp keeps no Python object between messages, so everything a site must
    remember (its checks and filters, its ledger, how many answers it gave) is its
    :meth:`state`, which Flower keeps in the site's ``Context``; :meth:`restore` rebuilds it.
    """

    def __init__(self, records: pd.DataFrame, trust: Trust, rng: np.random.Generator,
                 cap: tuple[float, float] | None = None) -> None:  # fmt: skip
        self._raw, self._table = records, None
        self.trust, self.rng = trust, rng
        self.ledger = SiteLedger(cap=cap)
        self._cells: tuple[str, Any] | None = None
        self._steps: list[dict[str, Any]] = []  # the checks and filters applied, in order
        self.answers = 0

    def state(self) -> dict[str, Any]:
        """What the site must remember (public queries, its ledger): JSON."""
        return {"steps": self._steps, "ledger": self.ledger.to_dict(), "answers": self.answers}

    @classmethod
    def restore(
        cls,
        records: pd.DataFrame,
        trust: Trust,
        rng: np.random.Generator,
        state: dict[str, Any] | None,
        cap: tuple[float, float] | None = None,
    ) -> Site:
        """The site as :meth:`state` left it (checks and filters applied again)."""
        site = cls(records, trust, rng, cap)
        for step in (state or {}).get("steps", []):
            site.answer(step, [])
        if state:
            site.ledger = SiteLedger(PrivacyLedger.from_dict(state["ledger"]).entries, cap)
            site.answers = int(state["answers"])
        return site

    def answer(self, query: dict[str, Any], arrays: list[np.ndarray]) -> Any:
        """The answer to one query (refusals carry redacted messages only)."""
        if query.get("trust", self.trust.key()) != self.trust.key():
            raise PrivacyError(
                f"this site's trust model is {self.trust.key()}, the server's "
                f"{query['trust']}: the noise shares would not add up; refused"
            )
        with redacted_errors(True):
            answer = getattr(self, "_" + query["op"])(query, arrays)
        self.answers += 1
        return answer

    # ------------------------------------------------------------------ no release
    def _validate(self, query: dict, arrays: list) -> None:
        schema = Schema.from_dict(query["schema"])  # the label's two classes: a global check
        local = replace(schema, label=None, label_prior="uniform")
        self._table = validate_table(self._raw, local, out_of_bounds=query["out_of_bounds"])
        self._steps, self._cells = [query], None

    def _released(self, query: dict, arrays: list) -> None:
        self._table = keep_released_rows(self._checked(), Schema.from_dict(query["schema"]))
        self._steps, self._cells = [*self._steps, query], None

    # ------------------------------------------------------------------ releases
    def _size(self, query: dict, arrays: list) -> np.ndarray:
        exact = np.array([float(len(self._checked()))])
        return self._noisy(exact, query, 1.0, "record count")

    def _bincount(self, query: dict, arrays: list) -> np.ndarray:
        rule = rule_from_dict(query["rule"])
        values = self._checked()[query["column"]].to_numpy()
        cells = np.asarray(rule(values), dtype=np.int64)
        exact = np.bincount(cells[cells >= 0], minlength=int(query["size"])).astype(np.float64)
        return self._noisy(exact, query, 1.0, f"histogram of '{query['column']}'")

    def _frequent(self, query: dict, arrays: list) -> list[str]:
        """The Gaussian sparse histogram's released values, thresholded here at full noise."""
        values = self._checked()[query["column"]]
        counts = values[values.notna()].astype(str).value_counts().sort_index()
        std, threshold = float(query["std"]), float(query["threshold"])
        self.trust.record_threshold(
            self.ledger, f"categories of '{query['column']}'", std, threshold
        )
        noisy = counts.to_numpy(dtype=float) + std * self.rng.standard_normal(len(counts))
        return [str(v) for v, c in zip(counts.index, noisy, strict=True) if c >= threshold]

    def _counts(self, query: dict, arrays: list) -> np.ndarray:
        marginals = [tuple(m) for m in query["marginals"]]
        tables = count_tables(self._cells_of(query), marginals)
        exact = np.concatenate([t.ravel() for t in tables])
        l2 = float(np.sqrt(len(marginals)))
        return self._noisy(exact, query, l2, f"{len(marginals)} marginals")

    def _scores(self, query: dict, arrays: list) -> np.ndarray:
        """Each pair's L1 distance between this site's table and the model scaled to this
        site's own size: one record moves its table by 1 and the scaled model by 1 (L1), so
        each score by at most 2 (``SiteTrust.score_sensitivity``)."""
        pairs = [tuple(p) for p in query["pairs"]]
        tables = count_tables(self._cells_of(query), pairs)
        n = float(len(self._checked()))
        exact = np.array([np.abs(t - n * m).sum() for t, m in zip(tables, arrays, strict=True)])
        l2 = self.trust.score_sensitivity(query.get("grid")) * np.sqrt(len(pairs))
        return self._noisy(
            exact, query, l2, f"scores of {len(pairs)} pairs", per=np.sqrt(len(pairs))
        )

    # ------------------------------------------------------------------ helpers
    def _noisy(self, exact, query: dict, l2: float, what: str, per: float | None = None):
        """``exact`` + this site's noise; ``query['std']`` is the central std of a release of
        L2 sensitivity ``per`` (default ``l2``), which this site's sensitivity ``l2`` scales."""
        std = float(query["std"]) * l2 / (l2 if per is None else per)
        noisy = self.trust.noisy(exact, std, l2, query.get("grid"), self.ledger, what, self.rng)
        if "clip" in query:
            check_range(noisy, float(query["clip"]), what)
        return noisy

    def _checked(self) -> pd.DataFrame:
        if self._table is None:
            raise DataError("this site has not checked its records yet (validate first)")
        return self._table

    def _cells_of(self, query: dict) -> Any:
        key = json.dumps(query["encoder"], sort_keys=True)
        if self._cells is None or self._cells[0] != key:
            encoder = encoder_from_dict(query["encoder"])
            cells = encoded_cells(encoder, self._checked(), query.get("label"))
            self._cells = (key, cells)
        return self._cells[1]


# -- a deployed site's node config: its own cap and ledger file (tables and images alike) -------
def site_cap(config: Any) -> tuple[float, float] | None:
    """The site's own (epsilon, delta) cap, if its node config sets one (both or neither)."""
    given = [k for k in ("max-epsilon", "max-delta") if k in config]
    if not given:
        return None
    if len(given) == 1:
        raise DpforgeError("a site's node config sets max-epsilon and max-delta together")
    return float(config["max-epsilon"]), float(config["max-delta"])


def write_site_ledger(config: Any, document: dict) -> None:
    """Rewrite the site's ledger file (its node config's ``ledger``, if any) atomically."""
    path = config.get("ledger")
    if path:
        text = json.dumps(document, indent=2)
        atomic_write(Path(str(path)), lambda p: p.write_text(text), overwrite=True)
