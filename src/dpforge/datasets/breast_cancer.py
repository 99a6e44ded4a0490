"""scikit-learn's breast cancer records (shipped with scikit-learn, offline): the demo table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.schema.table import Column, Schema

BREAST_CANCER_LABEL = "diagnosis"
BREAST_CANCER_CLASSES = ("malignant", "benign")


def breast_cancer_schema(feature_names: list[str]) -> Schema:
    """30 continuous features with NO public bounds, public classes, a DP label prior.

    Nothing about these records is public, so the bounds are ``None``: dpforge estimates them
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
