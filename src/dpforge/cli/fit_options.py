"""The options file's ``[anchor]``, ``[generator]`` and ``[refine]`` as the Synthesizer's config
objects, and the checks that tie them to ``--refine``.

A module of its own because the configs live beside torch code: ``dpforge fit`` imports it when
it runs, and ``dpforge --help`` never does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dpforge.cli.options_file import FitOptions
from dpforge.errors import DpforgeError
from dpforge.kinds import default_anchor
from dpforge.methods import METHODS
from dpforge.options import REFINE_SHARE
from dpforge.schema.array import ArraySchema
from dpforge.schema.table import Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.features import FeatureAnchorConfig

__all__ = ["anchor_option", "check_refine_sections", "method_config"]

REFINE_FLAG = "--refine dpcgan|dpwgan|gswgan"


def check_refine_sections(options: FitOptions, refiner: str | None) -> None:
    """Settings of a refinement need ``--refine``, and ``--refine`` needs a share of the
    budget: each contradiction is one line that names both sides."""
    where = options.source
    share = (options.anchor or {}).get("share")
    if refiner is None:
        given = [f"[refine] {k}" for k in sorted(options.refine or {})]
        given += [f"[refine] {k}" for k, v in vars(options.refine_run).items() if v is not None]
        if options.refine is not None or given:
            shown = ", ".join(given) or "[refine]"
            raise DpforgeError(
                f"{where} sets {shown}, but no refiner runs: add {REFINE_FLAG}, or remove the "
                "[refine] section"
            )
        if share is not None and share < 1:
            raise DpforgeError(
                f"{where}: [anchor] share = {share:g} leaves {1 - share:.0%} of the budget to a "
                f"refiner, but none is named: add {REFINE_FLAG}, or remove share (1: the "
                "anchoring alone)"
            )
    elif share is not None and share >= 1:
        raise DpforgeError(
            f"--refine {refiner} gets no budget: {where} gives [anchor] share = {share:g}; give "
            f"a share below 1 (e.g. {REFINE_SHARE}, or 0 for the refiner alone), or drop --refine"
        )


def anchor_option(
    options: FitOptions, schema: Schema | ArraySchema, refiner: str | None, public: bool
) -> AnchorConfig | FeatureAnchorConfig | str | None:
    """``[anchor]`` as the Synthesizer's ``anchor``: "auto" when the file leaves it out, the
    kind's default config with the file's keys otherwise; share 0 (with ``--refine``) turns
    it off. With ``--refine`` and no share, the refiner gets ``1 - REFINE_SHARE``."""
    given = dict(options.anchor or {})
    if not given:
        return "auto"
    if refiner is not None:
        given.setdefault("share", REFINE_SHARE)
    if given.get("share") == 0:
        return None
    config = replace(default_anchor(schema, public), **given)
    try:
        config.validate()
    except ValueError as exc:
        raise DpforgeError(f"{options.source}: [anchor] {exc}") from None
    return config


def method_config(options: FitOptions, refiner: str | None) -> Any:
    """``[generator]`` and ``[refine]`` as the refiner's config (dpcgan's for the generator
    of a run without refinement); None when the file sets neither, so that the command line
    gets the same defaults as Python, the anchored generator included."""
    given = {**(options.generator or {}), **(options.refine or {})}
    if not given:
        return None
    config = METHODS[refiner or "dpcgan"][1](**given)
    try:
        config.validate()
    except ValueError as exc:
        raise DpforgeError(f"{options.source}: {exc}") from None
    return config
