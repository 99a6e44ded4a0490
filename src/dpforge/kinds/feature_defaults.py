"""What "auto" means for an image's or a series' feature anchoring (all public): the
anchor config each kind gets by default (:func:`feature_anchor_defaults`, what an options
file's ``[anchor]`` keys change) and the statistic ``statistic="auto"`` stands for
(:func:`resolve_statistic`), and the views each kind's random features take
(:func:`kind_views`). The statistics themselves are :mod:`dpforge.statistics.features`
and :mod:`dpforge.statistics.array_anchor`; the series' settings below were tuned on public
data sets (each with its record).
"""

from __future__ import annotations

from dataclasses import replace

from dpforge.schema.array import IMAGE, TIMESERIES
from dpforge.statistics.feature_views import SERIES_VIEWS, KindViews
from dpforge.statistics.features import (
    AUTO,
    EMBEDDING,
    MOMENTS,
    PERCEPTUAL,
    FeatureAnchorConfig,
)

__all__ = ["feature_anchor_defaults", "kind_views", "resolve_statistic"]

# The views each kind's maps may name, and those of a map naming none (images: the pixels;
# series: the values and their first differences, the map before views were a setting).
_VIEWS = {
    IMAGE: KindViews(IMAGE, "images", ("values",), ("values",)),
    TIMESERIES: KindViews(TIMESERIES, "series", SERIES_VIEWS, ("values", "differences")),
}

SERIES_BANDWIDTHS = (0.1, 0.2)
# 600 anchor steps instead of 1,500: the same 1-NN DTW on the validation split (0.906 vs 0.909,
# seeds 0 and 1) in 40 % of the time; the series worked example (docs/series.md) then fits in
# about a minute (bench/results/series/italy_anchor_notes.md).
SERIES_STEPS = 600
# Values, first differences and local windows (6 steps every 3): chosen on public UCR sets
# (GunPoint, ArrowHead, OSULeaf; never ItalyPowerDemand) at ItalyPowerDemand's noise: mean 1-NN
# DTW 0.690 against 0.654 for values and differences, worse on 2 of 9 runs
# (bench/results/series/views_public.md).
SERIES_DEFAULT_VIEWS = ("values", "differences", "windows")
# The weight c of the class counts in the series release: (1 / D)^(1/4) rounded, for the
# default map's D = 12,000 (noise_optimal_count_weight). Chosen on public UCR sets (GunPoint,
# ArrowHead, OSULeaf; never ItalyPowerDemand) at ItalyPowerDemand's noise: mean 1-NN DTW 0.712
# against 0.698 for c = 0.5, worse on 2 of 9 runs (bench/results/series/znorm_public.md).
SERIES_COUNT_WEIGHT = 0.1
# The setting measured in bench/results/images/perceptual.md (more steps untested for lack
# of machine time).
PERCEPTUAL_STEPS = 300


def feature_anchor_defaults(kind: str, public: bool = False) -> FeatureAnchorConfig:
    """The feature anchoring a user gets for ``kind`` ("image" or "timeseries"; public), and
    for images with a declared ``public`` set: perceptual features and moments, a
    convolutional generator trained ``PERCEPTUAL_STEPS`` steps on batches of 200.

    Images: moments in a principal subspace (the embedding settings below apply when a user
    picks ``statistic="embedding"``). Series: the embedding, with narrower kernels, (0.1, 0.2)
    instead of (0.35, 0.7), and the 1-D upsampling generator (``generator_net="conv"``, its MLP
    trunk ``generator_hidden[0]`` wide) instead of the MLP, and random features of the values,
    first differences and local windows (``SERIES_DEFAULT_VIEWS``), and the class counts weighted
    ``SERIES_COUNT_WEIGHT``
    (:func:`~dpforge.statistics.features.noise_optimal_count_weight`). At the image bandwidths the
    kernel on a short series cannot tell apart curves that differ only in a few hours (the
    evening peak that separates the seasons of a power curve); an MLP draws every hour on its
    own, so its curves come out jagged. Chosen on a validation split of the TRAINING part of
    ItalyPowerDemand (the test split never read; 14 settings, 2 seeds each, 1-NN DTW accuracy
    0.83 at the image defaults, 0.90 for the MLP at bandwidths <= 0.2, 0.91 for this setting,
    0.84 for the same generator at (0.05, 0.1)); log:
    bench/results/series/italy_anchor_tuning.jsonl.
    """
    if kind == "timeseries":
        return FeatureAnchorConfig(
            statistic=EMBEDDING,
            bandwidths=SERIES_BANDWIDTHS,
            views=SERIES_DEFAULT_VIEWS,
            count_weight=SERIES_COUNT_WEIGHT,
            generator_net="conv",
            steps=SERIES_STEPS,
        )
    if public and kind == "image":
        return FeatureAnchorConfig(statistic=PERCEPTUAL, steps=PERCEPTUAL_STEPS, batch_size=200)
    return FeatureAnchorConfig(statistic=MOMENTS)


def resolve_statistic(
    config: FeatureAnchorConfig, kind: str, public: bool = False
) -> FeatureAnchorConfig:
    """``config`` with ``statistic="auto"`` made concrete: for images perceptual features with
    a declared public set, else moments; embedding for series."""
    if config.statistic != AUTO:
        return config
    if kind != "image":
        return replace(config, statistic=EMBEDDING)
    return replace(config, statistic=PERCEPTUAL if public else MOMENTS)


def kind_views(kind: str) -> KindViews:
    """The views the kind named ``kind`` ("image" or "timeseries") takes."""
    return _VIEWS[kind]
