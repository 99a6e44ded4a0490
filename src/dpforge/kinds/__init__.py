"""Data kinds as plug-ins: tables, images and series.

A kind (:class:`TableKind`, :class:`ArrayKind`) says how its records are checked, how its
undeclared metadata are estimated under DP and how records are encoded. Its anchoring
(:mod:`dpforge.kinds.base`) says what it measures and how its generator is fitted. The facade
and the pipeline call these and never branch on the kind. Each kind's network family is
:mod:`dpforge.kinds.networks`, the images' and series' anchor defaults
:mod:`dpforge.kinds.feature_defaults`, and each kind's part of the reports
:mod:`dpforge.kinds.reports` (not imported here: a fit loads no plotting).
"""

from __future__ import annotations

from typing import Any

from dpforge.errors import PrivacyError
from dpforge.kinds.arrays import ArrayKind, EmbeddingAnchoring, MomentAnchoring
from dpforge.kinds.base import Anchoring, Measured, NoAnchoring
from dpforge.kinds.feature_defaults import feature_anchor_defaults, kind_views, resolve_statistic
from dpforge.kinds.perceptual import PerceptualAnchoring
from dpforge.kinds.table import CLIP_NOTE, MarginalAnchoring, TableKind
from dpforge.schema.array import ArraySchema
from dpforge.schema.table import Schema
from dpforge.statistics import image_sizes
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.features import MOMENTS, PERCEPTUAL, FeatureAnchorConfig
from dpforge.statistics.perceptual import PublicImages

__all__ = [
    "CLIP_NOTE",
    "Anchoring",
    "ArrayKind",
    "Measured",
    "TableKind",
    "anchor_config_class",
    "anchoring_for",
    "default_anchor",
    "kind_of",
    "resolve_anchor",
]


def kind_of(schema: Schema | ArraySchema) -> type[TableKind] | type[ArrayKind]:
    """The plug-in for ``schema``'s data kind."""
    return ArrayKind if isinstance(schema, ArraySchema) else TableKind


def anchoring_for(
    anchor: AnchorConfig | FeatureAnchorConfig | None, public: PublicImages | None = None
) -> Anchoring:
    """The anchoring plug-in of a resolved anchor configuration (see :func:`resolve_anchor`);
    ``public``: the declared public images that perceptual anchoring trains its extractor on."""
    if isinstance(anchor, FeatureAnchorConfig) and anchor.statistic == PERCEPTUAL:
        if public is None:
            raise PrivacyError(
                "perceptual anchoring needs a declared public image set: pass public_data "
                "([data] public_data), or anchor on moments"
            )
        return PerceptualAnchoring(anchor, public)
    if public is not None:
        raise PrivacyError(
            "a public set is used by perceptual anchoring only (images); leave the anchor at "
            "'auto' or FeatureAnchorConfig(statistic='perceptual'), or drop public_data"
        )
    if anchor is None:
        return NoAnchoring()
    if isinstance(anchor, AnchorConfig):
        return MarginalAnchoring(anchor)
    if anchor.statistic == MOMENTS:
        return MomentAnchoring(anchor)
    return EmbeddingAnchoring(anchor)


def resolve_anchor(
    anchor: AnchorConfig | FeatureAnchorConfig | str | None, schema: Any, public: bool = False
) -> AnchorConfig | FeatureAnchorConfig | None:
    """The anchoring of this run: "auto" anchors tables on marginals, images on moments in a
    principal subspace (with a declared ``public`` set: on public perceptual features too)
    and series on random-feature embeddings."""
    if anchor == "auto":
        anchor = default_anchor(schema, public)
    if anchor is None:
        return None
    _check_anchor_type(anchor, schema)
    try:
        anchor.validate()
    except ValueError as exc:
        raise PrivacyError(str(exc)) from None
    if isinstance(anchor, FeatureAnchorConfig) and anchor.share == 0:
        return None  # no embedding release: the discriminator alone, with its own generator
    if isinstance(anchor, FeatureAnchorConfig):
        resolved = resolve_statistic(anchor, schema.kind, public)
        _check_views(resolved, schema)
        if schema.kind == "image":
            image_sizes.check_shape(tuple(schema.shape), resolved)  # before any release
        return resolved
    return anchor


def default_anchor(schema: Any, public: bool = False) -> AnchorConfig | FeatureAnchorConfig:
    """The kind's own anchor config ("auto"; with a declared ``public`` set of images, its
    perceptual features): what an options file's ``[anchor]`` keys change."""
    if isinstance(schema, Schema):
        return AnchorConfig()
    return feature_anchor_defaults(schema.kind, public)


def anchor_config_class(kind: str) -> type[AnchorConfig] | type[FeatureAnchorConfig]:
    """The anchor config of the kind named ``kind`` ("table", "image" or "timeseries")."""
    return AnchorConfig if kind == TableKind.kind_name(None) else FeatureAnchorConfig


def _check_views(anchor: FeatureAnchorConfig, schema: Any) -> None:
    """Views name a random-feature map: refused on other statistics and where the kind or
    the series' length cannot take them (before any release)."""
    if not anchor.views:
        return
    if anchor.statistic != "embedding":
        raise PrivacyError(
            f"anchor views apply to the random-feature embedding; this run's statistic is "
            f"{anchor.statistic!r}: leave views empty, or pass statistic='embedding'"
        )
    try:
        kind_views(schema.kind).check(tuple(anchor.views), tuple(schema.shape))
    except ValueError as exc:
        raise PrivacyError(str(exc)) from None


def _check_anchor_type(anchor: Any, schema: Any) -> None:
    if not isinstance(anchor, AnchorConfig | FeatureAnchorConfig):
        raise PrivacyError(
            f"anchor must be 'auto', None, an AnchorConfig (tables) or a FeatureAnchorConfig "
            f"(images, series), got {anchor!r}"
        )
    if isinstance(anchor, AnchorConfig) and not isinstance(schema, Schema):
        raise PrivacyError(
            "marginal anchoring (AnchorConfig) is for tables; images and series take a "
            "FeatureAnchorConfig, or anchor=None"
        )
    if isinstance(anchor, FeatureAnchorConfig) and isinstance(schema, Schema):
        raise PrivacyError(
            "feature anchoring (FeatureAnchorConfig) is for images and series; tables take an "
            "AnchorConfig, or anchor=None"
        )
