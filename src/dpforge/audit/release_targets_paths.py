"""The releases outside the table statistics, set up for the many-runs audit (issue 43.5): the
released record count, a federated site's answer, GS-WGAN's sanitizer.

As in :mod:`dpforge.audit.release_targets`: the package's REAL function runs with and without a
canary, each run's release is projected onto the canary's exact contribution in units of the
CLAIMED noise. The claim of the record count and of the site is the event the function itself
writes to its ledger before it releases; the sanitizer's is one ``GaussianDpEvent(sigma)``, the
release that its step event subsamples (one of K critics) and composes (B samples).
"""

from __future__ import annotations

from collections.abc import Callable

import dp_accounting
import numpy as np
import pandas as pd
import torch

from dpforge.audit.release_targets import ReleaseTarget, projector
from dpforge.data.encoder import TableEncoder
from dpforge.engines import federated_site
from dpforge.engines.federated_trust import Trust
from dpforge.methods import gswgan
from dpforge.pipeline import measure
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.table import Column, Schema

__all__ = ["PATH_TARGETS"]

CLIP = 1.0  # the sanitizer's C


def _count_target(sigma: float, records: int) -> ReleaseTarget:
    """measure.release_count: the record count (L2 sensitivity 1), rounded."""

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        n = records + int(with_canary)
        return np.array([measure.release_count(n, noise, PrivacyLedger(), rng)])

    ledger = PrivacyLedger()
    measure.release_count(records, sigma, ledger, np.random.default_rng(0))
    project = projector(lambda c: release(c, 0.0, np.random.default_rng(0)), sigma)
    statistic = lambda c, rng: project(release(c, sigma, rng))  # noqa: E731
    return ReleaseTarget("record count", ledger.entries[-1].event, statistic)


def _site_schema() -> Schema:
    return Schema((Column("x", "continuous", lower=0.0, upper=1.0),))


def _site(records: int, rng: np.random.Generator) -> federated_site.Site:
    """A site (trust local: the full noise) holding ``records`` records, checked."""
    schema = _site_schema()
    site = federated_site.Site(pd.DataFrame({"x": [0.5] * records}), Trust("local", 2), rng)
    site.answer({"op": "validate", "schema": schema.to_dict(), "out_of_bounds": "error"}, [])
    return site


def _site_target(sigma: float, records: int) -> ReleaseTarget:
    """Site.answer to a record-count query (the server's central std sigma, sensitivity 1)."""
    rng = np.random.default_rng(0)
    sites = {c: _site(records + int(c), rng) for c in (False, True)}

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        site = sites[with_canary]
        site.rng = rng
        return np.asarray(site.answer({"op": "size", "std": noise}, []), dtype=np.float64)

    release(False, sigma, rng)
    event = sites[False].ledger.entries[-1].event
    project = projector(lambda c: release(c, 0.0, np.random.default_rng(0)), sigma)
    statistic = lambda c, rng: project(release(c, sigma, rng))  # noqa: E731
    return ReleaseTarget("federated site answer", event, statistic)


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

    project = projector(lambda c: release(c, 0.0, np.random.default_rng(0)), 2 * sigma * CLIP)
    statistic = lambda c, rng: project(release(c, sigma, rng))  # noqa: E731
    return ReleaseTarget("GS-WGAN sanitizer", dp_accounting.GaussianDpEvent(sigma), statistic)


PATH_TARGETS: dict[str, Callable[[float, int], ReleaseTarget]] = {
    "record-count": _count_target,
    "federated-site": _site_target,
    "gswgan-sanitizer": _sanitizer_target,
}
