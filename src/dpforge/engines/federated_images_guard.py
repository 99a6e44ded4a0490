"""A deployed image site's own account of what it answered, and its own cap.

A site adds the noise the run's warm-up query names (its C and noise std). A server that asked
for too little noise, or for more answers than it planned, would learn more than the server's
printed guarantee says; a site that trusts nobody therefore counts its answers itself and, with
``max-epsilon`` and ``max-delta`` in its node config (``dpforge federated client-images
--max-epsilon E --max-delta D``), refuses the answer that would take its own per-record
guarantee past them. The guarantee is :mod:`dpforge.privacy.federated_gswgan`'s, computed from
what this site actually adds: σ = noise std / (2C), r sanitized vectors per answer (B, or one
for a whole-batch clip), m critics, composed over the answers given. The count is raised, and
the site's ledger file (``ledger``) rewritten, before the answer leaves: write-ahead, as every
dpforge ledger.
"""

from __future__ import annotations

from typing import Any

from flwr.app import ConfigRecord, Context

from dpforge.engines.federated_images_site import ImageSite, SiteSettings
from dpforge.engines.federated_site import site_cap, write_site_ledger
from dpforge.errors import DpforgeError
from dpforge.privacy.accounting import epsilon
from dpforge.privacy.federated_gswgan import (
    RECORD_RELATION,
    SITE_RELATION,
    record_event,
    site_event,
)
from dpforge.privacy.gswgan_accounting import SENSITIVITY_FACTOR
from dpforge.privacy.ledger import PrivacyLedger

__all__ = ["ANSWERS", "before_answer", "site_guarantee", "site_ledgers"]

ANSWERS = "dpforge.image_site_answers"


def _noise_multiplier(settings: SiteSettings) -> float:
    return settings.noise_std / (SENSITIVITY_FACTOR * settings.clip_norm)


def _releases(settings: SiteSettings) -> int:
    return 1 if settings.whole_batch else settings.batch_size


def site_ledgers(settings: SiteSettings, answers: int) -> tuple[PrivacyLedger, PrivacyLedger]:
    """(per record, per site): this site's ``answers`` answers as it sanitized them."""
    sigma, r = _noise_multiplier(settings), _releases(settings)
    per_record, per_site = PrivacyLedger(), PrivacyLedger()
    what = f"{answers} sanitized answers of this site"
    per_record.record(f"{what}; {RECORD_RELATION}",
                      record_event(settings.critics, sigma, r, answers))  # fmt: skip
    per_site.record(f"{what}; {SITE_RELATION}", site_event(sigma, r, answers))
    return per_record, per_site


def site_guarantee(settings: SiteSettings, answers: int, delta: float) -> float:
    """The per-record epsilon at ``delta`` after ``answers`` answers: the tighter of the
    amplified per-record event and the per-site one (which bounds every record too)."""
    per_record, per_site = site_ledgers(settings, answers)
    return min(epsilon(ledger.event(), delta, "rdp") for ledger in (per_record, per_site))


def before_answer(context: Context, site: ImageSite, samples: int) -> None:
    """Count this answer, write the site's ledger, and refuse it if the site's cap would be
    passed or the query carries more samples than the warm-up announced."""
    settings = site.settings
    if samples > settings.batch_size:
        raise DpforgeError(f"this site refuses a query of {samples} samples: the run's "
                           f"warm-up announced batches of {settings.batch_size}")  # fmt: skip
    answers = _answers(context) + 1
    cap = site_cap(context.node_config)
    if cap is not None and site_guarantee(settings, answers, cap[1]) > cap[0] * (1 + 1e-9):
        raise DpforgeError(
            f"this site refuses answer {answers}: its own per-record epsilon at delta "
            f"{cap[1]:g} would pass its cap {cap[0]:g} (noise multiplier "
            f"{_noise_multiplier(settings):.3g}); the run asked for more than this site allows"
        )
    context.state.config_records[ANSWERS] = ConfigRecord({"answers": answers})
    _write_ledger(context.node_config, settings, answers)


def _answers(context: Context) -> int:
    record = context.state.config_records.get(ANSWERS)
    return 0 if record is None else int(record["answers"])


def _write_ledger(node_config: Any, settings: SiteSettings, answers: int) -> None:
    if node_config.get("ledger"):
        per_record, per_site = site_ledgers(settings, answers)
        write_site_ledger(node_config, {"per_record": per_record.to_dict(),
                                        "per_site": per_site.to_dict()})  # fmt: skip
