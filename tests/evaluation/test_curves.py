"""Privacy–utility curves: one evaluation per ε, in order, and their plot."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

from dpforge.evaluation.curves import plot_curve, privacy_utility_curve
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.person import PER_RECORD


class JitteredCopies:
    """Stands in for a model fitted at ``epsilon``: it releases bootstrap copies of the training
    rows with numeric jitter of spread 0.3 / ε of each column's range (exact copies at ε = ∞),
    and a ledger of one Gaussian release."""

    method = "jittered-copies"
    delta = 1e-5
    unit = PER_RECORD  # the guarantee's neighbouring relation (one row)

    def __init__(self, epsilon, train, schema):
        self.epsilon, self.train, self.schema_ = epsilon, train, schema
        event = (
            dp_accounting.NonPrivateDpEvent()
            if math.isinf(epsilon)
            else dp_accounting.GaussianDpEvent(1.0 / epsilon)
        )
        self.ledger_ = PrivacyLedger()
        self.ledger_.record("stand-in release", event)

    def privacy_spent(self):
        return self.ledger_.report(self.delta)

    def sample(self, n, seed=None):
        rng = np.random.default_rng(seed)
        out = self.train.sample(n, replace=True, random_state=seed).reset_index(drop=True)
        if math.isfinite(self.epsilon):
            for column in self.schema_.columns:
                if column.is_numeric:
                    spread = 0.3 / self.epsilon * (column.upper - column.lower)
                    out[column.name] = out[column.name] + rng.normal(0.0, spread, n)
        return out


def test_curve_has_one_point_per_epsilon_and_follows_the_noise(cancer):
    frame, schema = cancer
    shuffled = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    train, test = shuffled.iloc[:400].reset_index(drop=True), shuffled.iloc[400:]
    seen = []
    points = privacy_utility_curve(
        lambda eps: JitteredCopies(eps, train, schema), [0.5, 4.0, math.inf], train, test,
        classifiers=("lr",), attacks=("dcr",), on_point=seen.append,
    )  # fmt: skip
    assert seen == points and [p["epsilon"] for p in points] == [0.5, 4.0, math.inf]
    tvd = [p["tvd_one_way"] for p in points]
    assert tvd[0] > tvd[1] > tvd[2]  # less noise, closer marginals
    dcr = [p["attack_auc"]["dcr"] for p in points]
    # a bootstrap copies about 63 % of the members exactly: those are found, the rest not
    assert dcr[0] < 0.6 and dcr[2] > 0.8
    spent = [p["epsilon_spent"] for p in points]
    assert spent[2] == "inf" and spent[1] > spent[0] > 0
    assert set(points[0]["auroc_per_classifier"]) == {"lr"}
    assert points[0]["auroc_macro_real"] == pytest.approx(points[2]["auroc_macro_real"])
    uri = plot_curve(points, title="stand-in")
    assert uri.startswith("data:image/png;base64,") and len(uri) > 10_000
