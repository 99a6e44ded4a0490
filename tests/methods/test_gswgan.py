"""GS-WGAN: only clipped, noised per-sample gradients reach the generator."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from dpforge.data.encoder import TableEncoder
from dpforge.errors import PrivacyError
from dpforge.methods.gswgan import GSWGAN, GSWGANConfig
from dpforge.privacy.noise import make_generator


def _method(cancer, sigma=1.0, **overrides):
    _, schema = cancer
    encoder = TableEncoder(schema)
    options = dict(
        batch_size=16,
        num_discriminators=4,
        latent_dim=8,
        generator_hidden=(16,),
        discriminator_hidden=(16,),
    )
    options.update(overrides)
    return GSWGAN(
        GSWGANConfig(**options), encoder.layout, encoder.n_classes, torch.tensor([0.5, 0.5]), sigma
    )


def _g_update(method, seed):
    m = copy.deepcopy(method)
    before = [p.detach().clone() for p in m.generator.parameters()]
    m._sanitized_generator_step(1, make_generator(seed))
    return before, [p.detach() for p in m.generator.parameters()]


def test_sigma_zero_and_infinite_clip_equal_the_plain_generator_step(cancer):
    method = _method(cancer, sigma=0.0, clip_norm=math.inf)
    ref = copy.deepcopy(method)
    gen = make_generator(4)
    rows, labels = ref.generate(16, gen, training=True)
    loss = -ref.critics[1](ref.d_input(rows, labels))[:, 0].mean()
    ref.g_optimizer.zero_grad()
    loss.backward()
    ref.g_optimizer.step()
    _, after = _g_update(method, 4)
    for p, e in zip(after, ref.generator.parameters(), strict=True):
        torch.testing.assert_close(p, e.detach(), rtol=1e-5, atol=1e-7)


def test_sanitized_gradients_are_clipped_and_carry_the_ledger_noise(cancer):
    method = _method(cancer, sigma=1.5, clip_norm=0.3)
    upstream = torch.randn(4000, 7, generator=make_generator(0)) * 5
    clean = _method(cancer, sigma=0.0, clip_norm=0.3)._sanitize(upstream, make_generator(1))
    assert clean.norm(dim=1).max().item() <= 0.3 * (1 + 1e-6)
    noisy = method._sanitize(upstream, make_generator(1))
    assert (noisy - clean).std().item() == pytest.approx(2 * 1.5 * 0.3, rel=0.03)
    assert method.noise_std == pytest.approx(0.9)


def test_records_are_split_into_disjoint_subsets(cancer):
    method = _method(cancer, num_discriminators=5)
    method.prepare(5000, None, make_generator(0))
    counts = torch.bincount(method.assignment.subset, minlength=5)
    assert counts.sum().item() == 5000  # each record in exactly one subset
    assert counts.min().item() > 900 and counts.max().item() < 1100


def _changed_critics(method, steps, seed=2):
    """Which critics a few private steps changed (after the warm start of step 0)."""
    from dpforge.training import TrainingState

    method.prepare(100, None, make_generator(0))
    features = torch.rand(100, method.generator.spans[-1].stop) * 2 - 1
    labels = torch.randint(0, 2, (100,), generator=make_generator(1))
    state, gen = TrainingState(), make_generator(seed)
    method.train_step(features, labels, state, gen)  # warm start, then the first private step
    before = [copy.deepcopy(c.state_dict()) for c in method.critics]
    for _ in range(steps):
        method.train_step(features, labels, state, gen)
    assert state.step == steps + 1
    return [
        any(not torch.equal(v, c.state_dict()[k]) for k, v in b.items())
        for b, c in zip(before, method.critics, strict=True)
    ]


def test_private_steps_leave_frozen_critics_as_the_warm_start_made_them(cancer):
    """Issue 13.3: a critic trained only when picked made the picks hidden state."""
    method = _method(cancer, warm_start_steps=2)
    assert method.config.critic_training == "frozen"
    assert _changed_critics(method, steps=3) == [False] * 4


def test_critics_that_keep_training_all_train_at_every_step(cancer):
    method = _method(cancer, warm_start_steps=2, critic_training="all", d_steps=1)
    for _ in range(3):
        assert _changed_critics(copy.deepcopy(method), steps=1) == [True] * 4


def test_warm_start_trains_every_critic_and_frozen_needs_one(cancer):
    method = _method(cancer, warm_start_steps=2)
    initial = [copy.deepcopy(c.state_dict()) for c in method.critics]
    _changed_critics(method, steps=0)
    for b, c in zip(initial, method.critics, strict=True):
        assert any(not torch.equal(v, c.state_dict()[k]) for k, v in b.items())
    with pytest.raises(PrivacyError, match="warm_start_steps"):
        GSWGANConfig(warm_start_steps=0).validate()
    with pytest.raises(PrivacyError, match="critic_training"):
        GSWGANConfig(critic_training="picked").validate()


def test_critics_are_never_in_a_release(cancer):
    import dpforge

    frame, schema = cancer
    synth = dpforge.Synthesizer(
        schema,
        method="gswgan",
        anchor=None,
        epsilon=8.0,
        epochs=5,
        seed=0,
        progress=False,
        method_options=GSWGANConfig(
            batch_size=8,
            num_discriminators=20,
            latent_dim=8,
            generator_hidden=(16,),
            discriminator_hidden=(16,),
        ),
    ).fit(frame)
    assert set(synth.generator_.state_dict()) == {
        k for k in synth.generator_.state_dict() if k.startswith("body.")
    }
    assert synth.privacy_spent().epsilon_pld is None  # PLD cannot analyse it: RDP reported
    assert synth.privacy_spent().epsilon <= 8.0


def test_sanitized_gradients_never_exceed_c_in_float32(cancer):
    """Issue 13.8: float32 norms and factors let clipped norms reach 1.0000001 C."""
    method = _method(cancer, sigma=0.0, clip_norm=0.3)
    gen = make_generator(0)
    scales = torch.exp(torch.randn(20000, 1, generator=gen) * 3)
    upstream = torch.randn(20000, 7, generator=gen) * scales
    clean = method._sanitize(upstream, make_generator(1))
    assert (clean.double().norm(dim=1) <= 0.3).all()


def test_batch_sanitize_clips_the_whole_batch_once_and_is_one_release(cancer):
    """sanitize="batch": the step's gradients clipped as one vector to C, noise 2 sigma C per
    coordinate, and one Gaussian release per step in the ledger (B per step otherwise)."""
    method = _method(cancer, sigma=1.5, clip_norm=0.3, sanitize="batch")
    upstream = torch.randn(16, 7, generator=make_generator(0)) * 5
    clean = _method(cancer, sigma=0.0, clip_norm=0.3, sanitize="batch")
    clipped = clean._sanitize(upstream, make_generator(1))
    assert clipped.double().norm().item() <= 0.3
    torch.testing.assert_close(clipped / clipped.norm(), upstream / upstream.norm())
    draws = torch.cat([method._sanitize(upstream, make_generator(s)) - clipped for s in range(300)])
    assert draws.std().item() == pytest.approx(2 * 1.5 * 0.3, rel=0.03)
    batch_event = GSWGAN.training_event(method.config, 0.25, 1.5, 10)
    per_sample = GSWGAN.training_event(_method(cancer, sigma=1.5).config, 0.25, 1.5 * 4, 10)
    # B = 16 releases at sigma * 4 are one release at sigma: the same event, the same epsilon.
    assert "GaussianDpEvent(noise_multiplier=1.5)" in str(batch_event)
    assert "count=16" in str(per_sample) and "count=16" not in str(batch_event)
    from dpforge.privacy.gswgan_accounting import make_gswgan_accountant

    eps = []
    for event in (batch_event, per_sample):
        acc = make_gswgan_accountant()
        acc.compose(event)
        eps.append(acc.get_epsilon(1e-5))
    assert eps[0] == pytest.approx(eps[1], rel=1e-6)
    with pytest.raises(PrivacyError, match="sanitize"):
        _method(cancer, sanitize="group")
