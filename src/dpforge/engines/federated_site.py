"""One federated site: its records stay here; it answers the server's queries with noise.

A query is data (a JSON-able dict and, for pair scores, arrays), never code: the site rebuilds
the public functions it names (cell rules, the encoder) after checking them against its OWN
declared schema and inputs (:mod:`.federated_site_checks`: the server may be malicious, and
every refusal there is a function of public inputs only). Each answer is an exact local
aggregate plus this site's noise (:mod:`.federated_trust`); its event is checked against the
site's cap and written to the site's own ledger, across runs when it keeps a ledger file
(:mod:`.federated_site_ledger`), before the answer leaves. Nothing the site returns or raises
holds an exact value: refusal messages are redacted before they are sent.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import keep_released_rows, validate_table
from dpforge.engines.aggregates import rule_from_dict
from dpforge.engines.federated_site_checks import (
    OPERATIONS,
    checked_column,
    checked_encoder,
    checked_size,
    checked_std,
    checked_tables,
    completed_schema,
    same_schema,
)
from dpforge.engines.federated_site_ledger import SiteLedger
from dpforge.engines.federated_trust import Trust, check_range
from dpforge.errors import DataError, PrivacyError, redacted_errors
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.release_noise import noisy_shares
from dpforge.schema.table import Schema
from dpforge.statistics.cells import bins_from_edges
from dpforge.statistics.marginals import count_tables, encoded_cells

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


class Site:
    """A site's records, its own declared schema, its noise (``trust``) and its own ledger.

    The site trusts nothing from the server (:mod:`.federated_site_checks`): it checks its
    records against ``schema``, its own, with its own ``out_of_bounds`` rule, and refuses
    queries it cannot bound from its own inputs. A deployed ClientApp keeps no Python object
    between messages, so everything a site must remember within a run (its checks and filters,
    how many answers it gave; its ledger when it has no ledger file) is its :meth:`state`,
    which Flower keeps in the site's ``Context``; :meth:`restore` rebuilds it. Its ledger
    across runs is its ledger file (:mod:`.federated_site_ledger`).
    """

    def __init__(self, records: pd.DataFrame, schema: Schema, trust: Trust,
                 rng: np.random.Generator, ledger: SiteLedger | None = None,
                 out_of_bounds: str = "error") -> None:  # fmt: skip
        self._raw, self._table = records, None
        self.schema, self.out_of_bounds = schema, out_of_bounds
        self._accepted = schema  # the schema of the checks and filters applied
        self.trust, self.rng = trust, rng
        self.ledger = SiteLedger() if ledger is None else ledger
        self._cells: tuple[str, Any] | None = None
        self._steps: list[dict[str, Any]] = []  # the checks and filters applied, in order
        self.answers = 0

    def state(self) -> dict[str, Any]:
        """What the site must remember within a run (public queries, its ledger): JSON."""
        return {"steps": self._steps, "ledger": self.ledger.to_dict(), "answers": self.answers}

    @classmethod
    def restore(cls, site: Site, state: dict[str, Any] | None) -> Site:
        """``site`` (new, from its records and own settings) as :meth:`state` left it: checks
        and filters applied again; its ledger from the state unless it keeps a ledger file."""
        for step in (state or {}).get("steps", []):
            site.answer(step, [])
        if state:
            if site.ledger.path is None:
                entries = PrivacyLedger.from_dict(state["ledger"]).entries
                site.ledger = SiteLedger(entries, site.ledger.cap)
            site.answers = int(state["answers"])
        return site

    def answer(self, query: dict[str, Any], arrays: list[np.ndarray]) -> Any:
        """The answer to one query (refusals carry redacted messages only)."""
        if not isinstance(query, dict) or query.get("op") not in OPERATIONS:
            raise PrivacyError("this site refuses the query: an operation it does not know")
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
        """The records against this site's OWN schema and rule (the server's must be them)."""
        schema = same_schema(self.schema, query.get("schema"))
        if query.get("out_of_bounds") != self.out_of_bounds:
            raise PrivacyError(
                f"this site refuses the query: it handles out-of-bounds values by "
                f"'{self.out_of_bounds}', the server asked for {query.get('out_of_bounds')!r}"
            )
        local = replace(schema, label=None, label_prior="uniform")  # the label: a global check
        self._table = validate_table(self._raw, local, out_of_bounds=self.out_of_bounds)
        self._steps, self._cells, self._accepted = [query], None, schema

    def _released(self, query: dict, arrays: list) -> None:
        schema = completed_schema(self.schema, query.get("schema"))
        self._table = keep_released_rows(self._checked(), schema)
        self._steps, self._cells = [*self._steps, query], None
        self._accepted = schema

    # ------------------------------------------------------------------ releases
    def _size(self, query: dict, arrays: list) -> np.ndarray:
        exact = np.array([float(len(self._checked()))])
        return self._noisy(exact, query, 1.0, "record count")

    def _bincount(self, query: dict, arrays: list) -> np.ndarray:
        column = checked_column(self._accepted, query.get("column"))
        size = checked_size(query.get("size"))
        try:
            rule = rule_from_dict(query["rule"])
        except Exception:  # noqa: BLE001 - a malformed rule: refused, nothing read
            raise PrivacyError("this site refuses the query: its cell rule is malformed") from None
        checked_std(query)
        table = self._checked()
        cells = np.asarray(rule(table[column].to_numpy()), dtype=np.int64)
        inside = cells[(cells >= 0) & (cells < size)]  # the shape is the query's, never the data's
        exact = np.bincount(inside, minlength=size).astype(np.float64)
        return self._noisy(exact, query, 1.0, f"histogram of '{column}'")

    def _frequent(self, query: dict, arrays: list) -> list[str]:
        """The Gaussian sparse histogram's released values, thresholded here at full noise."""
        column = checked_column(self._accepted, query.get("column"))
        std, threshold = checked_std(query), checked_std(query, "threshold")
        values = self._checked()[column]
        counts = values[values.notna()].astype(str).value_counts().sort_index()
        self.trust.record_threshold(self.ledger, f"categories of '{column}'", std, threshold)
        noisy = noisy_shares(counts.to_numpy(dtype=float), std, self.rng)
        return [str(v) for v, c in zip(counts.index, noisy, strict=True) if c >= threshold]

    def _counts(self, query: dict, arrays: list) -> np.ndarray:
        cells = self._cells_of(query)
        marginals = self._marginals(query.get("marginals"), cells)
        tables = count_tables(cells, marginals)
        exact = np.concatenate([t.ravel() for t in tables])
        l2 = float(np.sqrt(len(marginals)))
        return self._noisy(exact, query, l2, f"{len(marginals)} marginals")

    def _scores(self, query: dict, arrays: list) -> np.ndarray:
        """Each pair's L1 distance between this site's table and the model scaled to this
        site's own size: one record moves its table by 1 and the scaled model by 1 (L1: the
        model tables are checked to be probability tables), so each score by at most 2
        (``Trust.score_sensitivity``)."""
        cells = self._cells_of(query)
        pairs = self._marginals(query.get("pairs"), cells, width=2)
        models = checked_tables(arrays, [tuple(cells[c].size for c in p) for p in pairs])
        tables = count_tables(cells, pairs)
        n = float(len(self._checked()))
        exact = np.array([np.abs(t - n * m).sum() for t, m in zip(tables, models, strict=True)])
        l2 = self.trust.score_sensitivity(query.get("grid")) * np.sqrt(len(pairs))
        return self._noisy(
            exact, query, l2, f"scores of {len(pairs)} pairs", per=np.sqrt(len(pairs))
        )

    # ------------------------------------------------------------------ helpers
    def _noisy(self, exact, query: dict, l2: float, what: str, per: float | None = None):
        """``exact`` + this site's noise; ``query['std']`` is the central std of a release of
        L2 sensitivity ``per`` (default ``l2``), which this site's sensitivity ``l2`` scales."""
        std = checked_std(query) * l2 / (l2 if per is None else per)
        if self.trust.mode == "secagg":
            checked_std(query, "grid")
        noisy = self.trust.noisy(exact, std, l2, query.get("grid"), self.ledger, what, self.rng)
        if "clip" in query:  # on the noisy share: a function of what was paid for
            check_range(noisy, checked_std(query, "clip"), what)
        return noisy

    def _checked(self) -> pd.DataFrame:
        if self._table is None:
            raise DataError("this site has not checked its records yet (validate first)")
        return self._table

    def _cells_of(self, query: dict) -> Any:
        """The records' cells under the server's encoder, which must be built on the schema
        this site checked its records against (and its label)."""
        description = checked_encoder(self._accepted, query.get("encoder"))
        if query.get("label") != self._accepted.label:
            raise PrivacyError("this site refuses the query: its label is not the schema's")
        key = json.dumps(description, sort_keys=True)
        if self._cells is None or self._cells[0] != key:
            encoder = encoder_from_dict(description)
            cells = encoded_cells(encoder, self._checked(), query.get("label"))
            self._cells = (key, cells)
        return self._cells[1]

    @staticmethod
    def _marginals(given: Any, cells: dict, width: int | None = None) -> list[tuple[str, ...]]:
        """The server's marginals (or pairs): non-empty lists of the encoder's cell columns."""
        if not isinstance(given, list) or not given:
            raise PrivacyError("this site refuses the query: no marginals named")
        out = []
        for names in given:
            if (not isinstance(names, list) or not names or any(n not in cells for n in names)
                    or (width is not None and len(names) != width)):  # fmt: skip
                raise PrivacyError("this site refuses the query: a marginal it cannot count")
            out.append(tuple(names))
        return out
