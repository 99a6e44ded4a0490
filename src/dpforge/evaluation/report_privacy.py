"""The privacy side of the reports in plain words: dp-accounting events, the model's ledger, what
was public and what was estimated privately, and what actually trained the generator.
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting

from dpforge.errors import DpforgeError
from dpforge.evaluation.report_html import _fmt, esc, table_html
from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.table import Schema


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
    report = model.privacy_spent()
    ledger: PrivacyLedger = model.ledger_
    rows = []
    for entry in ledger.entries:
        alone = PrivacyLedger([entry])
        rows.append(
            (
                entry.name,
                describe_event(entry.event),
                _eps(alone, model.delta, "pld"),
                _eps(alone, model.delta, "rdp"),
            )
        )
    parts = [
        "<h2>Privacy ledger</h2>",
        f"<p>Every access to the private records during <code>fit</code> is one entry; the "
        f"total is {esc(report.summary())}, computed by the dp-accounting accountants from the "
        "whole ledger (composition). The per-entry ε below are each entry alone, for scale; they "
        "do not add up to the total (composition is tighter).</p>",
        f"<p>The guarantee is {esc(model.unit.describe())}.</p>",
        table_html(
            ("entry", "what happened, in plain words", "ε alone (PLD)", "ε alone (RDP)"), rows
        ),
        f"<p>Total: {esc(report.summary())}. A Bayesian (data-dependent) bound is not part "
        "of the model folder and is not shown.</p>",
        _public_private(model),
    ]
    return "\n".join(parts)


def _eps(ledger: PrivacyLedger, delta: float, accountant: str) -> str:
    try:
        return _fmt(ledger.epsilon(delta, accountant=accountant))
    except DpforgeError:
        return "n/a"


def _prior_words(prior: Any) -> str:
    return prior if isinstance(prior, str) else "given in the schema"


def _public_private(model: Any) -> str:
    names = [entry.name for entry in model.ledger_.entries]
    private = [n.removeprefix("metadata: ") for n in names if n.startswith("metadata:")]
    schema = model.schema_
    rows = []
    if isinstance(schema, Schema):
        for column in schema.columns:
            what = "bounds" if column.is_numeric else "categories"
            estimated = any(n.startswith(f"{what} of '{column.name}'") for n in private)
            rows.append(
                (
                    column.name,
                    column.type,
                    what,
                    "estimated under DP" if estimated else "declared public",
                )
            )
        if schema.label is not None:
            estimated = any(n.startswith(f"label prior of '{schema.label}'") for n in private)
            prior = (
                "estimated under DP"
                if estimated
                else f"declared public ({_prior_words(schema.label_prior)})"
            )
            rows.append((schema.label, "label", "class proportions", prior))
    else:
        for item in private:
            rows.append((item, "", "", "estimated under DP"))
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
