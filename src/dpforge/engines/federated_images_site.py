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
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from torch.nn import functional as F

from dpforge.data.array_encoder import ArrayEncoder
from dpforge.data.arrays import ArrayData, validate_arrays
from dpforge.errors import DpforgeError
from dpforge.nets.critic_bank import CriticBank
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
    noise = torch.randn(
        clipped.shape, generator=generator, dtype=clipped.dtype, device=clipped.device
    )
    return clipped + std * noise


class ImageSite:
    """One site's records (encoded, on ``device``), its critics (a :class:`CriticBank`) and its
    own random generator. ``generator`` is a CPU generator: it draws the critics' initial
    weights and, on another device, seeds the site's generator there (noise drawn on the
    device)."""

    def __init__(
        self,
        records: ArrayData,
        schema: ArraySchema,
        settings: SiteSettings,
        generator: torch.Generator,
        device: str | torch.device = "cpu",
    ) -> None:
        encoder = ArrayEncoder(schema)
        values, labels = encoder.transform(validate_arrays(records, schema))
        self.device = torch.device(device)
        self.features = torch.as_tensor(values, dtype=torch.float32).flatten(1).to(self.device)
        self.labels = None if labels is None else torch.as_tensor(labels).to(self.device)
        self.n_classes, self.settings = encoder.n_classes, settings
        self.critics = CriticBank(
            settings.critics, self.features.shape[1] + self.n_classes, settings.critic_hidden
        )
        self.critics.initialise(generator)
        self.critics.to(self.device)
        self.rng = device_generator(generator, self.device)
        self.optimizer = torch.optim.Adam(
            self.critics.parameters(), lr=settings.d_lr, betas=(0.5, 0.9)
        )
        # Each record to one critic, independently and uniformly (the accounting needs it).
        n = len(self.features)
        self._assign(torch.randint(0, settings.critics, (n,), generator=self.rng,
                                   device=self.device))  # fmt: skip

    def _assign(self, subset: torch.Tensor) -> None:
        self.subset = subset.to(self.device)
        self.order = torch.argsort(self.subset, stable=True)  # the records, critic by critic
        self.counts = torch.bincount(self.subset, minlength=self.settings.critics)
        self.offsets = torch.cumsum(self.counts, 0) - self.counts
        self.active = (self.counts > 0).to(torch.float32)  # a critic with no record: no loss

    def d_input(self, x: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """A critic's input for samples (n, *shape): flattened, the one-hot label appended."""
        return self._with_labels(x.flatten(1), labels)

    def _with_labels(self, flat: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """Rows (..., D) with their one-hot labels (..., n_classes) appended."""
        if not self.n_classes or labels is None:
            return flat
        return torch.cat([flat, F.one_hot(labels, self.n_classes).to(flat.dtype)], dim=-1)

    def _draw(self, shape: tuple[int, ...], kind: str) -> torch.Tensor:
        if kind == "uniform":
            return torch.rand(shape, generator=self.rng, device=self.device)
        return torch.randn(shape, generator=self.rng, device=self.device)

    def warm_start(self, pool: torch.Tensor, pool_labels: torch.Tensor | None) -> None:
        """Every critic trains on its own subset against the initial generator's pool."""
        m, b = self.settings.critics, self.settings.batch_size
        pool = pool.to(self.device).flatten(1)
        pool_labels = None if pool_labels is None else pool_labels.to(self.device)
        for _ in range(self.settings.warm_start_steps):
            pick = torch.randint(0, len(pool), (m, b), generator=self.rng, device=self.device)
            self.critic_step(pool[pick], None if pool_labels is None else pool_labels[pick])

    def _real(self, b: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """A batch of b records of each critic's own subset: (m, b, D) and labels (m, b)."""
        u = self._draw((self.settings.critics, b), "uniform")
        last = (self.counts - 1).clamp(min=0)[:, None]
        within = torch.minimum((u * self.counts[:, None]).long(), last)
        idx = self.order[(self.offsets[:, None] + within).clamp(max=len(self.order) - 1)]
        return self.features[idx], None if self.labels is None else self.labels[idx]

    def critic_step(self, fake: torch.Tensor, fake_labels: torch.Tensor | None) -> float:
        """One non-private WGAN-GP step of every critic on a batch of its own subset; ``fake``
        (m, b, D) gives each critic its own generated batch. Returns the mean loss."""
        real, real_labels = self._real(fake.shape[1])
        mix = self._draw((fake.shape[0], fake.shape[1], 1), "uniform")
        hat = (mix * real + (1 - mix) * fake).requires_grad_(True)
        (slopes,) = torch.autograd.grad(
            self.critics(self._with_labels(hat, real_labels)).sum(), hat, create_graph=True
        )
        penalty = ((slopes.norm(dim=2) - 1) ** 2).mean(dim=1)
        per_critic = (
            self.critics(self._with_labels(fake, fake_labels)).mean(dim=1)
            - self.critics(self._with_labels(real, real_labels)).mean(dim=1)
            + self.settings.gp_weight * penalty
        )
        loss = (per_critic * self.active).sum()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach()) / max(float(self.active.sum()), 1.0)

    def check_query(self, samples: torch.Tensor, labels: torch.Tensor | None) -> None:
        """Refuse samples the server sends that are not a batch of this site's records' shape
        (finite floats) with one valid label each: a function of the query and of the
        public schema only."""
        dim, n = self.features.shape[1], samples.shape[0] if samples.ndim else 0
        finite = bool(torch.isfinite(samples).all()) if samples.is_floating_point() else False
        if not finite or samples.ndim < 2 or n < 1 or samples[0].numel() != dim:
            raise DpforgeError(f"this site refuses the query: the samples are not a batch of "
                               f"finite records of {dim} values")  # fmt: skip
        if (labels is None) != (not self.n_classes) or (labels is not None and (
                labels.shape != (n,) or labels.is_floating_point()
                or bool(((labels < 0) | (labels >= self.n_classes)).any()))):  # fmt: skip
            raise DpforgeError("this site refuses the query: one label in the schema's classes "
                               "per sample is needed")  # fmt: skip

    def answer(self, samples: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The sanitized gradient of -D_k(x, y) w.r.t. each sample, k picked here."""
        samples = samples.to(self.device)
        labels = None if labels is None else labels.to(self.device)
        m = self.settings.critics
        if self.settings.critic_training == "all":
            fake = samples.flatten(1).expand(m, -1, -1)
            fake_labels = None if labels is None else labels.expand(m, -1)
            for _ in range(self.settings.d_steps):
                self.critic_step(fake, fake_labels)
        k = int(torch.randint(0, m, (1,), generator=self.rng, device=self.device))
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
        for name, value in self.critics.state_dict().items():
            arrays[f"critic.{name}"] = value
        for i, moments in self.optimizer.state_dict()["state"].items():
            for name, value in moments.items():
                arrays[f"adam.{i}.{name}"] = value.reshape(value.shape or (1,))
        return {k: v.detach().cpu().numpy().copy() for k, v in arrays.items()}  # copies

    def load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """The state :meth:`state_arrays` kept, back into this site."""
        self.rng.set_state(torch.as_tensor(arrays["rng"]))
        self._assign(torch.as_tensor(arrays["subset"]))
        self.critics.load_state_dict({n: torch.as_tensor(arrays[f"critic.{n}"])
                                      for n in self.critics.state_dict()})  # fmt: skip
        moments: dict[int, dict[str, torch.Tensor]] = {}
        for key, value in arrays.items():
            if key.startswith("adam."):
                i, name = key.split(".")[1:]
                tensor = torch.as_tensor(value).to(self.device)
                step = name == "step"  # Adam's step count: a 0-d tensor (on the CPU)
                moments.setdefault(int(i), {})[name] = tensor.reshape(()).cpu() if step else tensor
        groups = self.optimizer.state_dict()["param_groups"]
        self.optimizer.load_state_dict({"state": moments, "param_groups": groups})


def device_generator(generator: torch.Generator, device: torch.device) -> torch.Generator:
    """``generator`` itself on the CPU; elsewhere a generator on ``device`` seeded from it."""
    if device.type == "cpu":
        return generator
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    return torch.Generator(device=device).manual_seed(seed)


# ------------------------------------------------------------------------------ Flower


def samples_record(samples: torch.Tensor, labels: torch.Tensor | None) -> RecordDict:
    """The server's query: samples as float32 and, for a conditional model, labels."""
    arrays = {SAMPLES: Array(samples.detach().cpu().numpy().astype(np.float32))}
    if labels is not None:
        arrays[LABELS] = Array(labels.cpu().numpy().astype(np.int64))
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
        pool, pool_labels = read_samples(msg.content)
        site.check_query(pool, pool_labels)
        site.warm_start(pool, pool_labels)
        keep(context, site)
        return Message(RecordDict({DONE: ConfigRecord({DONE: True})}), reply_to=msg)

    @app.query("gradient")
    def gradient(msg: Message, context: Context) -> Message:
        site = site_of(context, None)
        samples, labels = read_samples(msg.content)
        site.check_query(samples, labels)
        before_answer(context, site, samples.shape[0])
        sanitized = site.answer(samples, labels)
        keep(context, site)
        record = ArrayRecord({GRADIENT: Array(sanitized.cpu().numpy().astype(np.float32))})
        return Message(RecordDict({GRADIENT: record}), reply_to=msg)

    return app
