"""Perceptual anchoring's generator (issue 24): the convolutional generator, or its
nearest-neighbour upsampling variant (``upconv``) when the method's options name it; any other
family is refused before any record is read."""

from __future__ import annotations

import pytest

from dpforge.datasets.images import load_digits_images
from dpforge.errors import PrivacyError
from dpforge.kinds.feature_defaults import feature_anchor_defaults
from dpforge.kinds.perceptual import PerceptualAnchoring
from dpforge.methods.dpcgan import DPCGANConfig

SCHEMA = load_digits_images()[2]


@pytest.mark.parametrize(
    ("asked", "built"), [("auto", "conv"), ("conv", "conv"), ("upconv", "upconv")]
)
def test_the_generator_is_conv_or_upconv(asked, built):
    anchoring = PerceptualAnchoring(feature_anchor_defaults("image", public=True), None)
    config = anchoring.method_config(DPCGANConfig(generator_net=asked), False, SCHEMA)
    assert config.generator_net == built


def test_another_family_is_refused():
    anchoring = PerceptualAnchoring(feature_anchor_defaults("image", public=True), None)
    with pytest.raises(PrivacyError, match="upconv"):
        anchoring.method_config(DPCGANConfig(generator_net="resnet"), False, SCHEMA)
