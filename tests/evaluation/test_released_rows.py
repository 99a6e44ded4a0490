"""Evaluating a model whose DP threshold dropped a category that the real files hold.

The fit drops records of unreleased categories (``keep_released_rows``); evaluation must apply
the same rule to the real rows (and say how many it set aside), not fail with advice to edit
the schema of a model that is already fitted.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import dpforge
from dpforge.cli import main
from dpforge.evaluation.evaluate import evaluate_table
from dpforge.evaluation.released import dp_category_columns, keep_released
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.schema.table import Column, Schema

RARE = "zanzibar"


def run(args, capsys) -> tuple[int, str]:
    """Run the console script's entry point with ``args``: exit code and everything printed."""
    code = 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["dpforge", *map(str, args)])
        try:
            main()
        except SystemExit as exc:
            code = exc.code or 0
    captured = capsys.readouterr()
    return code, captured.err + captured.out


FAST = DPCGANConfig(batch_size=64, latent_dim=8, generator_hidden=(16,), discriminator_hidden=(16,))


def _with_site(frame, rare_rows):
    """A 'site' column with two common values; ``rare_rows`` hold a value no threshold passes."""
    site = np.where(np.arange(len(frame)) % 3 == 0, "north", "south").astype(object)
    site[list(rare_rows)] = RARE
    return frame.assign(site=site)


@pytest.fixture(scope="module")
def dropped_site(cancer, tmp_path_factory):
    """A model fitted on 400 rows whose 'site' categories are estimated under DP; the rare value
    (2 training rows, 3 test rows) is below the threshold and is dropped."""
    frame, schema = cancer
    frame = _with_site(frame.sample(frac=1.0, random_state=0).reset_index(drop=True), (3, 9))
    frame.loc[[401, 402, 450], "site"] = RARE
    train, test = frame.iloc[:400].reset_index(drop=True), frame.iloc[400:].reset_index(drop=True)
    public = Schema(schema.columns + (Column("site", "categorical"),), label="diagnosis")
    synth = dpforge.Synthesizer(
        public,
        epsilon=8.0,
        delta=1e-5,
        method_options=FAST,
        seed=0,
        progress=False,
        epochs=17,
        anchor=None,
    ).fit(train)
    assert synth.schema_.column("site").categories == ("north", "south")
    folder = tmp_path_factory.mktemp("released")
    synth.save(folder / "model")
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    return synth, train, test, folder


def test_the_ledger_names_the_columns_estimated_under_dp(dropped_site):
    synth = dropped_site[0]
    names = [e.name for e in synth.ledger_.entries]
    assert dp_category_columns(synth.schema_, names) == ("site",)
    assert dp_category_columns(synth.schema_, ()) == ()


def test_keep_released_sets_aside_exactly_the_rows_of_dropped_values(dropped_site):
    synth, train, _, _ = dropped_site
    kept, aside = keep_released(train, synth.schema_, ("site",))
    assert aside.rows == 2 and aside.kept == 398 and aside.per_column == {"site": 2}
    assert RARE not in set(kept["site"]) and len(kept) == 398
    assert aside.to_dict()["share_set_aside"] == pytest.approx(2 / 400)


def test_evaluate_table_applies_the_fit_rule_and_reports_it(dropped_site):
    synth, train, test, _ = dropped_site
    result = evaluate_table(synth, train, test, classifiers=("lr",), seed=0)
    released = result["released_categories"]
    assert released["dp_estimated_columns"] == ["site"]
    assert released["real_train"]["set_aside"] == 2 and released["real_test"]["set_aside"] == 3
    assert result["rows"]["real_train"] == 398 and result["rows"]["real_test"] == 166
    assert result["utility"]["classifiers"]["lr"]["real"]["n_test"] == 166
    assert set(result["fidelity"]["tvd"]["one_way"]) >= {"site"}
    assert RARE not in json.dumps(result)


def test_cli_evaluate_does_not_refuse_a_dp_dropped_category(dropped_site, tmp_path, capsys):
    _, _, _, folder = dropped_site
    out = tmp_path / "metrics.json"
    code, text = run(
        ["evaluate", folder / "model", "--real-train", folder / "train.csv"]
        + ["--real-test", folder / "test.csv", "-o", out, "--classifiers", "lr"],
        capsys,
    )
    assert code == 0, text
    assert "unknown category" not in text and RARE not in text
    assert "did not release" in text
    assert json.loads(out.read_text())["released_categories"]["real_test"]["set_aside"] == 3


def test_a_value_outside_declared_categories_is_still_an_error(cancer, tmp_path, capsys):
    """Declared categories are the user's statement about the data: a real value outside them
    is bad input, whatever the model."""
    frame, schema = cancer
    synth = dpforge.Synthesizer(
        schema,
        epsilon=8.0,
        delta=1e-5,
        method_options=FAST,
        seed=0,
        progress=False,
        epochs=22,
        anchor=None,
    ).fit(frame.iloc[:300])
    synth.save(tmp_path / "model")
    bad = frame.iloc[300:].copy()
    bad.loc[bad.index[0], "diagnosis"] = RARE
    frame.iloc[:300].to_csv(tmp_path / "train.csv", index=False)
    bad.to_csv(tmp_path / "test.csv", index=False)
    code, text = run(
        ["evaluate", tmp_path / "model", "--real-train", tmp_path / "train.csv"]
        + ["--real-test", tmp_path / "test.csv", "-o", tmp_path / "m.json"],
        capsys,
    )
    assert code == 2 and "unknown category" in text and "diagnosis" in text
