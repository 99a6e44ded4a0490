"""Accounting for GS-WGAN across federated sites (Chen et al. 2020, the decentralised setting).

The protocol (``dpforge.engines.federated_images``)
--------------------------------------------------
Each of the S sites keeps its images and m critics; each of its records is assigned to one of
its critics independently and uniformly (the site's own draw). The server holds the generator.
At generator step t the server sends B generated samples (and their labels) to the P sites of a
round-robin schedule fixed before the run (it depends on S, P and t only, never on data). Each
of those sites picks ONE of its m critics uniformly with its own randomness (the server never
learns which), clips the gradient of the critic's generator loss with respect to each sample to
L2 norm C (``sanitize="batch"``: the B gradients as one vector), adds N(0, (2σC)²) to every
coordinate and returns it. The server averages the P answers and back-propagates the mean
through the generator. Critics train without noise and never leave their site; they are frozen
after a warm start, or all m critics of a site train at every step the site takes part in, before
the pick (``critic_training``), as in ``dpforge.methods.gswgan``.

Both guarantees hold against the server, which sees every message and knows which sites it
asked; the released generator, the samples and the logs are post-processing of those messages.
Let n = ⌈T·P/S⌉, the most steps any one site takes part in under the schedule, and r the
releases per answer (B per-sample gradients, or 1 batch gradient).

Per record (add or remove one image at one site)
   The record sits in one critic of one site. In a step its site takes part in, the site's answer
   is the mixture over its m critics of their sanitized gradients, the pick uniform and hidden,
   and only the record's critic depends on the record: that is the GS-WGAN step of
   ``dpforge.privacy.gswgan_accounting`` with K = m, ``SampledWithoutReplacementDpEvent(m, 1,
   SelfComposedDpEvent(GaussianDpEvent(σ), r))`` (sensitivity 2C per clipped vector, analysed for
   replace-one and valid for add/remove because the assignment is i.i.d. per record: see that
   module). The argument about critics carries over: a frozen critic is a function of its own
   subset and draws; with ``"all"``, every critic of the site trains in every step the site takes
   part in, whichever critic is picked, so critic k is a function of its subset, its draws and
   the generators the server sent (the released history). Steps in which the site does not take
   part read nothing of it; other sites' answers do not depend on the record. There is no
   amplification by the choice of sites: the server knows whom it asked. The run is that step
   composed n times. With m = 1 it is ``SelfComposedDpEvent(GaussianDpEvent(σ), r·n)``.

Per site (replace all of one site's images by any others, their number included)
   Every clipped vector of the site's answers can then change by 2C, and the site answers in at
   most n steps: ``SelfComposedDpEvent(GaussianDpEvent(σ), r·n)``, with no amplification. This
   also bounds what the server learns about any group of records inside one site.

Changing one record changes its site's images, so the per-site event is a per-record bound
too: the per-record ledger holds whichever of the two is tighter at the run's δ
(:func:`per_record_event`; with one or two critics per site it is usually the per-site one:
the replace-one subsampling bound is loose when it amplifies little). With more critics per
site the per-record ε is much smaller than the per-site one at the same σ: the critics amplify
only the record-level guarantee. Both are computed by dp-accounting's RDP accountant from the
events (PLD would be tighter for the per-site event but can take minutes when σ is small).
"""

from __future__ import annotations

import math

import dp_accounting

from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import epsilon
from dpforge.privacy.calibration import noise_for_target
from dpforge.privacy.gswgan_accounting import _check_noise, _whole, gswgan_step_event

__all__ = [
    "RECORD_RELATION",
    "SITE_RELATION",
    "participations",
    "per_record_event",
    "record_event",
    "record_noise_for_target",
    "schedule",
    "site_event",
]

RECORD_RELATION = "add or remove one image at one site"
SITE_RELATION = "replace all images of one site (any number of them)"


def schedule(step: int, sites: int, per_step: int) -> list[int]:
    """The sites (0-based) that take part in generator step ``step`` (0-based): a round robin
    fixed before the run, so that no site takes part more than ⌈T·P/S⌉ times."""
    s, p = _whole(sites, "sites", 1), _whole(per_step, "sites_per_step", 1)
    if p > s:
        raise PrivacyError(f"sites_per_step={per_step} exceeds the {sites} sites; give at most {s}")
    return sorted({(step * p + i) % s for i in range(p)})


def participations(steps: int, sites: int, per_step: int) -> int:
    """The most generator steps any one site takes part in under :func:`schedule`."""
    t = _whole(steps, "steps", 0)
    schedule(0, sites, per_step)  # validates sites and per_step
    return math.ceil(t * per_step / sites)


def _record_step(critics_per_site: int, sigma: float, releases: int) -> dp_accounting.DpEvent:
    m = _whole(critics_per_site, "critics_per_site", 1)
    if m == 1:
        return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma), releases)
    return gswgan_step_event(m, sigma, batch_size=releases)


def record_event(
    critics_per_site: int, noise_multiplier: float, releases: int, participations: int
) -> dp_accounting.DpEvent:
    """Per-record event of the run: the site's step (one of m critics, ``releases`` sanitized
    vectors) composed over the ``participations`` steps the record's site takes part in."""
    sigma = _check_noise(noise_multiplier)
    r, n = _whole(releases, "releases", 1), _whole(participations, "participations", 0)
    if n == 0:
        return dp_accounting.NoOpDpEvent()
    if sigma == 0.0:
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.SelfComposedDpEvent(_record_step(critics_per_site, sigma, r), n)


def site_event(
    noise_multiplier: float, releases: int, participations: int
) -> dp_accounting.DpEvent:
    """Per-site event of the run: every sanitized vector the site sends, unamplified."""
    sigma = _check_noise(noise_multiplier)
    r, n = _whole(releases, "releases", 1), _whole(participations, "participations", 0)
    if n == 0:
        return dp_accounting.NoOpDpEvent()
    if sigma == 0.0:
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma), r * n)


def per_record_event(
    critics_per_site: int,
    noise_multiplier: float,
    releases: int,
    participations: int,
    delta: float,
) -> tuple[dp_accounting.DpEvent, bool]:
    """The tighter per-record event at ``delta``, and whether it is the amplified one.

    Changing one record changes its site's images, so the per-site event bounds each record
    too; with few critics per site it can be the tighter one (its accountant, PLD, is exact
    where the subsampled event's, RDP with the replace-one theorem, is loose).
    """
    amplified = record_event(critics_per_site, noise_multiplier, releases, participations)
    whole = site_event(noise_multiplier, releases, participations)
    tighter = _reported(amplified, delta) <= _reported(whole, delta)
    return (amplified if tighter else whole), tighter


def _reported(event: dp_accounting.DpEvent, delta: float) -> float:
    """RDP for both events: PLD is tighter for the per-site one but can take minutes when the
    noise is small and the composition long (σ = 0.5, 6,400 releases)."""
    return epsilon(event, delta, "rdp")


def record_noise_for_target(
    epsilon: float, delta: float, critics_per_site: int, releases: int, participations: int
) -> float:
    """Smallest σ (noise std / 2C) whose per-record ε (:func:`per_record_event`: the tighter
    of the two events, RDP) is at most ``epsilon``."""
    if _whole(participations, "participations", 0) == 0:
        raise PrivacyError("no site takes part in any step: there is nothing to calibrate")
    amplified = noise_for_target(
        lambda s: record_event(critics_per_site, s, releases, participations),
        epsilon,
        delta,
        "rdp",
    )
    whole = noise_for_target(
        lambda s: site_event(s, releases, participations), epsilon, delta, "rdp"
    )
    return min(amplified, whole)
