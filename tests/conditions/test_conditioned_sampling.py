"""Sampling given values of any columns (:mod:`dpforge.conditions`), on a model fitted once.

The given columns hold exactly what the conditions say; the other columns follow the model's
own conditional distribution: a conditioned sample is compared with a large unconditioned
sample of the same model, filtered by the same conditions (chi-square and Kolmogorov-Smirnov
tests). A label-only condition gives the same records as before; a too-rare condition stops
with the share that meets it; nothing is charged; the command line takes ``--condition``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency, ks_2samp

import dpforge
from cli_support import run
from condition_tables import SCHEMA, public_table
from dpforge.conditions import rejection
from dpforge.errors import DataError
from dpforge.generate import sample_batch
from dpforge.privacy.noise import make_generator
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer

pytestmark = pytest.mark.slow  # the module's model is fitted once (a few seconds)

WANTED = {"sex": "F", "age": (30, 60), "region": ["N", "S"], "visit": ("2020-03-01", None)}


@pytest.fixture(scope="module")
def fitted():
    synth = Synthesizer(
        SCHEMA, epsilon=3.0, seed=0, progress=False, anchor=AnchorConfig(steps=150, batch_size=256)
    )
    return synth.fit(public_table())


@pytest.fixture(scope="module")
def unconditioned(fitted):
    """A large plain sample of the model: its conditional frequencies, by filtering."""
    return fitted.sample(40_000, seed=11, move=False)


def _meets_wanted(rows: pd.DataFrame) -> pd.Series:
    return (
        (rows["sex"] == "F")
        & rows["age"].between(30, 60)
        & rows["region"].isin(["N", "S"])
        & (rows["visit"] >= "2020-03-01")  # ISO dates sort as texts
    )


def test_conditions_hold_exactly_and_nothing_is_charged(fitted):
    ledger = json.dumps(fitted.ledger_.to_dict(), sort_keys=True)
    plain = fitted.sample(1000, conditions=WANTED, seed=1, move=False)
    matched = fitted.sample(200, conditions={**WANTED, "y": "yes"}, seed=2)  # matched default
    assert len(plain) == 1000 and len(matched) == 200
    assert _meets_wanted(plain).all() and _meets_wanted(matched).all()
    assert (matched["y"] == "yes").all()
    assert plain.equals(fitted.sample(1000, conditions=WANTED, seed=1, move=False))
    assert json.dumps(fitted.ledger_.to_dict(), sort_keys=True) == ledger


def test_other_columns_follow_the_models_conditional(fitted, unconditioned):
    conditioned = fitted.sample(3000, conditions={"age": (51, None)}, seed=3, move=False)
    reference = unconditioned[unconditioned["age"] >= 51]
    table = [reference["y"].value_counts(), conditioned["y"].value_counts()]
    assert chi2_contingency(pd.DataFrame(table).fillna(0)).pvalue > 1e-3
    # the condition matters: the label's frequencies differ from the unconditioned ones
    whole = [unconditioned["y"].value_counts(), conditioned["y"].value_counts()]
    assert chi2_contingency(pd.DataFrame(whole)).pvalue < 1e-6
    several = fitted.sample(2000, conditions=WANTED, seed=4, move=False)
    reference = unconditioned[_meets_wanted(unconditioned)]
    assert len(reference) > 500
    assert ks_2samp(reference["income"], several["income"]).pvalue > 1e-3
    table = [reference["y"].value_counts(), several["y"].value_counts()]
    assert chi2_contingency(pd.DataFrame(table).fillna(0)).pvalue > 1e-3


def test_a_label_condition_alone_gives_the_same_records_as_before(fitted):
    model = fitted.fitted_model()
    for move in (False, None):
        mover = fitted.mover(move)
        before = sample_batch(model, 300, {"y": "yes"}, make_generator(5, model.device), mover)
        assert fitted.sample(300, conditions={"y": "yes"}, seed=5, move=move).equals(before)


def test_chunks_meet_the_conditions_from_one_stream(fitted):
    chunks = list(
        fitted.sample_chunks(2500, conditions=WANTED, seed=6, chunk_rows=1000, move=False)
    )
    assert [len(c) for c in chunks] == [1000, 1000, 500]
    rows = pd.concat(chunks, ignore_index=True)
    assert _meets_wanted(rows).all() and not rows.duplicated().any()


def test_a_too_rare_condition_stops_with_the_share_that_meets_it(fitted, monkeypatch):
    monkeypatch.setattr(rejection, "MIN_CAP", 20_000)  # the cap, smaller: a fast test
    rare = {"age": (80, None), "region": "W", "sex": "M"}
    with pytest.raises(DataError) as caught:
        fitted.sample(2000, conditions=rare, seed=7, move=False)
    message = str(caught.value)
    assert "the conditions age=80.., region=W, sex=M are too rare to sample 2,000 rows" in message
    assert "% of the model's rows meet them" in message or "none of the" in message
    assert "than the cap of 200,000 (100 per row asked for" in message
    assert "widen the conditions" in message
    never = {"age": 90, "income": (199_999.0, None), "visit": "2020-12-31"}
    with pytest.raises(DataError, match=r"none of the [\d,]+ rows drawn met them"):
        fitted.sample(5, conditions=never, seed=8, move=False)


def test_sample_command_takes_conditions_on_any_column(fitted, tmp_path, monkeypatch, capsys):
    model = fitted.save(tmp_path / "model")
    out = tmp_path / "rows.csv"
    args = ["sample", model, "-n", "300", "-o", out, "--seed", "1", "--no-move"]
    given = ["sex=F", "age=30..60", "region=N,S", "visit=2020-03-01.."]
    code, text = run([*args, *[f"--condition={c}" for c in given]], monkeypatch, capsys)
    assert code == 0, text
    rows = pd.read_csv(out, dtype={"visit": str})
    assert len(rows) == 300 and _meets_wanted(rows).all()
    expected = dpforge.load(model).sample(300, conditions=WANTED, seed=1, move=False)
    assert np.allclose(rows["income"], expected["income"])
    parts = tmp_path / "parts"
    split = ["--partitions", "2", "--workers", "1", "--condition", "region=W", "--no-move"]
    code, text = run(["sample", model, "-n", "300", "-o", parts, *split], monkeypatch, capsys)
    assert code == 0, text
    written = pd.concat(pd.read_csv(p) for p in sorted(parts.glob("part-*.csv")))
    assert len(written) == 300 and (written["region"] == "W").all()
    code, text = run([*args, "--overwrite", "--condition", "age=60..30"], monkeypatch, capsys)
    assert code == 2 and "age=60..30: the range is reversed" in text and "age=30..60" in text
    code, text = run([*args, "--overwrite", "--condition", "zone=N"], monkeypatch, capsys)
    assert code == 2 and "condition on 'zone': the model has no such column" in text
