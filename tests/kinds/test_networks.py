"""Each kind's network family (kinds/networks.py): the defaults 'auto' picks, the refusals,
and the discriminator's input for (records, labels)."""

import pytest
import torch

from dpforge.data.encoder import Layout
from dpforge.errors import PrivacyError
from dpforge.kinds.networks import family_of
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.nets.families import build_generator, build_networks

IMAGE = Layout("image", shape=(1, 8, 8))
SERIES = Layout("timeseries", shape=(1, 24))
SMALL = DPCGANConfig(
    latent_dim=4, generator_channels=(8, 4), discriminator_channels=(4, 8),
    generator_hidden=(8,), discriminator_hidden=(8,),
)  # fmt: skip


@pytest.mark.parametrize(
    ("layout", "generator", "discriminator", "expected_class"),
    [(IMAGE, "conv", "conv", "ConvGenerator"), (SERIES, "lstm", "mlp", "LSTMGenerator")],
)
def test_auto_picks_the_first_network_of_the_kinds_family(
    layout, generator, discriminator, expected_class
):
    networks = build_networks(layout, family_of(layout), SMALL, 3)
    assert (networks.generator_name, networks.discriminator_name) == (generator, discriminator)
    assert type(networks.make_generator()).__name__ == expected_class
    rows = torch.rand(5, *layout.shape) * 2 - 1
    d_in = networks.d_input(rows, torch.eye(3)[[0, 1, 2, 0, 1]])
    assert networks.make_discriminator()(d_in).shape == (5, 1)


def test_a_network_of_another_kind_is_refused_and_an_unknown_kind_too():
    config = DPCGANConfig(generator_net="lstm")
    with pytest.raises(PrivacyError, match="generator network 'lstm' does not apply to image"):
        build_generator(IMAGE, family_of(IMAGE), config, 2)
    with pytest.raises(PrivacyError, match="unknown data type 'audio'"):
        family_of(Layout("audio"))
