"""Related tables as a product: one budget charge for the whole plan before any release, the
model folder (save, load, no real key), and the command line's fit and sample as a user calls
them, with its refusals of bad input (nothing half-written)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dp_accounting
import pandas as pd
import pytest

from cli_support import options_file, run
from dpforge.errors import ModelFileError, OutputExistsError, PrivacyError, SchemaError
from dpforge.privacy.budget import BUDGET_SUFFIX, BudgetExceededError, DataBudget
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.relational import RelationalSynthesizer
from dpforge.schema.relational import RelationalSchema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer
from tests.relational.support import hospital, hospital_schema

FAST = AnchorConfig(steps=20, batch_size=256)
FAST_SECTIONS = {"anchor": {"steps": 20, "batch_size": 256}, "output": {"progress": False}}
UNIT = "per parent 'patient_id' of 'patients' with all its rows"


def _model(**options) -> RelationalSynthesizer:
    _, schema = hospital()
    return RelationalSynthesizer(schema, seed=0, progress=False, anchor=FAST, **options)


def _spy_fits(monkeypatch, budget: DataBudget) -> list:
    """The budget file's runs as each table's fit starts (before any of its releases)."""
    seen, fit = [], Synthesizer.fit

    def spy(self, data, **options):
        seen.append(budget.status().runs)
        return fit(self, data, **options)

    monkeypatch.setattr(Synthesizer, "fit", spy)
    return seen


def _bytes_of(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


@pytest.mark.slow
def test_the_plan_is_charged_once_before_any_release_and_the_folder_round_trips(
    tmp_path, monkeypatch
):
    tables, _ = hospital(n=60)
    budget = DataBudget(tmp_path / ("patients.csv" + BUDGET_SUFFIX))
    seen = _spy_fits(monkeypatch, budget)
    model = _model().fit(tables, budget=budget)
    first = seen[0]  # before the parent's first release: the whole plan, one run
    assert len(first) == 1 and first[0].reserved
    assert [e.name.split(":")[0] for e in first[0].ledger.entries] == [
        "'patients'", "'visits'", "'drugs'",
    ]  # fmt: skip
    assert all(UNIT in e.name for e in first[0].ledger.entries)
    assert [len(runs) for runs in seen] == [1, 1, 1]  # no part charged again
    assert {runs[0].run_id for runs in seen} == {first[0].run_id}
    names = [e.name for e in seen[1][0].ledger.entries]  # the parent settled, its bound gone
    assert names[0].startswith("'patients': record count") and "reserved" in names[-1]
    (run,) = budget.status().runs
    assert not run.reserved and run.ledger.to_dict() == model.ledger_.to_dict()
    # The parts' shares compose to the target (an even split of epsilon spent 1.72 of 3).
    assert model.plan_.report(model.delta).epsilon <= 3.0
    assert model.privacy_spent().epsilon <= 3.0  # epsilon / parts each: basic composition
    assert "related tables patients, visits, drugs" in run.description

    folder = model.save(tmp_path / "model")
    again = RelationalSynthesizer.load(folder)
    for name, frame in model.sample(50, seed=4).items():
        pd.testing.assert_frame_equal(again.sample(50, seed=4)[name], frame)
    assert again.ledger_.to_dict() == model.ledger_.to_dict()
    saved = json.loads((folder / "relational.json").read_text())
    assert saved["privacy"]["unit"].startswith(UNIT)
    everything = _bytes_of(folder)
    assert not [k for k in tables["patients"]["patient_id"] if k.encode() in everything]
    with pytest.raises(OutputExistsError, match="already exists"):
        model.save(folder)
    assert model.save(folder, overwrite=True) == folder  # its own kind: replaced
    for name in ("visits", "drugs", "swap"):  # a hand-edited folder: models swapped
        (folder / name).rename(
            folder / {"visits": "swap", "drugs": "visits", "swap": "drugs"}[name]
        )
    with pytest.raises(ModelFileError, match="does not model table 'visits' of the schema"):
        RelationalSynthesizer.load(folder)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("a user's file")
    with pytest.raises(OutputExistsError, match="not a related-tables model folder dpforge"):
        model.save(tmp_path / "mine", overwrite=True)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "a user's file"


def test_a_run_beyond_the_declared_total_is_refused_before_any_release(tmp_path, monkeypatch):
    tables, _ = hospital(n=60)
    budget = DataBudget(tmp_path / ("patients.csv" + BUDGET_SUFFIX))
    budget.set_total(1.0, 1e-5)
    seen = _spy_fits(monkeypatch, budget)
    with pytest.raises(BudgetExceededError):
        _model(epsilon=3.0).fit(tables, budget=budget)
    assert seen == [] and budget.status().runs == ()


def test_a_crashed_run_keeps_its_whole_plan_charged_once(tmp_path, monkeypatch):
    tables, _ = hospital(n=60)
    budget = DataBudget(tmp_path / ("patients.csv" + BUDGET_SUFFIX))
    parts = []

    def crash(self, data, **options):  # the parent's fit is killed after its releases
        parts.append(options["budget"].reserve(epsilon=1.0, delta=1e-6, description="part"))
        raise KeyboardInterrupt

    monkeypatch.setattr(Synthesizer, "fit", crash)
    model = _model(epsilon=2.0)
    with pytest.raises(KeyboardInterrupt):
        model.fit(tables, budget=budget)
    (run,) = budget.status().runs
    assert parts == ["patients"] and run.reserved
    assert run.ledger.to_dict() == model.plan_.to_dict()  # the whole plan: no spending hidden
    spent = budget.status().spent.epsilon
    assert spent == pytest.approx(model.plan_.report(model.delta).epsilon) and spent > 1.0


def test_a_part_stopped_by_a_dp_outcome_leaves_what_it_released_charged(tmp_path, monkeypatch):
    """The parent's fit releases one event, then stops on a DP outcome (it settles what it
    released, as a table fit does): the run keeps that event alone; the children never ran."""
    tables, _ = hospital(n=60)
    budget = DataBudget(tmp_path / ("patients.csv" + BUDGET_SUFFIX))
    released = PrivacyLedger()
    released.record("metadata: categories of 'sex'", dp_accounting.GaussianDpEvent(4.0))

    def stopped(self, data, **options):
        charge = options["budget"]
        charge.settle(charge.reserve(epsilon=1.0, delta=1e-6, description="part"), released)
        raise PrivacyError("no category is frequent enough")

    monkeypatch.setattr(Synthesizer, "fit", stopped)
    with pytest.raises(PrivacyError):
        _model().fit(tables, budget=budget)
    (run,) = budget.status().runs
    assert not run.reserved and len(run.ledger) == 1
    assert run.ledger.entries[0].name.startswith(
        "'patients': metadata: categories of 'sex'"
    ) and UNIT in str(run.ledger.entries[0].name)


def test_a_table_name_that_cannot_name_a_file_is_refused_before_any_record_is_read():
    document = hospital_schema()
    document["tables"]["../drugs"] = document["tables"].pop("drugs")
    schema = RelationalSchema.from_dict(document)
    with pytest.raises(SchemaError, match=r"table name '../drugs' cannot name a folder or file"):
        RelationalSynthesizer(schema, seed=0).fit({})


# -- the command line ---------------------------------------------------------------------
@pytest.fixture
def files(tmp_path):
    tables, _ = hospital(n=60)
    for name, frame in tables.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    (tmp_path / "hospital.json").write_text(json.dumps(hospital_schema()))
    return tmp_path, tables


def _fit_args(folder: Path, *names: str) -> list:
    paths = [folder / f"{n}.csv" for n in names]
    fast = options_file(FAST_SECTIONS)
    return ["fit", *paths, "--schema", folder / "hospital.json", "--out", folder / "model",
            "--options", fast, "--seed", "0"]  # fmt: skip


@pytest.mark.slow
def test_fit_and_sample_as_a_user_calls_them(files, monkeypatch, capsys):
    folder, tables = files
    code, out = run(_fit_args(folder, "patients", "visits", "drugs"), monkeypatch, capsys)
    assert code == 0, out
    assert "wrote model folder" in out and UNIT in " ".join(out.split())
    budget = DataBudget(folder / ("patients.csv" + BUDGET_SUFFIX))
    assert len(budget.status().runs) == 1
    args = ["sample", folder / "model", "-n", "40", "-o", folder / "out", "--seed", "1"]
    code, out = run(args, monkeypatch, capsys)
    assert code == 0, out
    written = {p.name: pd.read_csv(p, dtype=str) for p in (folder / "out").iterdir()}
    assert sorted(written) == ["drugs.csv", "patients.csv", "visits.csv"]
    keys = set(written["patients.csv"]["patient_id"])
    assert len(keys) == 40 and set(written["visits.csv"]["patient_id"]) <= keys
    real = [k.encode() for k in tables["patients"]["patient_id"]]
    everything = _bytes_of(folder / "model") + _bytes_of(folder / "out")
    assert not [k for k in real if k in everything]
    code, out = run(args, monkeypatch, capsys)
    assert code == 2 and "already exists" in out


ORPHAN = ("visits", 3, "p999", "table 'visits', row 4: foreign key 'patient_id' value 'p999'")
DUPLICATE = ("patients", 5, "p002", "table 'patients', row 6: key 'patient_id' value 'p002'")


@pytest.mark.parametrize(("table", "row", "value", "message"), [ORPHAN, DUPLICATE])
def test_a_bad_key_stops_the_fit_before_any_charge_or_output(
    files, monkeypatch, capsys, table, row, value, message
):
    folder, tables = files
    tables[table].loc[row, "patient_id"] = value
    tables[table].to_csv(folder / f"{table}.csv", index=False)
    code, out = run(_fit_args(folder, "patients", "visits", "drugs"), monkeypatch, capsys)
    assert code == 2 and message in " ".join(out.split())
    assert not (folder / "model").exists()
    assert DataBudget(folder / ("patients.csv" + BUDGET_SUFFIX)).status().runs == ()


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (("patients", "visits"), "table 'drugs' of .*hospital.json has no file: give drugs.csv"),
        (("patients", "visits", "drugs", "extra"),
         r"extra.csv: table 'extra' \(files name tables by their stem\) is not in"),
    ],
)  # fmt: skip
def test_files_that_do_not_match_the_schema_are_refused_naming_the_fix(
    files, monkeypatch, capsys, names, message
):
    folder, tables = files
    tables["patients"].to_csv(folder / "extra.csv", index=False)
    code, out = run(_fit_args(folder, *names), monkeypatch, capsys, unwrap=True)
    assert code == 2
    assert re.search(message, out), out
    assert not (folder / "model").exists()


def test_options_of_one_table_are_refused_with_related_tables(files, monkeypatch, capsys):
    folder, _ = files
    args = [*_fit_args(folder, "patients", "visits", "drugs"), "--privacy-unit", "patient_id"]
    code, out = run(args, monkeypatch, capsys, unwrap=True)
    assert code == 2 and "--privacy-unit is an option of one table's fit" in out
    one = folder / "patients.json"
    one.write_text(json.dumps(hospital_schema()["tables"]["patients"]["schema"]))
    args = ["fit", folder / "patients.csv", folder / "visits.csv", "--schema", one, "--out",
            folder / "m"]  # fmt: skip
    code, out = run(args, monkeypatch, capsys, unwrap=True)
    assert code == 2 and "2 data files given, but the --schema describes one data set" in out
