"""``dpforge report MODEL --release`` on a related tables' model folder: a public page (the
composed ledger with the unit, synthetic tables and rows per parent) that holds no real key."""

from __future__ import annotations

import pytest

from cli_support import run
from dpforge.relational import RelationalSynthesizer
from dpforge.statistics.anchor import AnchorConfig
from tests.relational.support import hospital

UNIT = "per parent &#x27;patient_id&#x27; of &#x27;patients&#x27; with all its rows"  # HTML


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    tables, schema = hospital(n=60)
    model = RelationalSynthesizer(
        schema, seed=0, progress=False, anchor=AnchorConfig(steps=20, batch_size=256)
    ).fit(tables)
    folder = tmp_path_factory.mktemp("related") / "model"
    model.save(folder)
    return folder, tables


@pytest.mark.slow
def test_the_release_page_holds_the_ledger_and_synthetic_tables_only(
    fitted, tmp_path, monkeypatch, capsys
):
    folder, tables = fitted
    out = tmp_path / "release.html"
    code, text = run(
        ["report", folder, "--release", "-o", out, "--rows", "40"], monkeypatch, capsys
    )
    assert code == 0, text
    assert "public content only" in text
    page = out.read_text()
    assert "<h2>Privacy ledger</h2>" in page and UNIT in page
    for name in ("patients", "visits", "drugs"):
        assert f"<h3>Table '{name}': " in page
    assert "Rows of 'visits' per parent (at most k = 3)" in page
    assert not [k for k in tables["patients"]["patient_id"] if f">{k}<" in page]


def test_release_with_a_schema_is_refused_naming_the_fix(fitted, tmp_path, monkeypatch, capsys):
    folder, _ = fitted
    out = tmp_path / "release.html"
    args = ["report", folder, "--release", "--schema", tmp_path / "s.json", "-o", out]
    code, text = run(args, monkeypatch, capsys, unwrap=True)
    assert code == 2 and "leave out --schema" in text and not out.exists()
