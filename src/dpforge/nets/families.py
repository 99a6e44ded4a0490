"""Which generator and discriminator a method trains, for each data type, and how D sees labels.

Methods never look at column types or image shapes: they ask a :class:`Networks` for a fresh
generator, a fresh discriminator and the discriminator's input for (records, one-hot labels).
The families per data type (:data:`TABLE_NETWORKS`, :data:`IMAGE_NETWORKS`,
:data:`SERIES_NETWORKS`; which one a layout takes is its kind's, :mod:`dpforge.kinds.networks`):

=============  ==============================  ==========================================
data type      generators (first: default)     discriminators (plain ``nn.Sequential``)
=============  ==============================  ==========================================
table          ``mlp`` (span heads)            ``mlp`` (row and one-hot label joined)
image          ``conv`` (DCGAN), ``upconv``     ``conv`` (label as extra constant
               (``conv`` with nearest-neighbour channels), ``mlp`` (flattened + label)
               upsampling + 3x3 convolutions),
               ``resnet`` (GS-WGAN), ``mlp``
               (DP-CGAN), ``gaussian`` (moment
               anchoring)
timeseries     ``lstm`` (Frigerio et al.),     ``mlp`` (flattened series + label),
               ``mlp``, ``conv`` (1-D,          ``conv`` (1-D, label as extra channels),
               upsampling: smooth curves),     ``lstm`` (DPLSTM: Linear maps per time step)
               ``gaussian``
=============  ==============================  ==========================================

Every discriminator is a plain ``nn.Sequential`` of Linear, Conv, GroupNorm and parameter-free
layers: the form the fast per-example clipping (``dpforge.privacy.clipping``) handles, with no
BatchNorm (rule 4 of design.md section 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from dpforge.data.encoder import Layout
from dpforge.errors import PrivacyError
from dpforge.nets.conv import ConvGenerator, condition_channels, conv1d_critic, conv_critic
from dpforge.nets.conv import flat_condition as _flat_condition
from dpforge.nets.conv1d import Conv1dGenerator
from dpforge.nets.gaussian import SubspaceGaussianGenerator
from dpforge.nets.lstm import LSTMGenerator
from dpforge.nets.mlp import FlatGenerator, Generator, flat_mlp_critic, make_discriminator
from dpforge.nets.recurrent import DPLSTM
from dpforge.nets.resnet import ResNetGenerator

AUTO = "auto"
Join = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
MakeGenerator = Callable[[Layout, Any, int], nn.Module]
MakeDiscriminator = Callable[[Layout, Any, int], nn.Sequential]


def _row_condition(rows: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
    return torch.cat([rows, onehot.to(rows.dtype)], dim=1)


@dataclass(frozen=True)
class Family:
    """The networks that fit one kind's records (the table above): generators and
    discriminators by name, the first of each the default ('auto'), each discriminator with
    how it sees the labels. Which family a layout takes is its kind's choice
    (:mod:`dpforge.kinds.networks`)."""

    data_type: str  # as messages name it
    generators: dict[str, MakeGenerator]
    discriminators: dict[str, tuple[MakeDiscriminator, Join]]


@dataclass(frozen=True)
class Networks:
    """Factories for a method's networks and the discriminator's input for (rows, labels)."""

    layout: Layout
    generator_name: str
    discriminator_name: str
    make_generator: Callable[[], nn.Module]
    make_discriminator: Callable[[], nn.Sequential]
    join: Join

    def d_input(self, rows: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
        """The discriminator's input for records ``rows`` and their one-hot labels (n, K)."""
        return self.join(rows, onehot)


def _choose(family: Family, requested: str, allowed: tuple[str, ...], role: str) -> str:
    if requested == AUTO:
        return allowed[0]
    if requested not in allowed:
        raise PrivacyError(
            f"{role} network '{requested}' does not apply to {family.data_type} data; choose "
            f"one of {list(allowed)} (or 'auto')"
        )
    return requested


def build_networks(layout: Layout, family: Family, config: Any, n_classes: int) -> Networks:
    """The networks of ``family`` that ``config`` asks for (``generator_net``,
    ``discriminator_net``) on ``layout``."""
    g_name = _choose(family, config.generator_net, tuple(family.generators), "generator")
    d_name = _choose(
        family, config.discriminator_net, tuple(family.discriminators), "discriminator"
    )
    return Networks(
        layout,
        g_name,
        d_name,
        lambda: family.generators[g_name](layout, config, n_classes),
        lambda: _discriminator(layout, family, d_name, config, n_classes),
        family.discriminators[d_name][1],
    )


def build_generator(layout: Layout, family: Family, config: Any, n_classes: int) -> nn.Module:
    """The generator of ``family`` that ``config`` asks for (``generator_net``) on ``layout``,
    and nothing else: no discriminator is built or named (a fit without refinement, a model
    being loaded)."""
    name = _choose(family, config.generator_net, tuple(family.generators), "generator")
    return family.generators[name](layout, config, n_classes)


def _discriminator(
    layout: Layout, family: Family, name: str, config: Any, n_classes: int
) -> nn.Sequential:
    """A fresh discriminator ``name`` of ``family`` (every one is built here)."""
    make, _ = family.discriminators[name]
    return make(layout, config, n_classes)


def _table_mlp(layout: Layout, c: Any, k: int) -> nn.Module:
    return Generator(c.latent_dim, k, layout.spans, c.generator_hidden, c.gumbel_tau)


def _flat_mlp(layout: Layout, c: Any, k: int) -> nn.Module:
    return FlatGenerator(c.latent_dim, k, layout.shape, c.generator_hidden)


def _conv(layout: Layout, c: Any, k: int) -> nn.Module:
    return ConvGenerator(c.latent_dim, k, layout.shape, c.generator_channels)


def _upconv(layout: Layout, c: Any, k: int) -> nn.Module:
    """Nearest-neighbour upsampling + 3x3 convolutions."""
    shape, channels = layout.shape, c.generator_channels
    return ConvGenerator(c.latent_dim, k, shape, channels, upsample="nearest")


def _conv1d(layout: Layout, c: Any, k: int) -> nn.Module:
    return Conv1dGenerator(
        c.latent_dim, k, layout.shape, c.generator_channels, c.generator_hidden[0]
    )


def _gaussian(layout: Layout, c: Any, k: int) -> nn.Module:
    return SubspaceGaussianGenerator(c.latent_dim, k, layout.shape)


def _resnet(layout: Layout, c: Any, k: int) -> nn.Module:
    return ResNetGenerator(c.latent_dim, k, layout.shape, c.generator_channels)


def _lstm(layout: Layout, c: Any, k: int) -> nn.Module:
    return LSTMGenerator(c.latent_dim, k, layout.shape, hidden=c.generator_hidden[0])


def _row_critic(layout: Layout, c: Any, k: int) -> nn.Sequential:
    return make_discriminator(layout.data_dim, k, c.discriminator_hidden)


def _flat_critic(layout: Layout, c: Any, k: int) -> nn.Sequential:
    return flat_mlp_critic(layout.shape, k, c.discriminator_hidden)


def _lstm_critic(layout: Layout, c: Any, k: int) -> nn.Sequential:
    hidden = c.discriminator_hidden[0]
    recurrent = DPLSTM(layout.shape[0] + k, hidden)
    return nn.Sequential(recurrent, nn.LeakyReLU(0.2), nn.Linear(hidden, 1))


def _image_critic(layout: Layout, c: Any, k: int) -> nn.Sequential:
    return conv_critic(layout.shape, k, c.discriminator_channels, c.discriminator_norm)


def _series_critic(layout: Layout, c: Any, k: int) -> nn.Sequential:
    return conv1d_critic(layout.shape, k, c.discriminator_channels, c.discriminator_norm)


TABLE_NETWORKS = Family("table", {"mlp": _table_mlp}, {"mlp": (_row_critic, _row_condition)})
IMAGE_NETWORKS = Family(
    "image",
    {"conv": _conv, "upconv": _upconv, "resnet": _resnet, "mlp": _flat_mlp, "gaussian": _gaussian},
    {"conv": (_image_critic, condition_channels), "mlp": (_flat_critic, _flat_condition)},
)
SERIES_NETWORKS = Family(
    "timeseries",
    {"lstm": _lstm, "mlp": _flat_mlp, "conv": _conv1d, "gaussian": _gaussian},
    {
        "mlp": (_flat_critic, _flat_condition),
        "conv": (_series_critic, condition_channels),
        "lstm": (_lstm_critic, condition_channels),
    },
)
