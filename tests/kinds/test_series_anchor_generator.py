"""With anchoring, a series model's generator is the anchor's (picked for speed and quality on
ItalyPowerDemand: the 1-D upsampling generator), whatever discriminator method is named; only a
generator the caller names explicitly replaces it."""

from dataclasses import replace

import pytest

from dpforge.datasets.series import load_italy_power_demand
from dpforge.kinds.arrays import EmbeddingAnchoring
from dpforge.kinds.feature_defaults import feature_anchor_defaults
from dpforge.methods import METHODS


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_gets_the_anchors_generator_for_series(method):
    schema = load_italy_power_demand()[2]
    anchor = replace(feature_anchor_defaults("timeseries"), share=0.5)
    config = EmbeddingAnchoring(anchor).method_config(METHODS[method][1](), True, schema)
    assert config.generator_net == "conv"
    assert tuple(config.generator_hidden) == tuple(anchor.generator_hidden)


def test_a_generator_the_caller_names_is_kept():
    schema = load_italy_power_demand()[2]
    anchoring = EmbeddingAnchoring(feature_anchor_defaults("timeseries"))
    chosen = METHODS["dpwgan"][1](generator_net="lstm")
    assert anchoring.method_config(chosen, False, schema).generator_net == "lstm"
