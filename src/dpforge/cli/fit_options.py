"""The fit command's method and anchoring options as the Synthesizer's config objects.

A module of its own because the configs live beside torch code: ``dpforge fit`` imports it when
it runs, and ``dpforge --help`` never does.
"""

from __future__ import annotations

from dataclasses import fields, replace

from dpforge.errors import DpforgeError
from dpforge.methods import METHODS
from dpforge.schema.array import ArraySchema
from dpforge.schema.table import Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.features import FeatureAnchorConfig, feature_anchor_defaults

__all__ = ["anchor_option", "method_config"]


def anchor_option(
    schema: Schema | ArraySchema,
    share: float | None,
    bins: int | None,
    statistic: str | None,
    public: bool = False,
) -> AnchorConfig | FeatureAnchorConfig | None:
    """--anchor-share / --anchor-bins as the Synthesizer's ``anchor`` argument: marginal
    anchoring for tables, feature anchoring for images and series; share 0 turns it off."""
    if share == 0:
        return None
    if isinstance(schema, ArraySchema):
        if bins is not None:
            raise DpforgeError("--anchor-bins applies to tables only")
        config = feature_anchor_defaults(schema.kind, public)
        given = {"share": share, "statistic": statistic}
        config = replace(config, **{k: v for k, v in given.items() if v is not None})
    else:
        if statistic is not None:
            raise DpforgeError("--anchor-statistic applies to images and series only")
        config = AnchorConfig(
            share=AnchorConfig.share if share is None else share,
            n_bins=AnchorConfig.n_bins if bins is None else bins,
        )
    try:
        config.validate()
    except ValueError as exc:
        text = str(exc).replace("anchor share", "--anchor-share")
        raise DpforgeError(text.replace("anchor statistic", "--anchor-statistic")) from None
    return config


def method_config(method: str, **given: object) -> object | None:
    """The method's config with the options the user gave (None when none was given, so that
    the command line gets the same defaults as Python, the anchored generator included); an
    option of another method is an error, not silently ignored."""
    if method not in METHODS:
        raise DpforgeError(f"unknown method '{method}'; available: {sorted(METHODS)}")
    config_cls = METHODS[method][1]
    names = {f.name for f in fields(config_cls)}
    chosen = {k: v for k, v in given.items() if v is not None}
    foreign = sorted(k for k in chosen if k not in names)
    if foreign:
        flags = ", ".join("--" + k.replace("_", "-") for k in foreign)
        raise DpforgeError(f"{flags} do(es) not apply to method '{method}'")
    return config_cls(**chosen) if chosen else None
