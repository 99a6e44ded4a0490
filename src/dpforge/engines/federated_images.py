"""GS-WGAN across federated sites (Chen et al. 2020): the server's side, over a Flower grid.

The server holds the generator and never a record. Before anything reads a record it writes
both ledgers (per record and per site, :mod:`dpforge.privacy.federated_gswgan`). Then it sends
every site a pool of the initial generator's samples (the critics' warm start), and at each
generator step it sends B generated samples with their labels (drawn from the uniform label
prior) to the sites of the round-robin schedule, averages the sanitized gradients they return
(:mod:`.federated_images_site`) and back-propagates the mean through the generator. Each
message's size in Flower's wire encoding is counted, so that the traffic per step can be put
next to exchanging model parameters (FedAvg-style GAN training).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from flwr.app import Message
from flwr.common.serde import message_to_proto

from dpforge.engines.federated_images_site import (
    GRADIENT,
    SETTINGS,
    SiteSettings,
    device_generator,
    samples_record,
    settings_record,
)
from dpforge.errors import DataError, DpforgeError, PrivacyError
from dpforge.nets.init import initialise
from dpforge.nets.mlp import FlatGenerator, flat_mlp_critic
from dpforge.privacy.federated_gswgan import (
    RECORD_RELATION,
    SITE_RELATION,
    participations,
    per_record_event,
    record_noise_for_target,
    schedule,
    site_event,
)
from dpforge.privacy.gswgan_accounting import gswgan_noise_std
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.array import ArraySchema

CRITIC_TRAINING = ("frozen", "all")
SANITIZE = ("per_sample", "batch")


@dataclass(frozen=True)
class FederatedImageConfig:
    """Settings of a federated GS-WGAN run (all public). ``noise_multiplier`` None: the
    smallest σ whose per-record ε reaches ``epsilon``; 0: a non-private baseline."""

    steps: int = 300
    batch_size: int = 32
    sites_per_step: int | None = None  # None: every site at every step
    critics_per_site: int = 1
    epsilon: float = 10.0
    delta: float = 1e-5
    noise_multiplier: float | None = None
    clip_norm: float = 1.0
    sanitize: str = "per_sample"
    critic_training: str = "frozen"
    warm_start_steps: int = 200
    d_steps: int = 1
    warm_pool: int = 1024
    latent_dim: int = 32
    generator_hidden: tuple[int, ...] = (256,)
    critic_hidden: tuple[int, ...] = (256,)
    g_lr: float = 1e-3
    d_lr: float = 1e-3  # the sites' critics (Adam), sent with their settings

    def validate(self) -> None:
        """Refuse settings that cannot run (one line each, naming the value)."""
        for name in ("steps", "batch_size", "critics_per_site", "warm_pool", "d_steps"):
            if getattr(self, name) < 1:
                raise PrivacyError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.sanitize not in SANITIZE:
            raise PrivacyError(f"sanitize must be one of {SANITIZE}, got {self.sanitize!r}")
        if self.critic_training not in CRITIC_TRAINING:
            raise PrivacyError(
                f"critic_training must be one of {CRITIC_TRAINING}, got {self.critic_training!r}"
            )
        if self.critic_training == "frozen" and self.warm_start_steps < 1:
            raise PrivacyError("critic_training='frozen' needs warm_start_steps >= 1")
        if not (self.clip_norm > 0 and math.isfinite(self.clip_norm)):
            raise PrivacyError(f"clip_norm must be finite and > 0, got {self.clip_norm}")

    def releases(self) -> int:
        """Sanitized vectors per answer: B per-sample gradients, or one batch gradient."""
        return 1 if self.sanitize == "batch" else self.batch_size


@dataclass
class Traffic:
    """Bytes of Flower messages (wire encoding), by direction and query."""

    down: dict[str, int] = field(default_factory=dict)  # server -> sites
    up: dict[str, int] = field(default_factory=dict)  # sites -> server
    messages: dict[str, int] = field(default_factory=dict)

    def add(self, action: str, down: int = 0, up: int = 0) -> None:
        """A query's bytes (``down``; it counts one message) or its reply's (``up``)."""
        if down:
            self.down[action] = self.down.get(action, 0) + down
            self.messages[action] = self.messages.get(action, 0) + 1
        if up:
            self.up[action] = self.up.get(action, 0) + up


class CountingGrid:
    """A Flower grid (a deployment's, or the in-process :class:`SiteGrid` of a simulation)
    that counts each message's bytes in Flower's wire encoding, both ways."""

    def __init__(self, grid: Any) -> None:
        self.grid, self.traffic = grid, Traffic()

    def get_node_ids(self) -> list[int]:
        return list(self.grid.get_node_ids())

    def send_and_receive(
        self, messages: Sequence[Message], *, timeout: float | None = None
    ) -> list[Message]:
        messages = list(messages)
        replies = list(self.grid.send_and_receive(messages, timeout=timeout))
        for message in messages:  # a reply's type is its query's
            self.traffic.add(message.metadata.message_type, message_to_proto(message).ByteSize())
        for reply in replies:
            self.traffic.add(reply.metadata.message_type, up=message_to_proto(reply).ByteSize())
        return replies


class ImageServer:
    """The generator, its optimiser, the two ledgers, and the steps over a Flower grid."""

    def __init__(
        self, schema: ArraySchema, config: FederatedImageConfig, nodes: Sequence[int],
        generator: torch.Generator, device: str | torch.device = "cpu",
    ) -> None:  # fmt: skip
        """``generator``: a CPU generator (the initial weights; on another ``device`` it seeds
        the server's generator there). The messages carry float32 arrays on any device."""
        config.validate()
        self.schema, self.config, self.nodes = schema, config, list(nodes)
        self.device = torch.device(device)
        self.per_step = config.sites_per_step or len(self.nodes)
        self.n_classes = len(schema.classes or ()) if schema.label else 0
        self.participations = participations(config.steps, len(self.nodes), self.per_step)
        self.sigma = self._noise_multiplier()
        self.generator = FlatGenerator(
            config.latent_dim, self.n_classes, tuple(schema.shape), config.generator_hidden
        )
        initialise(self.generator, generator)
        self.generator.to(self.device)
        self.rng = device_generator(generator, self.device)
        self.optimizer = torch.optim.Adam(
            self.generator.parameters(), lr=config.g_lr, betas=(0.5, 0.9)
        )
        self.record_ledger, self.site_ledger = PrivacyLedger(), PrivacyLedger()
        self.step_index = 0

    def _noise_multiplier(self) -> float:
        c = self.config
        if c.noise_multiplier is not None:
            return float(c.noise_multiplier)
        return record_noise_for_target(
            c.epsilon, c.delta, c.critics_per_site, c.releases(), self.participations
        )

    def site_settings(self) -> SiteSettings:
        """What each site is told: the critics, C and the noise std 2σC."""
        c = self.config
        std = gswgan_noise_std(self.sigma, c.clip_norm)
        return SiteSettings(
            c.critics_per_site, c.clip_norm, std, c.sanitize == "batch", c.critic_training,
            c.d_steps, c.warm_start_steps, c.batch_size, c.critic_hidden, c.d_lr,
        )  # fmt: skip

    def plan(self) -> None:
        """Both ledgers, written before any site reads a record."""
        c, n = self.config, self.participations
        what = f"federated gswgan: {c.steps} steps, {self.per_step} of {len(self.nodes)} sites"
        event, amplified = per_record_event(
            c.critics_per_site, self.sigma, c.releases(), n, c.delta
        )
        how = f"{c.critics_per_site} critic(s) per site" if amplified else "the per-site bound"
        self.record_ledger.record(f"{what}, per record ({RECORD_RELATION}); {how}", event)
        self.site_ledger.record(
            f"{what}, per site ({SITE_RELATION})", site_event(self.sigma, c.releases(), n)
        )

    def generate(self, n: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """n samples with labels from the uniform prior (public), with their graph."""
        labels = None
        if self.n_classes:
            labels = torch.randint(0, self.n_classes, (n,), generator=self.rng, device=self.device)
        z = self.generator.sample_latent(n, self.rng)
        return self.generator(z, labels), labels

    def run(self, grid: Any, go_on: Callable[[ImageServer], bool] | None = None) -> None:
        """Plan, warm the critics, then every generator step; ``go_on(server)``, when given,
        is asked after each step and a False stops the run there (a time budget: the ledgers
        hold all planned steps, an upper bound on the fewer ones taken)."""
        if not self.record_ledger.entries:
            self.plan()
        with torch.no_grad():
            pool, pool_labels = self.generate(self.config.warm_pool)
        self._ask(grid, self.nodes, "warmup", pool, pool_labels)
        for _ in range(self.config.steps):
            self.step(grid)
            if go_on is not None and not go_on(self):
                return

    def step(self, grid: Any) -> None:
        """One generator step: samples out, sanitized gradients back, their mean through G."""
        sites = schedule(self.step_index, len(self.nodes), self.per_step)
        rows, labels = self.generate(self.config.batch_size)
        replies = self._ask(grid, [self.nodes[s] for s in sites], "gradient", rows, labels)
        answers = [torch.as_tensor(r.content.array_records[GRADIENT][GRADIENT].numpy())
                   for r in replies]  # fmt: skip
        answers = [a.to(self.device) for a in answers]
        mean = torch.stack(answers).mean(dim=0)
        self.optimizer.zero_grad(set_to_none=True)
        rows.backward(mean / self.config.batch_size)
        self.optimizer.step()
        self.step_index += 1

    def _ask(self, grid: Any, nodes, action: str, samples, labels) -> list[Message]:
        content = samples_record(samples, labels)
        if action == "warmup":  # the sites' settings travel once, with the first query
            content[SETTINGS] = settings_record(self.site_settings())
        messages = [
            Message(content, node, f"query.{action}", group_id=f"{action}-{self.step_index}")
            for node in nodes
        ]
        replies = list(grid.send_and_receive(messages))
        for reply in replies:
            if reply.has_error():
                raise DataError(f"a site refused the {action} query: {reply.error.reason}")
        if len(replies) != len(nodes):
            raise DpforgeError(f"{len(nodes) - len(replies)} sites did not answer")
        return replies

    def parameter_counts(self) -> dict[str, int]:
        """Parameters of the generator and of one critic (for the FedAvg comparison)."""
        shape, hidden = tuple(self.schema.shape), self.config.critic_hidden
        critic = flat_mlp_critic(shape, self.n_classes, hidden)
        return {
            "generator": sum(p.numel() for p in self.generator.parameters()),
            "critic": sum(p.numel() for p in critic.parameters()),
        }


def split_images(data, n_sites: int, by_label: bool, rng: np.random.Generator) -> list:
    """``data`` (ArrayData) in ``n_sites`` parts: at random, or by label (each class's images
    to one site, classes dealt round robin: a non-i.i.d. federation)."""
    from dpforge.data.arrays import ArrayData

    if n_sites < 1 or n_sites > len(data):
        raise DataError(f"--sites {n_sites}: give between 1 and the number of images")
    if not by_label:
        order = rng.permutation(len(data))
        parts = [np.sort(p) for p in np.array_split(order, n_sites)]
    else:
        if data.labels is None:
            raise DataError("--split by:label needs labelled images (give --labels)")
        classes = sorted(set(data.labels.tolist()))
        if len(classes) < n_sites:
            raise DataError(f"--split by:label: {len(classes)} classes cannot fill {n_sites} sites")
        owner = {c: i % n_sites for i, c in enumerate(classes)}
        site = np.array([owner[v] for v in data.labels])
        parts = [np.flatnonzero(site == s) for s in range(n_sites)]
    labels = (lambda p: None) if data.labels is None else (lambda p: data.labels[p])
    return [ArrayData(data.values[p], labels(p)) for p in parts]
