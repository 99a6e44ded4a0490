"""DP-CGAN's discriminator step: the mechanism, checked against the plain computation."""

from __future__ import annotations

import copy
import math

import dp_accounting
import pytest
import torch
from torch.nn import functional as F

from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import validate_table
from dpforge.methods.dpcgan import DPCGAN, DPCGANConfig
from dpforge.privacy.noise import make_generator
from dpforge.privacy.sampling import PoissonSampler


def _method(cancer, clip_norm=1.0, sigma=1.0, microbatches=None, lr=0.1):
    frame, schema = cancer
    encoder = TableEncoder(schema)
    features, labels = encoder.transform(validate_table(frame, schema))
    config = DPCGANConfig(
        batch_size=32,
        clip_norm=clip_norm,
        microbatches=microbatches,
        d_lr_start=lr,
        d_lr_end=lr,
        latent_dim=8,
    )
    method = DPCGAN(config, encoder.layout, encoder.n_classes, torch.tensor([0.5, 0.5]), sigma)
    init = make_generator(7)
    with torch.no_grad():
        for p in list(method.generator.parameters()) + list(method.discriminator.parameters()):
            p.copy_(torch.randn(p.shape, generator=init) * 0.3)
    x = torch.as_tensor(features, dtype=torch.float32)
    return method, x, torch.as_tensor(labels)


def _real_batch(x, y, seed=3):
    index = PoissonSampler(len(x), 32 / len(x)).sample(make_generator(seed))
    return x[index], y[index]


def _plain_reference_update(method, real_x, real_y, seed):
    """The non-private computation written out: mean-free sum of losses / B, one SGD step."""
    ref = copy.deepcopy(method)
    gen = make_generator(seed)
    with torch.no_grad():
        fake_x, fake_y = ref.generate(32, gen, training=True)
    inputs = torch.cat([ref.d_input(real_x, real_y), ref.d_input(fake_x, fake_y)])
    targets = torch.cat([torch.ones(len(real_x)), torch.zeros(32)])
    logits = ref.discriminator(inputs)[:, 0]
    loss = F.binary_cross_entropy_with_logits(logits, targets, reduction="sum") / 32
    grads = torch.autograd.grad(loss, list(ref.discriminator.parameters()))
    lr = ref.config.d_lr_start
    return [p.detach() - lr * g for p, g in zip(ref.discriminator.parameters(), grads, strict=True)]


def test_sigma_zero_and_infinite_clip_equal_the_non_private_step(cancer):
    method, x, y = _method(cancer, clip_norm=math.inf, sigma=0.0)
    real_x, real_y = _real_batch(x, y)
    expected = _plain_reference_update(method, real_x, real_y, seed=11)
    method.discriminator_step(real_x, real_y, step=0, generator=make_generator(11))
    for p, e in zip(method.discriminator.parameters(), expected, strict=False):
        torch.testing.assert_close(p.detach(), e, rtol=1e-5, atol=1e-6)
    assert not method.is_private
    assert isinstance(method.step_event(0.05, 10), dp_accounting.NonPrivateDpEvent)


def _update(method, real_x, real_y, seed):
    m = copy.deepcopy(method)
    before = [p.detach().clone() for p in m.discriminator.parameters()]
    m.discriminator_step(real_x, real_y, step=0, generator=make_generator(seed))
    return torch.cat(
        [
            (b - p.detach()).flatten()
            for b, p in zip(before, m.discriminator.parameters(), strict=False)
        ]
    )


@pytest.mark.parametrize(("microbatches", "factor"), [(None, 1.0), (4, 2.0)])
def test_noise_has_the_std_the_ledger_assumes(cancer, microbatches, factor):
    """update(sigma) - update(0) = lr * noise / units, noise ~ N(0, (factor sigma C)^2)."""
    sigma, clip, lr = 1.3, 0.5, 0.1
    noisy, x, y = _method(cancer, clip, sigma, microbatches, lr)
    clean = copy.deepcopy(noisy)
    clean.noise_multiplier = 0.0
    real_x, real_y = _real_batch(x, y)
    draws = torch.cat(
        [
            _update(noisy, real_x, real_y, seed) - _update(clean, real_x, real_y, seed)
            for seed in range(20)
        ]
    )
    units = 32 if microbatches is None else microbatches
    measured = draws.std().item() * units / lr
    assert measured == pytest.approx(factor * sigma * clip, rel=0.03)
    assert draws.mean().abs().item() * units / lr < 0.03 * sigma * clip


def test_step_event_is_the_poisson_sampled_gaussian(cancer):
    method, _, _ = _method(cancer, clip_norm=1.0, sigma=1.1)
    event = method.step_event(0.05, 100)
    assert event == dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(1.1)), 100
    )


def test_generator_labels_come_from_the_prior_not_the_batch(cancer):
    method, _, _ = _method(cancer)
    method.label_prior = torch.tensor([0.0, 1.0])
    labels = method.sample_labels(500, make_generator(0))
    assert labels.tolist() == [1] * 500


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_generator_labels_are_drawn_on_the_generators_device(cancer):
    """A CUDA run's generator draws from the CPU-held prior (it once raised instead)."""
    method, _, _ = _method(cancer)
    method.label_prior = torch.tensor([0.0, 1.0])
    labels = method.sample_labels(50, make_generator(0, "cuda"))
    assert labels.device.type == "cuda" and labels.tolist() == [1] * 50


def test_poisson_sampler_matches_its_rate():
    sampler = PoissonSampler(1000, 0.05)
    gen = make_generator(0)
    sizes = torch.tensor([len(sampler.sample(gen)) for _ in range(2000)], dtype=torch.float64)
    assert sizes.mean().item() == pytest.approx(50, rel=0.02)
    assert sizes.var().item() == pytest.approx(1000 * 0.05 * 0.95, rel=0.1)
    counts = torch.zeros(1000)
    for _ in range(400):
        counts[sampler.sample(gen)] += 1
    assert counts.mean().item() == pytest.approx(400 * 0.05, rel=0.03)  # every record alike


def test_adaptive_discriminator_steps_grow_when_fakes_pass(cancer, monkeypatch):
    """Bie et al.'s adaptive n_D: more D steps when D stops telling fakes apart (free)."""
    frame, schema = cancer
    encoder = TableEncoder(schema)
    config = DPCGANConfig(
        batch_size=32, latent_dim=8, adaptive_d_steps=True, adaptive_increment=5, max_d_steps=12
    )
    method = DPCGAN(config, encoder.layout, 2, torch.tensor([0.5, 0.5]), 1.0)
    gen = make_generator(0)
    monkeypatch.setattr(method, "fake_detection_rate", lambda g: 0.3)
    assert method.next_d_steps(1, gen) == 6
    assert method.next_d_steps(10, gen) == 12
    monkeypatch.setattr(method, "fake_detection_rate", lambda g: 0.9)
    assert method.next_d_steps(6, gen) == 6
    assert 0.0 <= DPCGAN.fake_detection_rate(method, gen) <= 1.0


def test_adaptive_steps_keep_the_planned_number_of_private_steps(cancer):
    import dpforge

    frame, schema = cancer
    config = DPCGANConfig(
        batch_size=64,
        latent_dim=8,
        generator_hidden=(16,),
        discriminator_hidden=(16,),
        adaptive_d_steps=True,
        adaptive_threshold=1.01,
        max_d_steps=7,
    )  # always grows
    synth = dpforge.Synthesizer(
        schema,
        epsilon=8.0,
        noise_multiplier=1.5,
        seed=0,
        method_options=config,
        progress=False,
        anchor=None,
    ).fit(frame)
    event = synth.ledger_.entries[-1].event
    assert event.count == synth.plan_.steps
