"""DP-WGAN-GP: gradient penalty inside the clipped per-example gradient, clipping decay, noise."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import validate_table
from dpforge.methods.dpwgan import DPWGAN, DPWGANConfig
from dpforge.privacy.noise import make_generator
from dpforge.privacy.per_example import clipped_sum_of_example_gradients
from dpforge.privacy.sampling import PoissonSampler


def _method(cancer, sigma=1.0, **overrides):
    frame, schema = cancer
    encoder = TableEncoder(schema)
    features, labels = encoder.transform(validate_table(frame, schema))
    options = dict(
        batch_size=32,
        optimizer="sgd",
        d_lr=0.05,
        latent_dim=8,
        generator_hidden=(16,),
        discriminator_hidden=(16,),
    )
    options.update(overrides)
    method = DPWGAN(
        DPWGANConfig(**options), encoder.layout, encoder.n_classes, torch.tensor([0.5, 0.5]), sigma
    )
    init = make_generator(7)
    with torch.no_grad():
        for p in list(method.generator.parameters()) + list(method.discriminator.parameters()):
            p.copy_(torch.randn(p.shape, generator=init) * 0.3)
    return method, torch.as_tensor(features, dtype=torch.float32), torch.as_tensor(labels)


def _batch(x, y, seed=3):
    index = PoissonSampler(len(x), 32 / len(x)).sample(make_generator(seed))
    return x[index], y[index]


def _reference_update(method, real_x, real_y, seed):
    """WGAN-GP written out with plain autograd (create_graph for the penalty), one SGD step."""
    ref = copy.deepcopy(method)
    gen = make_generator(seed)
    with torch.no_grad():
        fake_x, fake_y = ref.generate(32, gen, training=True)
        partners, _ = ref.generate(len(real_x), gen, training=True)
    mix = torch.rand(len(real_x), 1, generator=gen)
    hat = (mix * real_x + (1 - mix) * partners).requires_grad_(True)
    d = ref.discriminator
    real_score = d(ref.d_input(real_x, real_y))[:, 0]
    hat_score = d(ref.d_input(hat, real_y))[:, 0]
    (slopes,) = torch.autograd.grad(hat_score.sum(), hat, create_graph=True)
    penalty = (torch.sqrt(slopes.square().sum(1) + 1e-12) - 1) ** 2
    loss = (-real_score + ref.config.gp_weight * penalty).sum()
    loss = (loss + d(ref.d_input(fake_x, fake_y))[:, 0].sum()) / 32
    grads = torch.autograd.grad(loss, list(d.parameters()))
    return [p.detach() - ref.config.d_lr * g for p, g in zip(d.parameters(), grads, strict=True)]


def test_sigma_zero_and_infinite_clip_equal_plain_wgan_gp(cancer):
    method, x, y = _method(cancer, sigma=0.0, clip_norm=math.inf)
    real_x, real_y = _batch(x, y)
    expected = _reference_update(method, real_x, real_y, seed=5)
    method.discriminator_step(real_x, real_y, step=0, generator=make_generator(5))
    for p, e in zip(method.discriminator.parameters(), expected, strict=True):
        torch.testing.assert_close(p.detach(), e, rtol=1e-4, atol=1e-6)


def test_vmap_clipping_matches_a_loop_over_examples(cancer):
    """Each example's gradient (penalty included) clipped to C, then summed: against a loop."""
    method, x, y = _method(cancer)
    d = method.discriminator
    inputs = method.d_input(x[:12], y[:12])

    def example_loss(forward, row):
        slope = torch.func.grad(lambda r: forward(r.unsqueeze(0))[0, 0])(row)
        return -forward(row.unsqueeze(0))[0, 0] + 10 * (slope.norm() - 1) ** 2

    clip = 0.7
    got = clipped_sum_of_example_gradients(d, example_loss, (inputs,), clip)
    expected = [torch.zeros_like(p) for p in d.parameters()]
    for row in inputs:
        r = row.clone().requires_grad_(True)
        (slope,) = torch.autograd.grad(d(r.unsqueeze(0))[0, 0], r, create_graph=True)
        loss = -d(row.unsqueeze(0))[0, 0] + 10 * (slope.norm() - 1) ** 2
        grads = torch.autograd.grad(loss, list(d.parameters()))
        norm = torch.sqrt(sum(g.square().sum() for g in grads))
        factor = min(1.0, clip / (norm.item() + 1e-12))
        assert factor * norm.item() <= clip * (1 + 1e-6)
        expected = [e + factor * g for e, g in zip(expected, grads, strict=True)]
    for g, e in zip(got.grads, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("step", [0, 2500])
def test_noise_std_follows_the_decayed_clip_norm(cancer, step):
    sigma, clip = 1.2, 0.5
    noisy, x, y = _method(cancer, sigma, clip_norm=clip, clip_decay=0.5, clip_decay_every=1000)
    clean = copy.deepcopy(noisy)
    clean.noise_multiplier = 0.0
    clean.config = noisy.config  # same schedule; sigma = 0 only
    real_x, real_y = _batch(x, y)

    def update(m, seed):
        m = copy.deepcopy(m)
        before = [p.detach().clone() for p in m.discriminator.parameters()]
        m.discriminator_step(real_x, real_y, step=step, generator=make_generator(seed))
        after = m.discriminator.parameters()
        return torch.cat([(b - a.detach()).flatten() for b, a in zip(before, after, strict=True)])

    draws = torch.cat([update(noisy, s) - update(clean, s) for s in range(40)])
    decayed = clip * 0.5 ** (step // 1000)
    assert noisy.clip_norm_at(step) == decayed
    assert draws.std().item() * 32 / 0.05 == pytest.approx(sigma * decayed, rel=0.05)


def test_clipping_decay_leaves_the_dp_event_unchanged(cancer):
    decayed, _, _ = _method(cancer, 1.1, clip_decay=0.9)
    plain, _, _ = _method(cancer, 1.1)
    assert decayed.step_event(0.05, 300) == plain.step_event(0.05, 300)


def test_empty_real_batch_is_a_valid_step(cancer):
    method, x, y = _method(cancer)
    stats = method.discriminator_step(x[:0], y[:0], step=0, generator=make_generator(1))
    assert stats.real_batch_size == 0 and math.isfinite(stats.d_loss)


def test_bayesian_bound_is_reported_next_to_dp_and_never_saved(cancer, tmp_path):
    import dpforge

    frame, schema = cancer
    config = DPWGANConfig(
        batch_size=64,
        latent_dim=8,
        generator_hidden=(16,),
        discriminator_hidden=(16,),
        bayesian_accounting=True,
        d_steps=2,
    )
    synth = dpforge.Synthesizer(
        schema,
        method="dpwgan",
        anchor=None,
        epsilon=8.0,
        noise_multiplier=1.5,
        seed=0,
        progress=False,
        method_options=config,
    ).fit(frame)
    result = synth.bayesian_
    assert result.steps == synth.plan_.steps
    assert result.worst_case_epsilon == pytest.approx(synth.privacy_spent().epsilon)
    assert result.extra_seconds > 0 and 0 < result.confidence < 1
    assert "NOT a worst-case guarantee" in result.statement()
    path = synth.save(tmp_path / "m")
    text = (path / "model.json").read_text()
    assert f"{result.epsilon}" not in text and "epsilon_mu" not in text


@pytest.mark.parametrize("kind, shape", [("image", (1, 8, 8)), ("timeseries", (1, 12))])
def test_ghost_penalty_path_equals_the_torch_func_path(kind, shape):
    """The critic step's real part (score + gradient penalty, clipped per record) is the same
    through the ghost path and through explicit torch.func per-example gradients."""
    from dpforge.data.encoder import Layout

    config = DPWGANConfig(batch_size=16, clip_norm=0.5, discriminator_net="conv", latent_dim=8)
    layout = Layout(kind, shape=shape)
    method = DPWGAN(config, layout, 3, torch.full((3,), 1 / 3), 1.0)
    method.discriminator.double()
    gen = make_generator(4)
    rows = torch.rand(12, *shape, generator=gen, dtype=torch.float64) * 2 - 1
    partners = torch.rand(12, *shape, generator=gen, dtype=torch.float64) * 2 - 1
    labels = torch.randint(0, 3, (12,), generator=gen)
    ghost = method._real_part(rows, labels, partners, 0.5, make_generator(9))
    mix = torch.rand(12, *([1] * len(shape)), generator=make_generator(9)).double()
    cond = method.condition(labels, rows)
    real_in = method.networks.d_input(rows, cond)
    hats = mix * rows + (1 - mix) * partners
    oracle = method._real_part_torch_func(real_in, hats, cond, 0.5)
    assert (oracle.norms > 0.5).any()  # clipping binds for some records
    torch.testing.assert_close(ghost.norms, oracle.norms, rtol=1e-9, atol=1e-12)
    for g, e in zip(ghost.grads, oracle.grads, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-9, atol=1e-12)
