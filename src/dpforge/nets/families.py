"""Which generator and discriminator a method trains, for each data type, and how D sees labels.

Methods never look at column types or image shapes: they ask a :class:`Networks` for a fresh
generator, a fresh discriminator and the discriminator's input for (records, one-hot labels).
The choice of families per data type:

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

TABLE, IMAGE, TIMESERIES = "table", "image", "timeseries"
AUTO = "auto"
GENERATORS = {
    TABLE: ("mlp",),
    IMAGE: ("conv", "upconv", "resnet", "mlp", "gaussian"),
    TIMESERIES: ("lstm", "mlp", "conv", "gaussian"),
}
DISCRIMINATORS = {TABLE: ("mlp",), IMAGE: ("conv", "mlp"), TIMESERIES: ("mlp", "conv", "lstm")}


def _row_condition(rows: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
    return torch.cat([rows, onehot.to(rows.dtype)], dim=1)


@dataclass(frozen=True)
class Networks:
    """Factories for a method's networks and the discriminator's input for (rows, labels)."""

    layout: Layout
    generator_name: str
    discriminator_name: str
    make_generator: Callable[[], nn.Module]
    make_discriminator: Callable[[], nn.Sequential]
    join: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

    def d_input(self, rows: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
        """The discriminator's input for records ``rows`` and their one-hot labels (n, K)."""
        return self.join(rows, onehot)


def _choose(kind: str, requested: str, options: dict[str, tuple[str, ...]], role: str) -> str:
    allowed = options[kind]
    if requested == AUTO:
        return allowed[0]
    if requested not in allowed:
        raise PrivacyError(
            f"{role} network '{requested}' does not apply to {kind} data; choose one of "
            f"{list(allowed)} (or 'auto')"
        )
    return requested


def build_networks(layout: Layout, config: Any, n_classes: int) -> Networks:
    """The networks ``config`` asks for (``generator_net``, ``discriminator_net``) on ``layout``."""
    if layout.kind not in GENERATORS:
        raise PrivacyError(f"unknown data type '{layout.kind}'; use one of {list(GENERATORS)}")
    g_name = _choose(layout.kind, config.generator_net, GENERATORS, "generator")
    d_name = _choose(layout.kind, config.discriminator_net, DISCRIMINATORS, "discriminator")
    return Networks(
        layout,
        g_name,
        d_name,
        lambda: _generator(layout, g_name, config, n_classes),
        lambda: _discriminator(layout, d_name, config, n_classes),
        _join(layout.kind, d_name),
    )


def build_generator(layout: Layout, config: Any, n_classes: int) -> nn.Module:
    """The generator ``config`` asks for (``generator_net``) on ``layout``, and nothing else:
    no discriminator is built or named (a fit without refinement, a model being loaded)."""
    if layout.kind not in GENERATORS:
        raise PrivacyError(f"unknown data type '{layout.kind}'; use one of {list(GENERATORS)}")
    name = _choose(layout.kind, config.generator_net, GENERATORS, "generator")
    return _generator(layout, name, config, n_classes)


def _generator(layout: Layout, name: str, c: Any, n_classes: int) -> nn.Module:
    if name == "mlp" and layout.kind == TABLE:
        return Generator(c.latent_dim, n_classes, layout.spans, c.generator_hidden, c.gumbel_tau)
    if name == "mlp":
        return FlatGenerator(c.latent_dim, n_classes, layout.shape, c.generator_hidden)
    if name == "conv" and layout.kind == TIMESERIES:
        return Conv1dGenerator(
            c.latent_dim, n_classes, layout.shape, c.generator_channels, c.generator_hidden[0]
        )
    if name == "conv":
        return ConvGenerator(c.latent_dim, n_classes, layout.shape, c.generator_channels)
    if name == "upconv":  # nearest-neighbour upsampling + 3x3 convolutions
        shape, channels = layout.shape, c.generator_channels
        return ConvGenerator(c.latent_dim, n_classes, shape, channels, upsample="nearest")
    if name == "gaussian":
        return SubspaceGaussianGenerator(c.latent_dim, n_classes, layout.shape)
    if name == "resnet":
        return ResNetGenerator(c.latent_dim, n_classes, layout.shape, c.generator_channels)
    return LSTMGenerator(c.latent_dim, n_classes, layout.shape, hidden=c.generator_hidden[0])


def _discriminator(layout: Layout, name: str, c: Any, n_classes: int) -> nn.Sequential:
    if layout.kind == TABLE:
        return make_discriminator(layout.data_dim, n_classes, c.discriminator_hidden)
    if name == "mlp":
        return flat_mlp_critic(layout.shape, n_classes, c.discriminator_hidden)
    if name == "lstm":
        hidden = c.discriminator_hidden[0]
        recurrent = DPLSTM(layout.shape[0] + n_classes, hidden)
        return nn.Sequential(recurrent, nn.LeakyReLU(0.2), nn.Linear(hidden, 1))
    if layout.kind == IMAGE:
        return conv_critic(layout.shape, n_classes, c.discriminator_channels, c.discriminator_norm)
    return conv1d_critic(layout.shape, n_classes, c.discriminator_channels, c.discriminator_norm)


def _join(kind: str, d_name: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    if kind == TABLE:
        return _row_condition
    if d_name == "mlp":
        return _flat_condition
    return condition_channels
