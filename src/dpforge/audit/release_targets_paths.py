"""The releases outside the table statistics, set up for the many-runs audit (issue 43.5): the
released record and person counts, a federated site's answer, GS-WGAN's sanitizer.

As in :mod:`dpforge.audit.release_targets`: the package's REAL function runs with and without a
canary, each run's release is projected onto the canary's exact contribution in units of the
CLAIMED noise. The claim of the counts and of the site is the event the function itself writes
to its ledger before it releases (the person count's noise multiplier is read from it); the
sanitizer's is one ``GaussianDpEvent(sigma)``, the release that its step event subsamples (one
of K critics) and composes (B samples).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import cache

import dp_accounting
import numpy as np
import pandas as pd
import torch

from dpforge.audit.release_targets import ReleaseTarget, projected, projector
from dpforge.audit.release_targets_more import swapped
from dpforge.data.encoder import TableEncoder
from dpforge.engines import federated_site
from dpforge.engines.federated_trust import Trust
from dpforge.kinds.base import Anchoring
from dpforge.methods import gswgan
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.pipeline import measure, plan
from dpforge.pipeline.run import RunSettings
from dpforge.privacy.accounting import epsilon
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.person import PrivacyUnit
from dpforge.privacy.release_noise import count_event
from dpforge.schema.table import Column, Schema

__all__ = ["PATH_TARGETS"]

CLIP = 1.0  # the sanitizer's C
ROWS = 4  # the person count's persons: at most this many rows each (the canary has them all)


def _count_target(sigma: float, records: int) -> ReleaseTarget:
    """measure.release_count: the record count (L2 sensitivity 1), rounded."""

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        n = records + int(with_canary)
        return np.array([measure.release_count(n, noise, PrivacyLedger(), rng)])

    ledger = PrivacyLedger()
    measure.release_count(records, sigma, ledger, np.random.default_rng(0))
    statistic = projected(release, sigma, sigma)
    return ReleaseTarget("record count", ledger.entries[-1].event, statistic)


def _person_run(sigma: float, schema: Schema) -> RunSettings:
    """Run settings whose budget gives the size releases noise multiplier ``sigma`` (the
    budget rule's smallest is about 1.34: the person count's claim is its ledger event), per
    person of at most ROWS rows, with discriminator steps (the person count is released)."""
    delta = 1e-5
    whole = epsilon(count_event(sigma * math.sqrt(plan.SIZE_SHARE)), delta)  # as calibrated
    return RunSettings(
        schema, "dpcgan", whole, delta, None, None, 0.1, DPCGANConfig(batch_size=1), True,
        None, Anchoring(), "error", 0, "cpu", False, None, 0, unit=PrivacyUnit("id", ROWS),
    )  # fmt: skip


def _persons_target(sigma: float, records: int) -> ReleaseTarget:
    """measure.sampled_count: the person count that sizes DP-SGD's q over persons (L2
    sensitivity 1: a person adds one whatever their rows), at the run's stream 7, rounded."""
    run = _person_run(sigma, _site_schema())
    persons = np.r_[np.arange(records), [records] * ROWS]
    tables = {c: pd.DataFrame({"id": persons[: records + ROWS * int(c)]}) for c in (False, True)}

    def release(with_canary: bool, run: RunSettings) -> tuple[np.ndarray, dp_accounting.DpEvent]:
        ledger = PrivacyLedger()
        n = measure.sampled_count(run, tables[with_canary], ledger, float(records))
        return np.array([n]), ledger.entries[-1].event

    _, event = release(False, run)
    claimed = event.sigma  # σ of the ledger's DiscreteGaussianDpEvent(σ, 1)
    exact_run = replace(run, epsilon=math.inf)  # no budget: the exact count
    project = projector(lambda c: release(c, exact_run)[0], claimed)

    noise_of_budget = cache(measure.size_noise)  # a calibration per call: the same budget

    def statistic(with_canary: bool, rng: np.random.Generator) -> float:
        seeded = replace(run, seed=int(rng.integers(2**40)))
        with swapped(measure, "size_noise", noise_of_budget):
            return project(release(with_canary, seeded)[0])

    return ReleaseTarget("person count", event, statistic)


def _site_schema() -> Schema:
    return Schema(tuple(Column(n, "categorical", categories=("x", "y")) for n in ("a", "b")))


def _site(frame: pd.DataFrame, rng: np.random.Generator) -> federated_site.Site:
    """A site (trust local: the full noise) holding ``frame``, checked against its own schema."""
    schema = _site_schema()
    site = federated_site.Site(frame, schema, Trust("local", 2), rng)
    site.answer({"op": "validate", "schema": schema.to_dict(), "out_of_bounds": "error"}, [])
    return site


def _site_answers(records: int, query: dict, arrays: list, sigma: float):
    """Two sites, without and with a canary record (the others all (x, x), the canary (y, y)),
    answering ``query`` at central std ``noise``: the release, and the event the site records
    for an answer at ``sigma`` (the claim)."""
    frame = pd.DataFrame({"a": ["x"] * records, "b": ["x"] * records})
    canary = pd.DataFrame({"a": ["y"], "b": ["y"]})
    rng = np.random.default_rng(0)
    sites = {False: _site(frame, rng), True: _site(pd.concat([frame, canary]), rng)}

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        site = sites[with_canary]
        site.rng = rng
        return np.asarray(site.answer({**query, "std": noise}, arrays), dtype=np.float64)

    release(False, sigma, rng)
    return release, sites[False].ledger.entries[-1].event


def _site_target(sigma: float, records: int) -> ReleaseTarget:
    """Site.answer to a record-count query (the server's central std sigma, sensitivity 1)."""
    release, event = _site_answers(records, {"op": "size"}, [], sigma)
    return ReleaseTarget("federated site: record count", event, projected(release, sigma, sigma))


def _site_scores_target(sigma: float, records: int) -> ReleaseTarget:
    """Site.answer to a pair-score query from an honest server (a probability table): the
    L1 distance between the site's table and the model scaled to the site's own size, of
    sensitivity 2 (the table and the scaled model each move by 1), at std 2 sigma. The model
    is the others' table, so the canary moves the score by the full 2."""
    encoder = TableEncoder(_site_schema(), n_bins=64)  # as the anchoring builds it (its default)
    query = {"op": "scores", "pairs": [["a", "b"]], "label": None,
             "encoder": federated_site.describe_encoder(encoder)}  # fmt: skip
    model = np.array([[1.0, 0.0], [0.0, 0.0]])
    release, event = _site_answers(records, query, [model], sigma)
    statistic = projected(release, sigma, 2.0 * sigma)
    return ReleaseTarget("federated site: pair score", event, statistic)


def _gswgan(sigma: float) -> gswgan.GSWGAN:
    schema = Schema(
        (Column("x", "continuous", lower=0.0, upper=1.0),
         Column("label", "categorical", categories=("p", "q"))),
        label="label",
    )  # fmt: skip
    encoder = TableEncoder(schema)
    config = gswgan.GSWGANConfig(
        batch_size=1, num_discriminators=2, latent_dim=4, clip_norm=CLIP,
        generator_hidden=(8,), discriminator_hidden=(8,),
    )  # fmt: skip
    prior = torch.tensor([0.5, 0.5])
    return gswgan.GSWGAN(config, encoder.layout, encoder.n_classes, prior, sigma)


def _sanitizer_target(sigma: float, records: int) -> ReleaseTarget:
    """GSWGAN._sanitize: one sample's upstream gradient clipped to C plus N(0, (2 sigma C)^2);
    the critic trained with the canary sends the opposite of the other's, 5C long (the worst
    case of the claimed sensitivity 2C)."""
    methods = {sigma: _gswgan(sigma), 0.0: _gswgan(0.0)}
    direction = torch.full((1, 4), 0.5)  # one sample's gradient, unit norm
    upstream = {c: (5.0 if c else -5.0) * CLIP * direction for c in (False, True)}

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        generator = torch.Generator().manual_seed(int(rng.integers(2**62)))
        out = methods[noise]._sanitize(upstream[with_canary], generator)
        return out.detach().double().numpy().ravel()

    statistic = projected(release, sigma, 2 * sigma * CLIP)
    return ReleaseTarget("GS-WGAN sanitizer", dp_accounting.GaussianDpEvent(sigma), statistic)


PATH_TARGETS: dict[str, Callable[[float, int], ReleaseTarget]] = {
    "record-count": _count_target,
    "person-count": _persons_target,
    "federated-site": _site_target,
    "federated-site-scores": _site_scores_target,
    "gswgan-sanitizer": _sanitizer_target,
}
