"""A deployed image site's own account of what it answered, and its own cap.

A site adds the noise the run's warm-up query names (its C and noise std). A server that asked
for too little noise, or for more answers than it planned, would learn more than the server's
printed guarantee says; a site that trusts nobody therefore counts its answers itself and, with
``max-epsilon`` and ``max-delta`` in its node config (``dpforge federated client-images
--max-epsilon E --max-delta D``, with ``--ledger``), refuses the answer that would take its own
per-record guarantee past them.

Every answer is priced at the noise actually added when it was given: the site keeps its
answers as SEGMENTS, one per noise setting (σ = noise std / (2C), r sanitized vectors per
answer, m critics) with the number of answers given under it. A new warm-up with other settings
opens a new segment; it never re-prices the old answers at its own noise. The guarantee is
:mod:`dpforge.privacy.federated_gswgan`'s composed over the segments: the tighter of the
composed per-record events and the composed per-site events (each bounds every record).
Answers under the same settings share one segment (the same step event, composed), whether
a warm-up came between them or not: each warm-up draws a fresh assignment of the records to
new critics, and each step's analysis holds for any assignment drawn independently of the
server.

The segments are the site's ledger file (``ledger``; :mod:`.federated_site_ledger`: read at
every answer, so they cover all runs and restarts, written atomically and 0600) and, without a
file, the site's Flower context (one run). The count is raised, and the file written, before
the answer leaves: write-ahead, as every dpforge ledger.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dp_accounting import ComposedDpEvent
from flwr.app import ConfigRecord, Context

from dpforge.engines.federated_images_site import ImageSite, SiteSettings
from dpforge.engines.federated_site_ledger import read_ledger_file, site_cap, write_ledger_file
from dpforge.errors import DpforgeError, ModelFileError
from dpforge.privacy.accounting import epsilon
from dpforge.privacy.federated_gswgan import (
    RECORD_RELATION,
    SITE_RELATION,
    record_event,
    site_event,
)
from dpforge.privacy.gswgan_accounting import SENSITIVITY_FACTOR
from dpforge.privacy.ledger import PrivacyLedger

__all__ = ["ANSWERS", "Segment", "before_answer", "site_guarantee", "site_ledgers"]

ANSWERS = "dpforge.image_site_answers"
Segment = tuple[SiteSettings, int]  # a noise setting and the answers given under it


def _noise_multiplier(settings: SiteSettings) -> float:
    return settings.noise_std / (SENSITIVITY_FACTOR * settings.clip_norm)


def _releases(settings: SiteSettings) -> int:
    return 1 if settings.whole_batch else settings.batch_size


def site_ledgers(segments: Sequence[Segment]) -> tuple[PrivacyLedger, PrivacyLedger]:
    """(per record, per site): one entry per segment, each priced at its own noise."""
    per_record, per_site = PrivacyLedger(), PrivacyLedger()
    for settings, answers in segments:
        sigma, r = _noise_multiplier(settings), _releases(settings)
        what = f"{answers} sanitized answers of this site (noise multiplier {sigma:.4g})"
        per_record.record(f"{what}; {RECORD_RELATION}",
                          record_event(settings.critics, sigma, r, answers))  # fmt: skip
        per_site.record(f"{what}; {SITE_RELATION}", site_event(sigma, r, answers))
    return per_record, per_site


def site_guarantee(segments: Sequence[Segment], delta: float) -> float:
    """The per-record epsilon at ``delta`` of all the answers in ``segments``: the tighter of
    the composed per-record events and the composed per-site events."""
    ledgers = site_ledgers(segments)
    return min(
        epsilon(ComposedDpEvent([e.event for e in ledger.entries]), delta, "rdp")
        for ledger in ledgers
    )


def before_answer(context: Context, site: ImageSite, samples: int) -> None:
    """Count this answer under the noise the site adds now, write the site's ledger, and
    refuse it if the site's cap would be passed or the query carries more samples than the
    warm-up announced."""
    settings = site.settings
    if samples > settings.batch_size:
        raise DpforgeError(f"this site refuses a query of {samples} samples: the run's "
                           f"warm-up announced batches of {settings.batch_size}")  # fmt: skip
    segments = _counted(_segments(context), settings)
    cap = site_cap(context.node_config)
    if cap is not None and site_guarantee(segments, cap[1]) > cap[0] * (1 + 1e-9):
        raise DpforgeError(
            f"this site refuses answer {segments[-1][1]} at noise multiplier "
            f"{_noise_multiplier(settings):.3g}: its own per-record epsilon at delta "
            f"{cap[1]:g}, over every answer it gave at the noise it then added, would pass its "
            f"cap {cap[0]:g}; the run asked for more than this site allows"
        )
    _keep(context, segments)


def _counted(segments: list[Segment], settings: SiteSettings) -> list[Segment]:
    """``segments`` with one more answer under ``settings``."""
    for i, (given, answers) in enumerate(segments):
        if given == settings:
            return [*segments[:i], (given, answers + 1), *segments[i + 1 :]]
    return [*segments, (settings, 1)]


def _segments(context: Context) -> list[Segment]:
    path = context.node_config.get("ledger")
    if path:
        document = read_ledger_file(Path(str(path)))
        if document is not None and "segments" not in document:
            raise ModelFileError(f"{path}: not an image site's ledger file (no 'segments')")
        items = [] if document is None else document["segments"]
    else:
        record = context.state.config_records.get(ANSWERS)
        items = [] if record is None else json.loads(str(record["json"]))
    return [(_settings(item["settings"]), int(item["answers"])) for item in items]


def _settings(values: dict[str, Any]) -> SiteSettings:
    return SiteSettings(**{**values, "critic_hidden": tuple(values["critic_hidden"])})


def _keep(context: Context, segments: list[Segment]) -> None:
    items = [{"settings": asdict(s), "answers": n} for s, n in segments]
    context.state.config_records[ANSWERS] = ConfigRecord({"json": json.dumps(items)})
    path = context.node_config.get("ledger")
    if path:
        per_record, per_site = site_ledgers(segments)
        write_ledger_file(Path(str(path)), {"segments": items, "per_record": per_record.to_dict(),
                                            "per_site": per_site.to_dict()})  # fmt: skip
