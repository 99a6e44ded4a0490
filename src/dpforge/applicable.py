"""Options that do not apply to a run are refused, never ignored (issue 21.8).

A user who passes ``--method dpwgan --bayesian`` to a run that trains no discriminator (the
anchor share is 1, the default for tables) would otherwise get marginal anchoring alone and no
Bayesian bound, without a word. Each rule here names the option, why it does not apply and what
to pass instead, in one line. Only public settings are read: no record, no count.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from dpforge.errors import PrivacyError

__all__ = ["GENERATOR_FIELDS", "refuse_inapplicable", "refuse_anchor_flags"]

# Method options that shape the generator, which anchoring alone also trains; every other
# option (batch size, clipping, discriminator, optimizers of the GAN steps) belongs to the
# discriminator's refinement.
GENERATOR_FIELDS = frozenset(
    {"latent_dim", "generator_hidden", "generator_net", "generator_channels", "gumbel_tau"}
)
NO_DISCRIMINATOR = (
    "this run trains no discriminator (anchor share 1, the default for tables, images and series)"
)
INSTEAD = (
    "pass an anchor share below 1 (--anchor-share 0.5, or anchor=AnchorConfig(share=0.5)) to "
    "refine with a discriminator, or 0 for the discriminator alone"
)


def refuse_inapplicable(
    alone: bool, method_given: bool, method: str, options: Any, epsilon: float
) -> None:
    """Refuse a method, or a discriminator option, for a run whose anchoring is the whole run
    (``alone``), and a Bayesian bound for a run without a private (DP-SGD) discriminator."""
    if alone and method_given:
        raise PrivacyError(f"method '{method}' does not apply: {NO_DISCRIMINATOR}; {INSTEAD}")
    changed = _changed_fields(options)
    if alone and changed - GENERATOR_FIELDS:
        names = ", ".join(sorted(changed - GENERATOR_FIELDS))
        raise PrivacyError(f"the option(s) {names} do not apply: {NO_DISCRIMINATOR}; {INSTEAD}")
    if getattr(options, "bayesian_accounting", False) and not math.isfinite(epsilon):
        raise PrivacyError(
            "the Bayesian bound does not apply: epsilon = inf trains the discriminator without "
            "DP-SGD noise; give a finite epsilon, or leave out bayesian_accounting (--bayesian)"
        )


def refuse_anchor_flags(share: float | None, bins: int | None, statistic: str | None) -> None:
    """--anchor-bins and --anchor-statistic shape the anchoring: refused with --anchor-share 0,
    which turns it off."""
    flags = (("--anchor-bins", bins), ("--anchor-statistic", statistic))
    given = [flag for flag, value in flags if value is not None]
    if share == 0 and given:
        raise PrivacyError(
            f"{' and '.join(given)} do(es) not apply: --anchor-share 0 measures nothing (the "
            "discriminator alone); leave it out, or give an --anchor-share above 0"
        )


def _changed_fields(options: Any) -> set[str]:
    """The fields of a method's options that differ from that method's defaults."""
    if options is None:
        return set()
    defaults = type(options)()
    return {
        f.name for f in fields(options) if getattr(options, f.name) != getattr(defaults, f.name)
    }
