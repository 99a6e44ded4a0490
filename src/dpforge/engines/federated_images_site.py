"""A GS-WGAN site: its images and critics stay here; only sanitized sample gradients leave.

A site answers two Flower queries (:func:`image_site_app`):

* ``query.warmup``: a pool of samples of the initial generator (which depends on no record).
  Every critic trains ``warm_start_steps`` WGAN-GP steps on its own subset against that pool.
  Nothing is returned but an acknowledgement.
* ``query.gradient``: B generated samples and their labels. With ``critic_training="all"``
  every critic of the site first trains ``d_steps`` steps against them (whichever is picked
  next); then the site picks one critic uniformly with its own generator, and returns the
  gradient of that critic's generator loss -D(x, y) with respect to each sample, clipped to C
  (per sample, or the whole batch as one vector) with N(0, std²) added to every coordinate once.

Why this is private is in :mod:`dpforge.privacy.federated_gswgan`. Records are scaled to
[-1, 1] by the schema's public range (:class:`~dpforge.data.array_encoder.ArrayEncoder`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from torch import nn

from dpforge.data.array_encoder import ArrayEncoder
from dpforge.data.arrays import ArrayData, validate_arrays
from dpforge.nets.init import initialise
from dpforge.nets.mlp import flat_mlp_critic, one_hot
from dpforge.privacy.clipping import clip_factors
from dpforge.schema.array import ArraySchema

SAMPLES, LABELS, GRADIENT, DONE = "samples", "labels", "gradient", "done"
SETTINGS = "dpforge.image_site_settings"


@dataclass(frozen=True)
class SiteSettings:
    """What every site is told (public): the critics and the sanitizer's C and noise std."""

    critics: int
    clip_norm: float
    noise_std: float
    whole_batch: bool  # True: the B gradients clipped to C as one vector
    critic_training: str  # "frozen" | "all"
    d_steps: int
    warm_start_steps: int
    batch_size: int
    critic_hidden: tuple[int, ...]
    d_lr: float = 1e-3
    gp_weight: float = 10.0


def sanitize(
    upstream: torch.Tensor, clip: float, std: float, whole_batch: bool, generator: torch.Generator
) -> torch.Tensor:
    """Clip each sample's gradient (or the whole batch as one vector) to L2 norm ``clip``,
    then add N(0, std²) to every coordinate, once."""
    units = upstream.reshape(1, -1) if whole_batch else upstream.flatten(1)
    norms = units.double().norm(dim=1).to(upstream.dtype)
    clipped = (units * clip_factors(norms, clip)[:, None]).reshape(upstream.shape)
    if std == 0.0:
        return clipped
    noise = torch.randn(clipped.shape, generator=generator, dtype=clipped.dtype)
    return clipped + std * noise


class ImageSite:
    """One site's records (encoded), its ``critics`` critics and its own random generator."""

    def __init__(
        self,
        records: ArrayData,
        schema: ArraySchema,
        settings: SiteSettings,
        generator: torch.Generator,
    ) -> None:
        encoder = ArrayEncoder(schema)
        values, labels = encoder.transform(validate_arrays(records, schema))
        self.features = torch.as_tensor(values, dtype=torch.float32)
        self.labels = None if labels is None else torch.as_tensor(labels)
        self.n_classes, self.settings, self.rng = encoder.n_classes, settings, generator
        shape = tuple(schema.shape)
        self.critics = nn.ModuleList(
            flat_mlp_critic(shape, self.n_classes, settings.critic_hidden)
            for _ in range(settings.critics)
        )
        for critic in self.critics:
            initialise(critic, generator)
        self.optimizers = [
            torch.optim.Adam(c.parameters(), lr=settings.d_lr, betas=(0.5, 0.9))
            for c in self.critics
        ]
        # Each record to one critic, independently and uniformly (the accounting needs it).
        self._assign(torch.randint(0, settings.critics, (len(self.features),), generator=generator))

    def _assign(self, subset: torch.Tensor) -> None:
        self.subset = subset
        self.rows = [torch.nonzero(subset == k).flatten() for k in range(self.settings.critics)]

    def d_input(self, x: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        return torch.cat([x.flatten(1), one_hot(labels, self.n_classes, len(x), x)], dim=1)

    def warm_start(self, pool: torch.Tensor, pool_labels: torch.Tensor | None) -> None:
        """Every critic trains on its own subset against the initial generator's pool."""
        b = self.settings.batch_size
        for k in range(len(self.critics)):
            for _ in range(self.settings.warm_start_steps):
                pick = torch.randint(0, len(pool), (b,), generator=self.rng)
                fake_labels = None if pool_labels is None else pool_labels[pick]
                self.critic_step(k, pool[pick], fake_labels)

    def critic_step(self, k: int, fake: torch.Tensor, fake_labels: torch.Tensor | None) -> float:
        """One non-private WGAN-GP step of critic k on a batch of its own subset."""
        rows = self.rows[k]
        if rows.numel() == 0:
            return math.nan
        pick = rows[torch.randint(0, rows.numel(), (len(fake),), generator=self.rng)]
        real = self.features[pick]
        real_labels = None if self.labels is None else self.labels[pick]
        critic = self.critics[k]
        mix = torch.rand((len(real),) + (1,) * (real.dim() - 1), generator=self.rng)
        hat = (mix * real + (1 - mix) * fake).requires_grad_(True)
        (slopes,) = torch.autograd.grad(
            critic(self.d_input(hat, real_labels)).sum(), hat, create_graph=True
        )
        penalty = ((slopes.flatten(1).norm(dim=1) - 1) ** 2).mean()
        loss = (
            critic(self.d_input(fake, fake_labels)).mean()
            - critic(self.d_input(real, real_labels)).mean()
            + self.settings.gp_weight * penalty
        )
        self.optimizers[k].zero_grad(set_to_none=True)
        loss.backward()
        self.optimizers[k].step()
        return float(loss.detach())

    def answer(self, samples: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The sanitized gradient of -D_k(x, y) w.r.t. each sample, k picked here."""
        if self.settings.critic_training == "all":
            for k in range(len(self.critics)):
                for _ in range(self.settings.d_steps):
                    self.critic_step(k, samples, labels)
        k = int(torch.randint(0, len(self.critics), (1,), generator=self.rng))
        x = samples.detach().clone().requires_grad_(True)
        scores = self.critics[k](self.d_input(x, labels))[:, 0]
        (upstream,) = torch.autograd.grad(-scores.sum(), x)
        s = self.settings
        return sanitize(upstream, s.clip_norm, s.noise_std, s.whole_batch, self.rng)

    def state_arrays(self) -> dict[str, np.ndarray]:
        """What a deployed site keeps between messages (Flower starts a process per message):
        the critics, their Adam moments, the records' critic assignment and the generator's
        state. It stays in the site's own Flower context, on the site's machine."""
        arrays = {"subset": self.subset, "rng": self.rng.get_state()}
        for k, (critic, opt) in enumerate(zip(self.critics, self.optimizers, strict=True)):
            for name, value in critic.state_dict().items():
                arrays[f"critic.{k}.{name}"] = value
            for i, moments in opt.state_dict()["state"].items():
                for name, value in moments.items():
                    arrays[f"adam.{k}.{i}.{name}"] = value.reshape(value.shape or (1,))
        return {k: v.detach().numpy().copy() for k, v in arrays.items()}  # copies, not views

    def load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """The state :meth:`state_arrays` kept, back into this site."""
        self.rng.set_state(torch.as_tensor(arrays["rng"]))
        self._assign(torch.as_tensor(arrays["subset"]))
        for k, (critic, opt) in enumerate(zip(self.critics, self.optimizers, strict=True)):
            critic.load_state_dict({n: torch.as_tensor(arrays[f"critic.{k}.{n}"])
                                    for n in critic.state_dict()})  # fmt: skip
            moments: dict[int, dict[str, torch.Tensor]] = {}
            for key, value in arrays.items():
                if key.startswith(f"adam.{k}."):
                    i, name = key.split(".")[2:]
                    tensor = torch.as_tensor(value)  # Adam's step count: a 0-d tensor
                    step = name == "step"
                    moments.setdefault(int(i), {})[name] = tensor.reshape(()) if step else tensor
            groups = opt.state_dict()["param_groups"]
            opt.load_state_dict({"state": moments, "param_groups": groups})


# ------------------------------------------------------------------------------ Flower


def samples_record(samples: torch.Tensor, labels: torch.Tensor | None) -> RecordDict:
    """The server's query: samples as float32 and, for a conditional model, labels."""
    arrays = {SAMPLES: Array(samples.detach().numpy().astype(np.float32))}
    if labels is not None:
        arrays[LABELS] = Array(labels.numpy().astype(np.int64))
    return RecordDict({SAMPLES: ArrayRecord(arrays)})


def read_samples(content: RecordDict) -> tuple[torch.Tensor, torch.Tensor | None]:
    record = content.array_records[SAMPLES]
    samples = torch.as_tensor(record[SAMPLES].numpy())
    labels = torch.as_tensor(record[LABELS].numpy()) if LABELS in record else None
    return samples, labels


def settings_record(settings: SiteSettings) -> ConfigRecord:
    """The sites' settings as the warm-up query carries them (JSON)."""
    return ConfigRecord({"json": json.dumps(asdict(settings))})


def read_settings(record: ConfigRecord) -> SiteSettings:
    values = json.loads(str(record["json"]))
    return SiteSettings(**{**values, "critic_hidden": tuple(values["critic_hidden"])})


def image_site_app(
    site_of: Callable[[Context, SiteSettings | None], ImageSite],
    keep: Callable[[Context, ImageSite], None] = lambda context, site: None,
    before_answer: Callable[[Context, ImageSite, int], None] = lambda context, site, n: None,
) -> ClientApp:
    """The sites' ClientApp: ``query.warmup`` and ``query.gradient`` (see the module notes).
    ``site_of(context, settings)`` gives the site: a new one at the warm-up query (``settings``
    are the ones it carries), else the site as it was (``settings`` None); ``keep`` saves a
    site's state after each answer (a deployment's sites); ``before_answer(context, site,
    samples)`` runs before a gradient is computed (a deployed site's own count and cap)."""
    app = ClientApp()

    @app.query("warmup")
    def warm(msg: Message, context: Context) -> Message:
        site = site_of(context, read_settings(msg.content.config_records[SETTINGS]))
        site.warm_start(*read_samples(msg.content))
        keep(context, site)
        return Message(RecordDict({DONE: ConfigRecord({DONE: True})}), reply_to=msg)

    @app.query("gradient")
    def gradient(msg: Message, context: Context) -> Message:
        site = site_of(context, None)
        samples, labels = read_samples(msg.content)
        before_answer(context, site, samples.shape[0])
        sanitized = site.answer(samples, labels)
        keep(context, site)
        record = ArrayRecord({GRADIENT: Array(sanitized.numpy().astype(np.float32))})
        return Message(RecordDict({GRADIENT: record}), reply_to=msg)

    return app
