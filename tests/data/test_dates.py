"""Dates and times (issue 21.2): the schema entry, reading and writing in the declared format,
the encoder's round trip with declared parts, the DP range, the draft and evaluation."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cli_support import quiet, run
from dpforge.data.dates import part_codes, time_texts
from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import draft_schema, validate_table
from dpforge.errors import DataError, SchemaError, redacted_errors
from dpforge.evaluation.evaluate import evaluation_tables
from dpforge.evaluation.fidelity import marginal_fidelity
from dpforge.evaluation.utility import tstr_auroc
from dpforge.schema.table import Column, Schema
from dpforge.statistics.dp_stats import bounds_event
from dpforge.statistics.marginals import default_marginals, encoded_cells, true_counts
from dpforge.statistics.time_bounds import time_range

DAY = {"name": "day", "type": "date", "format": "%d/%m/%Y", "min": "01/01/2013"}
STAMP = {"name": "at", "type": "datetime", "format": "%Y-%m-%d %H:%M", "resolution": "15min"}


def dates_schema(nullable: bool = False) -> Schema:
    return Schema.from_dict(
        {
            "columns": [
                {**DAY, "max": "31/12/2014", "parts": ["weekday", "month"]},
                {**STAMP, "min": "2013-01-01 00:00", "max": "2013-12-31 23:45",
                 "parts": ["hour", "weekday"], "nullable": nullable},
                {"name": "kind", "type": "categorical", "categories": ["a", "b"]},
            ]
        }
    )  # fmt: skip


def dates_table(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Days over two years, times of day mostly in office hours, on the quarter hour."""
    day = pd.Timestamp("2013-01-01") + pd.to_timedelta(rng.integers(0, 730, n), unit="D")
    quarter = rng.choice(np.r_[32:72, 0:96], n)  # office hours twice as likely
    at = pd.Timestamp("2013-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D")
    at = at + pd.to_timedelta(quarter * 15, unit="min")
    return pd.DataFrame(
        {
            "day": day.strftime("%d/%m/%Y"),
            "at": at.strftime("%Y-%m-%d %H:%M"),
            "kind": rng.choice(["a", "b"], n),
        }
    )


def test_a_date_column_round_trips_through_json_with_its_bounds_in_its_format():
    schema = dates_schema(nullable=True)
    document = json.loads(schema.to_json())
    assert document["columns"][0]["min"] == "01/01/2013"
    assert document["columns"][1]["resolution"] == "15min"
    assert Schema.from_dict(document) == schema
    day = schema.column("day")
    assert (day.lower, day.upper, day.resolution) == (15706.0, 16435.0, 1.0)  # days since 1970


def test_python_columns_get_the_iso_format_and_its_finest_unit():
    column = Column("d", "datetime")
    assert (column.format, column.resolution) == ("%Y-%m-%d %H:%M:%S", 1.0)
    assert Column("d", "date").format == "%Y-%m-%d"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({**DAY, "format": "%d/%m"}, "does not write a date"),
        ({**DAY, "format": "%Y-%m-%d %H:%M"}, "make the column datetime"),
        ({**DAY, "format": "%Y-%m-%d %z"}, "time zone"),
        ({**STAMP, "resolution": "1s"}, "finer than"),
        ({**STAMP, "resolution": "1 week"}, "not understood"),
        ({**DAY, "parts": ["hour"]}, "unknown part 'hour'"),
        ({**DAY, "min": "2013-01-01"}, "is not a date in the format"),
        ({**DAY, "min": "01/01/1600"}, "outside the years 1678 to 2261"),
        ({**DAY, "categories": ["x"]}, "unknown key"),
    ],
)
def test_a_bad_date_entry_is_refused_with_what_to_write(entry, message):
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict({"columns": [entry]})


def test_a_part_column_name_may_not_clash_with_a_column():
    columns = [{**DAY, "parts": ["month"]}, {"name": "day.month", "type": "integer"}]
    with pytest.raises(SchemaError, match="twice"):
        Schema.from_dict({"columns": columns})


@pytest.mark.parametrize(
    ("fmt", "texts"),
    [
        ("%Y-%m-%d", ["2013-01-01", "1999-12-31", "2261-12-31", "1678-01-01"]),
        ("%m/%d/%Y", ["02/29/2012", "12/31/1969"]),
        ("%d %b %Y", ["05 Mar 2013", "31 Dec 1970"]),
        ("%Y-%m-%dT%H:%M:%S", ["2013-01-01T05:00:00", "1969-12-31T23:59:59"]),
        ("%d.%m.%Y %H:%M", ["01.01.2013 00:00", "28.02.2013 23:59"]),
    ],
)
def test_values_read_back_exactly_in_their_format(fmt, texts):
    """Texts -> time axis -> texts is the identity, for dates before and after 1970."""
    kind = "datetime" if "%H" in fmt else "date"
    schema = Schema((Column("t", kind, format=fmt),))
    values = validate_table(pd.DataFrame({"t": texts}), schema)["t"].to_numpy()
    encoder = TableEncoder(schema.with_columns((Column("t", kind, -1e5, 1e10, format=fmt),)))
    column = encoder.schema.column("t")
    assert list(time_texts(values, column)) == texts


def test_a_value_out_of_format_names_column_row_value_and_format():
    table = pd.DataFrame({"day": ["01/02/2013", "2013-02-01"], "at": ["", ""], "kind": "a"})
    with pytest.raises(DataError) as caught:
        validate_table(table, dates_schema(nullable=True))
    message = str(caught.value)
    assert "column 'day', row 2" in message and "'2013-02-01'" in message
    assert "'%d/%m/%Y'" in message
    with redacted_errors(), pytest.raises(DataError) as caught:  # for logs shared with others
        validate_table(table, dates_schema(nullable=True))
    assert "2013-02-01" not in str(caught.value) and "<private>" in str(caught.value)


def test_an_empty_date_needs_nullable_and_a_date_outside_the_range_is_refused():
    table = pd.DataFrame({"day": ["01/02/2013"], "at": [""], "kind": ["a"]})
    with pytest.raises(DataError, match="column 'at', row 1: missing value"):
        validate_table(table, dates_schema())
    table = pd.DataFrame({"day": ["01/02/2015"], "at": [""], "kind": ["a"]})
    with pytest.raises(DataError, match="outside the declared range 01/01/2013 to 31/12/2014"):
        validate_table(table, dates_schema(nullable=True))


def test_encoder_round_trip_keeps_cell_and_parts_and_writes_the_format():
    """Encoding real rows and decoding them gives values in the same cell, with the same
    declared parts, on the resolution grid, written in the format; empty stays empty."""
    rng = np.random.default_rng(0)
    table = dates_table(3000, rng)
    table.loc[::10, "at"] = ""
    schema = dates_schema(nullable=True)
    real = validate_table(table, schema)
    encoder = TableEncoder(schema, n_bins=16)
    assert [s.column for s in encoder.spans][:5] == [
        "day",
        "day.weekday",
        "day.month",
        "at",
        "at.hour",
    ]
    features, _ = encoder.transform(real)
    decoded = encoder.inverse_transform(features, None, np.random.default_rng(1))
    assert decoded.columns.tolist() == ["day", "at", "kind"]  # the parts are not written
    assert (decoded["at"].isna() == (table["at"] == "")).all()
    back = validate_table(decoded.fillna(""), schema)  # every value parses and is in range
    for name, parts in (("day", ("weekday", "month")), ("at", ("hour", "weekday"))):
        column, present = schema.column(name), real[name].notna().to_numpy()
        bins = encoder.bins[name]
        got, want = back[name].to_numpy()[present], real[name].to_numpy()[present]
        assert (bins.assign(got) == bins.assign(want)).mean() >= 0.97  # moved <= 3 days at most
        for part in parts:  # 64 candidates per value: a cell of 52 days misses a weekday
            same = part_codes(got, column, part) == part_codes(want, column, part)
            assert same.mean() >= 0.99, (name, part)  # and month together 1 time in 200
    minutes = back["at"].dropna().to_numpy() / 60
    assert np.all(minutes % 15 == 0)


def test_the_dp_range_of_a_year_of_dates_is_tight_and_costs_the_bounds_event():
    """Dates of 2013 at a noise multiplier of 20 over 4,000 records: a range that holds the year
    and is at most 14 months wide (on a grid of octaves it was 18 years)."""
    rng = np.random.default_rng(3)
    days = 15706.0 + rng.integers(0, 365, 4000)
    column = Column("d", "date")
    estimate, lower, upper = time_range(days, column, 20.0, rng)
    assert lower <= 15706.0 + 3 and upper >= 16070.0 - 3
    assert upper - lower <= 14 * 31
    assert estimate.event == bounds_event(20.0)
    assert float(lower).is_integer() and float(upper).is_integer()


def test_the_draft_proposes_dates_in_their_format_and_keeps_postal_codes_as_text():
    rng = np.random.default_rng(4)
    table = dates_table(200, rng)
    table["zip"] = rng.choice(["02134", "10001", "07030"], 200)
    table.loc[3, "at"] = ""
    drafted = draft_schema(table)
    day, at, zipcode = (drafted.column(n) for n in ("day", "at", "zip"))
    assert (day.type, day.format) == ("date", "%d/%m/%Y")
    assert (at.type, at.format, at.nullable) == ("datetime", "%Y-%m-%d %H:%M", True)
    assert zipcode.type == "categorical" and "02134" in zipcode.categories
    blind = draft_schema(table, with_values=False)  # types only: no range read
    assert blind.column("day").lower is None and blind.column("at").upper is None
    assert blind.notes  # a draft is refused until reviewed


def test_evaluation_reads_dates_and_compares_them_on_public_cells():
    rng = np.random.default_rng(5)
    schema = dates_schema()
    real, other = dates_table(500, rng), dates_table(500, rng)
    shifted = other.assign(day=pd.Timestamp("2014-12-31").strftime("%d/%m/%Y"))
    tables = evaluation_tables(other, real, real, schema)
    near = marginal_fidelity(tables.train, tables.synthetic, schema.modelled)
    far_tables = evaluation_tables(shifted, real, real, schema)
    far = marginal_fidelity(far_tables.train, far_tables.synthetic, schema.modelled)
    assert near.one_way["day"] < 0.2 < far.one_way["day"]


def test_without_cells_a_date_is_scaled_and_still_written_in_its_format():
    """The encoder without n_bins (a discriminator alone): a date is one scaled number, and
    decoding writes a day of the range in the format."""
    schema = Schema.from_dict({"columns": [{**DAY, "max": "31/12/2014"}]})
    table = pd.DataFrame({"day": ["01/01/2013", "15/06/2014", "31/12/2014"]})
    encoder = TableEncoder(schema)
    features, _ = encoder.transform(validate_table(table, schema))
    assert encoder.spans[0].activation == "tanh"
    assert encoder.inverse_transform(features, None)["day"].tolist() == table["day"].tolist()


@pytest.mark.parametrize("row", [0, 10])  # a record with a time, and one whose time is empty
def test_one_record_moves_every_marginal_with_the_parts_by_exactly_one(row):
    """Add/remove one record: its date and each derived part add one to one cell of each
    marginal (an empty time to the missing cell of the time and of its parts), so the L2
    sensitivity of the k marginals stays sqrt(k) with the parts among them."""
    table = dates_table(300, np.random.default_rng(6))
    table.loc[::10, "at"] = ""
    schema = Schema(dates_schema(nullable=True).columns, label="kind")
    real = validate_table(table, schema)
    encoder = TableEncoder(schema, n_bins=16)
    marginals = default_marginals(encoder.spans, "kind")
    assert ("kind", "at.hour") in marginals and ("day.weekday",) in marginals

    def counts(frame):
        cells = encoded_cells(encoder, frame, "kind")
        return [true_counts(cells, m) for m in marginals]

    full, less = counts(real), counts(real.drop(index=row))
    assert all(np.abs(a - b).sum() == 1.0 for a, b in zip(full, less, strict=True))


def test_a_date_with_one_cell_per_day_keeps_its_day_whatever_the_parts():
    """Cells of one day each: the sampled day is kept (its marginal holds the weekly pattern);
    a sampled weekday that disagrees does not move it."""
    column = Column("d", "date", 15706.0, 15735.0, parts=("weekday",))
    encoder = TableEncoder(Schema((column,)), n_bins=32)
    assert encoder.bins["d"].values.size == 30
    features = np.zeros((200, encoder.output_dim))
    features[:, 5] = 1.0  # day 5: 2013-01-06, a Sunday
    features[:, encoder.spans[1].start] = 1.0  # but Monday sampled
    decoded = encoder.inverse_transform(features, None, np.random.default_rng(0))
    assert set(decoded["d"]) == {"2013-01-06"}


def test_classifiers_read_a_date_as_a_number_on_its_axis():
    """A label that depends on the season only: a classifier that sees the date as days since
    1970 separates it (the table is evaluated as the evaluation reads it, from text)."""
    rng = np.random.default_rng(9)
    table = dates_table(600, rng)
    month = pd.to_datetime(table["day"], format="%d/%m/%Y").dt.month
    table["kind"] = np.where(month.isin([6, 7, 8]), "a", "b")
    table["day"] = pd.to_datetime(table["day"], format="%d/%m/%Y").dt.strftime("%d/%m/2013")
    schema = Schema(dates_schema().columns, label="kind")
    typed = evaluation_tables(table, table, table, schema).train
    assert typed["day"].dtype == np.float64
    assert tstr_auroc(typed, typed, schema, classifier="dt").value > 0.9


def test_the_schema_command_drafts_dates_and_fit_names_a_bad_date(tmp_path, monkeypatch, capsys):
    """``dpforge schema`` proposes the date types; ``fit`` on a reviewed schema stops on a
    value out of format before any release, naming column, row, value and format."""
    table = dates_table(60, np.random.default_rng(10))
    table.to_csv(tmp_path / "data.csv", index=False)
    code, _ = run(["schema", tmp_path / "data.csv", "-o", tmp_path / "draft.json", "--no-values"],
                  monkeypatch, capsys)  # fmt: skip
    draft = json.loads((tmp_path / "draft.json").read_text())
    assert code == 0 and [c["type"] for c in draft["columns"]] == [
        "date",
        "datetime",
        "categorical",
    ]
    assert draft["columns"][0] == {
        "name": "day", "type": "date", "format": "%d/%m/%Y", "min": None, "max": None,
        "resolution": "1D",
    }  # fmt: skip
    draft.pop("review")
    draft["columns"][2]["categories"] = ["a", "b"]
    (tmp_path / "schema.json").write_text(json.dumps(draft))
    table.loc[41, "day"] = "2013-05-06"
    table.to_csv(tmp_path / "data.csv", index=False)
    args = ["fit", tmp_path / "data.csv", "--schema", tmp_path / "schema.json", "--out",
            tmp_path / "model", *quiet({"privacy": {"record_budget": False}})]  # fmt: skip
    code, out = run(args, monkeypatch, capsys, unwrap=True)
    assert code != 0 and "column 'day', row 42: '2013-05-06' is not a date in the format" in out
    assert not (tmp_path / "model").exists()
