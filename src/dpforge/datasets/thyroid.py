"""UCI thyroid "ann" (the data of the DP-CGAN Thyroid experiment), read by path.

21 attributes (15 binary, 6 continuous) and 3 classes; the public schema follows ann.names.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpforge.datasets.files import dataset_file
from dpforge.errors import DataError, private
from dpforge.schema.table import Column, Schema

# Column names as ann.names lists them (attributes 1-21, then the class).
THYROID_FEATURES = (
    "age", "sex", "on_thyroxine", "query_on_thyroxine", "on_antithyroid_medication", "sick",
    "pregnant", "thyroid_surgery", "I131_treatment", "query_hypothyroid", "query_hyperthyroid",
    "lithium", "goitre", "tumor", "hypopituitary", "psych", "TSH", "T3", "TT4", "T4U", "FTI",
)  # fmt: skip
THYROID_LABEL = "diagnosis"
THYROID_CONTINUOUS = ("age", "TSH", "T3", "TT4", "T4U", "FTI")
THYROID_CLASSES = ("1", "2", "3")  # 3 = normal; 1 and 2 = the two thyroid dysfunctions


def thyroid_schema() -> Schema:
    """The public schema of UCI Thyroid ("ann").

    All of it is public knowledge from the data set's own documentation (the UCI description and
    ann.names), not read from the records: the six continuous attributes (age, TSH, T3, TT4, T4U,
    FTI) are documented as already scaled to [0, 1], so [0, 1] are their public bounds; the 15
    other attributes are documented as binary, with categories "0" and "1"; the classes 1, 2, 3
    are documented. The class proportions are NOT public: the label prior is "dp" (noisy class
    counts, charged to the privacy budget during fit).
    """
    columns = []
    for name in THYROID_FEATURES:
        if name in THYROID_CONTINUOUS:
            columns.append(Column(name, "continuous", lower=0.0, upper=1.0))
        else:
            columns.append(Column(name, "categorical", categories=("0", "1")))
    columns.append(Column(THYROID_LABEL, "categorical", categories=THYROID_CLASSES))
    return Schema(columns=tuple(columns), label=THYROID_LABEL, label_prior="dp")


def _read_thyroid_file(path: Path) -> pd.DataFrame:
    """One ann-*.data file: comma separated, a trailing comma, no header, 21 attributes + class."""
    names = (*THYROID_FEATURES, THYROID_LABEL)
    raw = pd.read_csv(path, header=None, dtype=str, keep_default_na=False)
    if raw.shape[1] == len(names) + 1 and (raw.iloc[:, -1].str.strip() == "").all():
        raw = raw.iloc[:, :-1]  # the empty field after the trailing comma
    if raw.shape[1] != len(names):
        raise DataError(
            f"{path}: expected {len(names)} comma-separated fields per line (21 attributes and "
            f"the class), found {raw.shape[1]}; is this a UCI thyroid ann-*.data file?"
        )
    raw.columns = list(names)
    frame = raw.apply(lambda s: s.str.strip())
    for name in THYROID_CONTINUOUS:
        frame[name] = _to_float(frame[name], path)
    return frame


def _to_float(series: pd.Series, path: Path) -> pd.Series:
    values = pd.to_numeric(series, errors="coerce")
    bad = np.flatnonzero(values.isna().to_numpy())
    if bad.size:
        row = int(bad[0])
        raise DataError(
            f"{path}, line {private(row + 1)}: {series.name} = {private(series.iloc[row], 'r')} "
            "is not a number"
        )
    return values.astype(np.float64)


def load_thyroid(data_dir: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    """UCI Thyroid: (ann-train 3,772 rows, ann-test 3,428 rows, public schema), 22 columns.

    Categorical values are the text "0"/"1" (class "1"/"2"/"3"); continuous values are floats.
    """
    train = _read_thyroid_file(dataset_file(data_dir, "thyroid", "ann-train.data"))
    test = _read_thyroid_file(dataset_file(data_dir, "thyroid", "ann-test.data"))
    return train, test, thyroid_schema()
