"""Membership-inference attacks on released synthetic records: evidence, not a proof, of privacy.

An attacker holds the synthetic records (the release) and some real records from the same
population that were not used for training (a *reference* set), and must decide for a *target*
record whether it was in the training data. Targets are real training rows (members, label 1)
and held-out real rows never used in training (non-members, label 0), as many of each. Each
attack gives every target a score (higher: "more likely a member"); its ROC curve, area under
the curve (AUC; 0.5 is guessing) and true-positive rate at a 1 % false-positive rate (the
regime that matters: confident claims about a few records, Carlini et al. 2022) are reported.

* ``dcr``: distance to the closest synthetic record, the black-box attack of GAN-Leaks (Chen
  et al. 2020): score = minus the distance from the target to its nearest synthetic record.
* ``domias``: the density-ratio attack of DOMIAS (van Breugel et al. 2023): score =
  log p_synthetic(x) - log p_reference(x), where both densities are Gaussian kernel density
  estimates (Scott's bandwidth) in a low-dimensional space (principal components of the
  synthetic records, whitened). DOMIAS's own package wraps exactly this ratio around a choice
  of density estimator, and pins a stack of heavy dependencies; the ratio is a few lines with
  scikit-learn, so it is written here and tested on a planted case instead.
* ``classifier``: a LOGAN-style black-box attack (Hayes et al. 2019): a random forest is trained
  to tell synthetic records from reference records; score = its probability of "synthetic".
  Records the generator memorised look synthetic.

The held-out real rows are split once, with the seeded generator, into the non-member targets
and the attacker's reference set; members are drawn from the real training rows. Records are
compared in a fixed encoding: numeric values scaled by the schema's public bounds to [0, 1],
categories one-hot over the schema's categories (a mismatch counts 1 in squared distance), image
and series values flattened and scaled by their channel bounds.

These scores are computed from private data and are NOT differentially private. An attack AUC
near 0.5 is what a DP guarantee predicts; it does not prove privacy (the attacks are specific),
while an AUC clearly above 0.5 shows leakage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.neighbors import KernelDensity, NearestNeighbors
from threadpoolctl import threadpool_limits

from dpforge.data.arrays import ArrayData
from dpforge.data.tables import canonical_text
from dpforge.errors import DataError
from dpforge.schema.array import ArraySchema
from dpforge.schema.table import Schema

__all__ = [
    "ATTACKS",
    "ATTACK_NOTE",
    "AttackResult",
    "MembershipTargets",
    "array_matrix",
    "classifier_attack",
    "density_ratio_attack",
    "distance_attack",
    "membership_attacks",
    "membership_targets",
    "roc_result",
    "table_matrix",
]

ATTACKS = ("dcr", "domias", "classifier")
ATTACK_NAMES = {
    "dcr": "distance to closest synthetic record (GAN-Leaks, black box)",
    "domias": "density ratio synthetic / reference (DOMIAS)",
    "classifier": "classifier synthetic vs reference (LOGAN-style, black box)",
}
ATTACK_NOTE = (
    "Targets: members are real training rows, non-members are held-out real rows never used "
    "in training (as many of each); the attacker also holds the synthetic rows and a reference "
    "set of other held-out real rows. AUC 0.5 is guessing; TPR at 1% FPR is the share of "
    "members found when only 1% of non-members are wrongly accused."
)
FLOOR_NOTE = (
    "Floor: each attack run again with real training rows that are NOT targets as the "
    "release (no model involved). Those rows carry no membership information about the "
    "targets, so an AUC above 0.5 there measures a difference between the training and the "
    "held-out rows (two files, two periods), not leakage; read each attack against its floor."
)
MAX_TARGETS = 1000
DENSITY_COMPONENTS = 10
ROC_POINTS = 101


# -- encodings -----------------------------------------------------------------------------
def table_matrix(frame: pd.DataFrame, schema: Schema) -> np.ndarray:
    """Rows as vectors: numeric columns scaled by public bounds, categories one-hot / sqrt(2);
    an empty number is 0 with a missing indicator beside it, an empty category all zeros."""
    blocks = []
    for column in schema.columns:
        if column.is_numeric:
            values = pd.to_numeric(frame[column.name]).to_numpy(dtype=np.float64)
            width = column.upper - column.lower
            scaled = (values - column.lower) / width
            if column.nullable:
                missing = np.isnan(scaled)
                scaled = np.stack([np.where(missing, 0.0, scaled), missing.astype(float)], 1)
            blocks.append(scaled.reshape(len(frame), -1))
        else:
            index = {c: i for i, c in enumerate(column.categories)}
            hot = np.zeros((len(frame), len(index)))
            for row, value in enumerate(frame[column.name].tolist()):
                position = index.get(canonical_text(value))
                if position is not None:
                    hot[row, position] = 1.0 / np.sqrt(2.0)
            blocks.append(hot)
    return np.hstack(blocks)


def array_matrix(data: ArrayData | np.ndarray, schema: ArraySchema) -> np.ndarray:
    """Records flattened, each channel scaled by its public bounds to [0, 1]."""
    values = data.values if isinstance(data, ArrayData) else np.asarray(data)
    values = values.astype(np.float64)
    lower = np.array([c.lower for c in schema.channels], dtype=np.float64)
    upper = np.array([c.upper for c in schema.channels], dtype=np.float64)
    shape = (1, -1) + (1,) * (values.ndim - 2)
    scaled = (values - lower.reshape(shape)) / (upper - lower).reshape(shape)
    return scaled.reshape(len(values), -1)


# -- targets -------------------------------------------------------------------------------
@dataclass(frozen=True)
class MembershipTargets:
    """Member and non-member targets, and the attacker's reference rows (encoded)."""

    members: np.ndarray
    non_members: np.ndarray
    reference: np.ndarray
    spare: np.ndarray  # training rows that are not targets: the floor's "release"

    def counts(self) -> dict[str, int]:
        return {
            "members": len(self.members),
            "non_members": len(self.non_members),
            "reference": len(self.reference),
        }


def membership_targets(
    train: np.ndarray,
    held_out: np.ndarray,
    rng: np.random.Generator,
    max_targets: int = MAX_TARGETS,
) -> MembershipTargets:
    """Half of the held-out rows (at most ``max_targets``) are non-member targets, the rest the
    reference set; as many members are drawn from ``train`` without replacement."""
    if len(held_out) < 4 or len(train) < 2:
        raise DataError("membership attacks need at least 4 held-out real rows and 2 training rows")
    order = rng.permutation(len(held_out))
    n = min(len(held_out) // 2, len(train), max_targets)
    picked = rng.permutation(len(train))
    members, spare = train[picked[:n]], train[picked[n:]]
    return MembershipTargets(members, held_out[order[:n]], held_out[order[n:]], spare)


# -- scoring -------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttackResult:
    """One attack's scores summarised: AUC, TPR at 1% FPR and the ROC curve."""

    name: str
    description: str
    auc: float
    tpr_at_1pct_fpr: float
    fpr: np.ndarray
    tpr: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "auc": self.auc,
            "tpr_at_1pct_fpr": self.tpr_at_1pct_fpr,
            "roc": {"fpr": self.fpr.tolist(), "tpr": self.tpr.tolist()},
        }


def roc_result(name: str, members: np.ndarray, non_members: np.ndarray) -> AttackResult:
    """AUC, TPR at 1% FPR and the ROC curve (on a grid of FPR) of scores on both groups."""
    y = np.r_[np.ones(len(members)), np.zeros(len(non_members))]
    scores = np.r_[members, non_members]
    fpr, tpr, _ = roc_curve(y, scores)
    grid = np.linspace(0.0, 1.0, ROC_POINTS)
    return AttackResult(
        name=name,
        description=ATTACK_NAMES.get(name, name),
        auc=float(roc_auc_score(y, scores)),
        tpr_at_1pct_fpr=float(tpr[fpr <= 0.01].max()),
        fpr=grid,
        tpr=np.interp(grid, fpr, tpr),
    )


def distance_attack(targets: MembershipTargets, synthetic: np.ndarray) -> AttackResult:
    """GAN-Leaks black box: minus the distance to the closest synthetic record."""
    nearest = NearestNeighbors(n_neighbors=1).fit(synthetic)
    score = [-nearest.kneighbors(x)[0][:, 0] for x in (targets.members, targets.non_members)]
    return roc_result("dcr", *score)


def _scott_kde(points: np.ndarray) -> KernelDensity:
    n, d = points.shape
    bandwidth = n ** (-1.0 / (d + 4))  # Scott's rule on whitened coordinates
    return KernelDensity(bandwidth=bandwidth).fit(points)


def density_ratio_attack(
    targets: MembershipTargets, synthetic: np.ndarray, seed: int = 0
) -> AttackResult:
    """DOMIAS: log density of the synthetic records minus that of the reference records, both
    as Gaussian KDEs in the whitened principal components of the synthetic records."""
    k = max(1, min(DENSITY_COMPONENTS, synthetic.shape[1], len(synthetic) - 1))
    pca = PCA(n_components=k, whiten=True, random_state=seed).fit(synthetic)
    p_syn = _scott_kde(pca.transform(synthetic))
    p_ref = _scott_kde(pca.transform(targets.reference))

    def score(x: np.ndarray) -> np.ndarray:
        z = pca.transform(x)
        return p_syn.score_samples(z) - p_ref.score_samples(z)

    return roc_result("domias", score(targets.members), score(targets.non_members))


def classifier_attack(
    targets: MembershipTargets, synthetic: np.ndarray, seed: int = 0
) -> AttackResult:
    """LOGAN-style: a random forest's probability that a target is synthetic rather than a
    reference record (classes balanced by weight)."""
    x = np.vstack([synthetic, targets.reference])
    y = np.r_[np.ones(len(synthetic)), np.zeros(len(targets.reference))]
    forest = RandomForestClassifier(
        n_estimators=200, min_samples_leaf=1, class_weight="balanced", random_state=seed, n_jobs=1
    ).fit(x, y)
    score = [forest.predict_proba(t)[:, 1] for t in (targets.members, targets.non_members)]
    return roc_result("classifier", *score)


def membership_attacks(
    train: np.ndarray,
    held_out: np.ndarray,
    synthetic: np.ndarray,
    seed: int = 0,
    attacks: tuple[str, ...] = ATTACKS,
    max_targets: int = MAX_TARGETS,
    on_done: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every attack in ``attacks`` on encoded records (see :func:`table_matrix`,
    :func:`array_matrix`); ``on_done(name)`` is called after each (for a progress bar)."""
    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown or not attacks:
        raise ValueError(f"attacks must be a non-empty selection of {ATTACKS}, got {attacks}")
    targets = membership_targets(train, held_out, np.random.default_rng(seed), max_targets)
    floor = targets.spare[: len(synthetic)]
    results = {}
    with threadpool_limits(limits=1):
        for name in attacks:
            results[name] = _attack(name, targets, synthetic, seed).to_dict()
            if len(floor) >= 2:
                results[name]["floor_auc"] = _attack(name, targets, floor, seed).auc
            if on_done is not None:
                on_done(name)
    best = max(results.values(), key=lambda r: r["auc"])
    return {
        "note": ATTACK_NOTE,
        "floor_note": FLOOR_NOTE,
        "seed": seed,
        "targets": targets.counts(),
        "synthetic_rows": len(synthetic),
        "floor_rows": len(floor),
        "attacks": results,
        "max_auc": best["auc"],
        "max_tpr_at_1pct_fpr": max(r["tpr_at_1pct_fpr"] for r in results.values()),
        "max_floor_auc": max((r.get("floor_auc", 0.5) for r in results.values()), default=0.5),
        "max_auc_over_floor": max(
            r["auc"] - max(0.5, r.get("floor_auc", 0.5)) for r in results.values()
        )
        + 0.5,  # fmt: skip
    }


def _attack(name: str, targets: MembershipTargets, release: np.ndarray, seed: int) -> AttackResult:
    """Attack ``name`` on the targets, with ``release`` as the records the attacker holds."""
    if name == "dcr":
        return distance_attack(targets, release)
    if name == "domias":
        return density_ratio_attack(targets, release, seed)
    return classifier_attack(targets, release, seed)
