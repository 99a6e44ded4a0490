"""Each kind's part of the reports (kinds/reports.py) and what the ledger section says of its
metadata."""

from dpforge.datasets.breast_cancer import load_breast_cancer_demo
from dpforge.datasets.images import load_digits_images
from dpforge.datasets.series import load_italy_power_demand
from dpforge.kinds.image_report import ImageReport
from dpforge.kinds.reports import report_of
from dpforge.kinds.series_report import SeriesReport
from dpforge.kinds.table_report import TableReport


def test_each_kind_gets_its_report_part():
    table = load_breast_cancer_demo()[2]
    assert isinstance(report_of(table), TableReport)
    assert isinstance(report_of(load_digits_images()[2]), ImageReport)
    assert isinstance(report_of(load_italy_power_demand()[2]), SeriesReport)


def test_metadata_rows_say_what_was_declared_and_what_estimated():
    table = load_breast_cancer_demo()[2]
    first = table.columns[0]
    what = "bounds" if first.is_numeric else "categories"
    rows = TableReport.metadata_rows(table, [f"{what} of '{first.name}'"])
    assert rows[0] == (first.name, first.type, what, "estimated under DP")
    assert all(row[3] == "declared public" for row in rows[1 : len(table.columns)])
    series = load_italy_power_demand()[2]
    assert SeriesReport.metadata_rows(series, ["classes of 'label'"]) == [
        ("classes of 'label'", "", "", "estimated under DP")
    ]
