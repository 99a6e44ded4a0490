"""The report reads right for a non-expert (issue 46.5): dates as dates, plain ticks, missing
shares, the worst pair named, and a verdict that names the figure the headline shows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.evaluation.plots import _missing_text, _tick_text
from dpforge.evaluation.report_headline import guessing_spread, verdict
from dpforge.evaluation.report_sections import _worst_pair_text
from dpforge.schema.table import Column


def test_date_ticks_read_as_dates_and_numbers_as_plain_numbers():
    assert _tick_text(18320.0, Column("seen", "date", lower=18000, upper=19000)) == "2020-02-28"
    assert _tick_text(3718.0, Column("n", "continuous", lower=0, upper=5000)) == "3,718"


def test_a_nullable_column_shows_each_tables_missing_share():
    column = Column("lab", "continuous", lower=0, upper=1, nullable=True)
    real = pd.DataFrame({"lab": [0.1, np.nan, np.nan, 0.3]})
    synthetic = pd.DataFrame({"lab": [0.1, 0.2, np.nan, 0.3]})
    text = _missing_text(column, [("real", real, "b"), ("synthetic", synthetic, "r")])
    assert text == "\nmissing: real 50%, synthetic 25%"
    assert _missing_text(Column("x", "continuous", lower=0, upper=1), []) == ""


def test_the_pair_with_the_largest_association_gap_is_named():
    names = ["gender", "drive", "age"]
    real = pd.DataFrame(np.eye(3) + 0.02, index=names, columns=names)
    synthetic = real.copy()
    synthetic.loc["gender", "drive"] = synthetic.loc["drive", "gender"] = 0.8
    text = _worst_pair_text([("real", real), ("synthetic", synthetic)])
    assert text == "Largest difference: gender × drive, real 0.02 against synthetic 0.80."


def test_the_verdict_names_the_headline_auc_beside_its_floor():
    words = " ".join(verdict(3.0, None, 0.52, 0.69, strongest_auc=0.705, targets=1000))
    assert "AUC 0.70" in words and "floor of 0.69" in words and "guessing" in words


def test_few_attack_targets_get_a_caveat_with_the_range_guessing_gives():
    assert abs(guessing_spread(39) - 0.129) < 0.001  # 1.96 * sqrt(79 / (12 * 39^2))
    words = " ".join(verdict(3.0, None, 0.52, 0.5, strongest_auc=0.52, targets=39))
    assert "only 39 members and 39 non-members" in words and "0.5 ± 0.13" in words
    assert "only" not in " ".join(verdict(3.0, None, 0.52, 0.5, strongest_auc=0.52, targets=900))
