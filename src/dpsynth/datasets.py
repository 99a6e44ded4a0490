"""Loaders of the benchmark data, read by path (never copied into the repository).

Where the data live: the ``data_dir`` argument, else the environment variable
``DPSYNTH_DATA_DIR``, else ``../shared/datasets`` relative to the current directory (the layout
of design.md section 7, when run from the project root). Each loader returns
``(train_df, test_df, schema)``: categorical values as text, numeric values as floats, and a
schema that declares public only what the data's own documentation makes public.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from dpsynth.errors import DataError
from dpsynth.schema import Column, Schema

DATA_DIR_ENV = "DPSYNTH_DATA_DIR"
DEFAULT_DATA_DIR = Path("..") / "shared" / "datasets"

# Column names as ann.names lists them (attributes 1-21, then the class).
THYROID_FEATURES = (
    "age", "sex", "on_thyroxine", "query_on_thyroxine", "on_antithyroid_medication", "sick",
    "pregnant", "thyroid_surgery", "I131_treatment", "query_hypothyroid", "query_hyperthyroid",
    "lithium", "goitre", "tumor", "hypopituitary", "psych", "TSH", "T3", "TT4", "T4U", "FTI",
)  # fmt: skip
THYROID_LABEL = "diagnosis"
THYROID_CONTINUOUS = ("age", "TSH", "T3", "TT4", "T4U", "FTI")
THYROID_CLASSES = ("1", "2", "3")  # 3 = normal; 1 and 2 = the two thyroid dysfunctions
BREAST_CANCER_LABEL = "diagnosis"
BREAST_CANCER_CLASSES = ("malignant", "benign")


def resolve_data_dir(data_dir: str | Path | None = None) -> tuple[Path, str]:
    """The data folder and where its name came from (for error messages)."""
    if data_dir is not None:
        return Path(data_dir), "the data_dir argument"
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env), f"the environment variable {DATA_DIR_ENV}"
    return DEFAULT_DATA_DIR, f"the default {DEFAULT_DATA_DIR} (relative to {Path.cwd()})"


def _dataset_file(data_dir: str | Path | None, folder: str, name: str) -> Path:
    """``<data_dir>/<folder>/<name>`` (or ``<data_dir>/<name>``), or a DataError saying how."""
    root, source = resolve_data_dir(data_dir)
    for candidate in (root / folder / name, root / name):
        if candidate.is_file():
            return candidate
    raise DataError(
        f"cannot find {folder}/{name}: looked in {root / folder} and {root} (from {source}); "
        f"pass data_dir=<folder holding {folder}/>, set {DATA_DIR_ENV}, or run from the "
        f"project root with {DEFAULT_DATA_DIR} present"
    )


# -- Thyroid -----------------------------------------------------------------------------------
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
            f"{path}, line {row + 1}: {series.name} = {series.iloc[row]!r} is not a number"
        )
    return values.astype(np.float64)


def load_thyroid(data_dir: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    """UCI Thyroid: (ann-train 3,772 rows, ann-test 3,428 rows, public schema), 22 columns.

    Categorical values are the text "0"/"1" (class "1"/"2"/"3"); continuous values are floats.
    """
    train = _read_thyroid_file(_dataset_file(data_dir, "thyroid", "ann-train.data"))
    test = _read_thyroid_file(_dataset_file(data_dir, "thyroid", "ann-test.data"))
    return train, test, thyroid_schema()


# -- breast cancer (scikit-learn's copy, offline) ----------------------------------------------
def breast_cancer_schema(feature_names: list[str]) -> Schema:
    """30 continuous features with NO public bounds, public classes, a DP label prior.

    Nothing about these records is public, so the bounds are ``None``: dpsynth estimates them
    under DP during fit and charges the budget. The two class names are public (the data's
    description names them); their proportions are not, hence ``label_prior="dp"``.
    """
    columns = [Column(name, "continuous") for name in feature_names]
    columns.append(Column(BREAST_CANCER_LABEL, "categorical", categories=BREAST_CANCER_CLASSES))
    return Schema(columns=tuple(columns), label=BREAST_CANCER_LABEL, label_prior="dp")


def load_breast_cancer_demo(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    """scikit-learn's breast cancer records (569 rows) split 80/20, stratified, seeded.

    The label is the text "malignant"/"benign"; features are floats. For demos and the quick
    utility check (train on the 80 %, evaluate on the 20 %).
    """
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    bunch = load_breast_cancer(as_frame=True)
    frame = bunch.data.astype(np.float64).copy()
    names = np.asarray(bunch.target_names)
    frame[BREAST_CANCER_LABEL] = names[bunch.target.to_numpy()].astype(str)
    train, test = train_test_split(
        frame, test_size=0.2, stratify=frame[BREAST_CANCER_LABEL], random_state=seed
    )
    schema = breast_cancer_schema(list(bunch.data.columns))
    return train.reset_index(drop=True), test.reset_index(drop=True), schema
