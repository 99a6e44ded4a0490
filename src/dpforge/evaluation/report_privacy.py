"""The privacy side of the reports in plain words: dp-accounting events, the model's ledger, what
was public and what was estimated privately, and what actually trained the generator.
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting

from dpforge.errors import DpforgeError
from dpforge.evaluation.report_html import _fmt, esc, table_html
from dpforge.kinds.reports import report_of
from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent
from dpforge.privacy.ledger import PrivacyLedger


# -- words ---------------------------------------------------------------------------------
def describe_event(event: dp_accounting.DpEvent) -> str:
    """A dp-accounting event in plain words."""
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return f"Gaussian noise with noise multiplier {event.noise_multiplier:.4g}"
    if isinstance(event, dp_accounting.ZCDpEvent):
        sigma = 1 / math.sqrt(2 * event.rho)
        return f"discrete or grid Gaussian noise with noise multiplier {sigma:.4g} (zCDP)"
    if isinstance(event, DiscreteGaussianDpEvent):
        return (
            f"discrete Gaussian noise with sigma {event.sigma:.4g} on a count that one "
            f"record moves by at most {event.sensitivity}"
        )
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        return f"Laplace noise with scale {event.noise_multiplier:.4g}"
    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        return (
            f"each record used with probability {event.sampling_probability:.4g} "
            f"(Poisson sampling), then {describe_event(event.event)}"
        )
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return f"{event.count:,} times: {describe_event(event.event)}"
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return "; ".join(describe_event(e) for e in event.events)
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return "NOT private (read without noise: epsilon is infinite)"
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return "no access to the records"
    return type(event).__name__


# -- privacy sections ----------------------------------------------------------------------
def ledger_html(model: Any) -> str:
    """The model's ledger section: every entry in plain words, the total and the guarantee."""
    return (
        ledger_section(model.ledger_, model.delta, model.unit.describe())
        + "\n"
        + _public_private(model)
    )


def ledger_section(ledger: PrivacyLedger, delta: float, guarantee: str) -> str:
    """A ledger as a report section: one row per entry (its event in words, its epsilon alone by
    either accountant) and the composed total at ``delta``; ``guarantee``: the unit in words."""
    report = ledger.report(delta)
    rows = [
        (
            entry.name,
            describe_event(entry.event),
            _eps(PrivacyLedger([entry]), delta, "pld"),
            _eps(PrivacyLedger([entry]), delta, "rdp"),
        )
        for entry in ledger.entries
    ]
    parts = [
        "<h2>Privacy ledger</h2>",
        f"<p>Every access to the private records during <code>fit</code> is one entry; the "
        f"total is {esc(report.summary())}, computed by the dp-accounting accountants from the "
        "whole ledger (composition). The per-entry ε below are each entry alone, for scale; they "
        "do not add up to the total (composition is tighter).</p>",
        f"<p>The guarantee is {esc(guarantee)}.</p>",
        table_html(
            ("entry", "what happened, in plain words", "ε alone (PLD)", "ε alone (RDP)"), rows
        ),
        f"<p>Total: {esc(report.summary())}. A Bayesian (data-dependent) bound is not part "
        "of the model folder and is not shown.</p>",
    ]
    return "\n".join(parts)


def _eps(ledger: PrivacyLedger, delta: float, accountant: str) -> str:
    try:
        return _fmt(ledger.epsilon(delta, accountant=accountant))
    except DpforgeError:
        return "n/a"


def _public_private(model: Any) -> str:
    names = [entry.name for entry in model.ledger_.entries]
    private = [n.removeprefix("metadata: ") for n in names if n.startswith("metadata:")]
    rows = report_of(model.schema_).metadata_rows(model.schema_, private)
    return (
        "<h3>What was public and what was estimated privately</h3>"
        "<p>Declared values came from the schema the user wrote (public knowledge, free); "
        "estimated values were measured from the records with noise and are charged in the ledger "
        "above.</p>" + table_html(("column", "type", "metadata", "source"), rows)
    )


# -- what ran ------------------------------------------------------------------------------
def model_description(model: Any) -> str:
    """What actually trained the released generator, read from the model's public metadata
    (its ledger and its plan), not from the method name alone: a model anchored on measured
    marginals (tables), moments or feature embeddings (images, series) with no discriminator
    steps is not a GAN run, though its method field still names the GAN that would refine it."""
    names = [entry.name for entry in model.ledger_.entries]
    anchors = [n for n in names if n.startswith("anchor:")]
    kind = ""
    if anchors:
        kind = "marginal anchoring"
        if any("random features" in n for n in anchors):
            kind = "feature anchoring"
        if any("principal subspace" in n for n in anchors):
            kind = "moment anchoring (class-conditional Gaussians)"
    steps = int(getattr(model.plan_, "steps", 0) or 0)
    gan = f"{model.method} ({steps} discriminator steps)"
    if kind and steps == 0:
        return f"{kind} (no discriminator steps)"
    if kind:
        return f"{kind} + {model.method} refinement ({steps} discriminator steps)"
    return gan
