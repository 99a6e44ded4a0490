"""Federated images in GS-WGAN's setting (issue 23.3): the sites' sanitizer, the ledgers written
ahead, the schedule's bound, and a 2-site Flower simulation end to end (8x8 digits)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import dp_accounting
import numpy as np
import pytest
import torch

pytest.importorskip("flwr")

from tests.cli_support import run  # noqa: E402

from dpforge.data.arrays import ArrayData  # noqa: E402
from dpforge.datasets.images import load_digits_images  # noqa: E402
from dpforge.engines.federated_images import (  # noqa: E402
    CountingGrid,
    FederatedImageConfig,
    ImageServer,
    split_images,
)
from dpforge.engines.federated_images_run import (  # noqa: E402
    _torch_generator,
    load_federated_images,
    simulate_images,
)
from dpforge.engines.federated_images_site import (  # noqa: E402
    ImageSite,
    image_site_app,
    sanitize,
)
from dpforge.engines.federated_sim import FIRST_SITE, SiteGrid  # noqa: E402
from dpforge.privacy.accounting import epsilon  # noqa: E402
from dpforge.privacy.federated_gswgan import (  # noqa: E402
    participations,
    record_event,
    record_noise_for_target,
    schedule,
    site_event,
)

SMALL = FederatedImageConfig(
    steps=3, batch_size=8, critics_per_site=2, warm_start_steps=2, warm_pool=16,
    generator_hidden=(16,), critic_hidden=(16,), noise_multiplier=2.0,
)  # fmt: skip


@pytest.fixture(scope="module")
def digits():
    train, _, schema = load_digits_images()
    return ArrayData(train.values[:120], train.labels[:120]), schema


def _site(digits, std: float, seed: int = 0) -> ImageSite:
    data, schema = digits
    settings = replace(
        ImageServer(schema, SMALL, [1, 2], torch.Generator()).site_settings(), noise_std=std
    )
    return ImageSite(data, schema, settings, torch.Generator().manual_seed(seed))


def test_sanitize_clips_each_sample_and_the_whole_batch_to_c():
    gen = torch.Generator().manual_seed(0)
    upstream = torch.randn(16, 1, 8, 8, generator=gen) * torch.logspace(-2, 2, 16).view(-1, 1, 1, 1)
    clipped = sanitize(upstream, 1.0, 0.0, False, gen)
    norms = clipped.flatten(1).double().norm(dim=1)
    assert norms.max() <= 1.0
    small = upstream.flatten(1).norm(dim=1) < 1.0  # below C: left as they are
    assert small.any() and torch.equal(clipped[small], upstream[small])
    whole = sanitize(upstream, 1.0, 0.0, True, gen)
    assert whole.double().norm() <= 1.0
    assert torch.allclose(whole / whole.norm(), upstream / upstream.norm(), atol=1e-6)


def test_site_answer_is_a_clipped_critic_gradient(digits):
    site = _site(digits, std=0.0)
    samples = torch.rand(8, 1, 8, 8) * 2 - 1
    labels = torch.arange(8)
    answer = site.answer(samples, labels)
    assert answer.flatten(1).double().norm(dim=1).max() <= 1.0
    expected = []  # the same clipping of each critic's own gradient: one of them was picked
    for critic in site.critics:
        x = samples.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(-critic(site.d_input(x, labels)).sum(), x)
        expected.append(sanitize(g, 1.0, 0.0, False, torch.Generator()))
    assert any(torch.allclose(answer, e, atol=1e-6) for e in expected)


def test_site_adds_noise_once_with_the_stated_std(digits):
    std = 3.0
    site = _site(digits, std=std)
    samples, labels = torch.rand(32, 1, 8, 8) * 2 - 1, torch.arange(32) % 10
    state = site.rng.get_state()
    noisy = site.answer(samples, labels)
    site.rng.set_state(state)
    site.settings = replace(site.settings, noise_std=0.0)
    clean = site.answer(samples, labels)  # the same pick, no noise
    noise = (noisy - clean).double()
    assert abs(noise.std().item() - std) < 0.04 * std  # once: twice would be sqrt(2) std
    assert abs(noise.mean().item()) < 0.1


def test_schedule_bounds_each_sites_steps():
    for sites, per_step, steps in [(10, 3, 25), (4, 4, 7), (5, 1, 12)]:
        counts = np.zeros(sites, dtype=int)
        for t in range(steps):
            chosen = schedule(t, sites, per_step)
            assert len(chosen) == per_step
            counts[chosen] += 1
        assert counts.max() <= participations(steps, sites, per_step)


def test_record_guarantee_is_amplified_by_critics_the_site_one_is_not():
    n = participations(100, 10, 10)
    one = epsilon(record_event(1, 5.0, 8, n), 1e-5, "rdp")
    assert one == pytest.approx(epsilon(site_event(5.0, 8, n), 1e-5, "rdp"))
    assert epsilon(record_event(4, 5.0, 8, n), 1e-5, "rdp") < one / 2
    assert isinstance(record_event(4, 0.0, 8, n), dp_accounting.NonPrivateDpEvent)
    sigma = record_noise_for_target(3.0, 1e-5, 1, 2, 3)  # m = 1: one Gaussian event
    assert epsilon(record_event(1, sigma, 2, 3), 1e-5, "rdp") <= 3.0
    assert epsilon(record_event(1, sigma - 0.01, 2, 3), 1e-5, "rdp") > 3.0


def test_ledgers_hold_the_events_before_any_site_answers(digits):
    data, schema = digits
    parts = split_images(data, 2, False, np.random.default_rng(0))
    nodes = [FIRST_SITE, FIRST_SITE + 1]
    server = ImageServer(schema, SMALL, nodes, torch.Generator().manual_seed(1))
    settings, seen = server.site_settings(), []
    sites = {
        n: ImageSite(p, schema, settings, torch.Generator())
        for n, p in zip(nodes, parts, strict=True)
    }
    grid = CountingGrid(
        SiteGrid(image_site_app(lambda context, told: sites[context.node_id]), [{}, {}])
    )
    sending = grid.send_and_receive

    def spy(messages, **kw):
        seen.append((len(server.record_ledger), len(server.site_ledger)))
        return sending(messages, **kw)

    grid.send_and_receive = spy
    server.run(grid)
    assert seen[0] == (1, 1) and len(seen) == 1 + SMALL.steps
    n = participations(SMALL.steps, 2, 2)
    assert server.record_ledger.entries[0].event in (
        record_event(2, server.sigma, 8, n),
        site_event(server.sigma, 8, n),
    )
    record_eps = server.record_ledger.epsilon(1e-5, "rdp")
    assert record_eps == min(
        epsilon(record_event(2, server.sigma, 8, n), 1e-5, "rdp"),
        epsilon(site_event(server.sigma, 8, n), 1e-5, "rdp"),
    )
    assert server.site_ledger.entries[0].event == site_event(server.sigma, 8, n)


def test_simulation_trains_the_generator_over_flower(digits):
    data, schema = digits
    parts = split_images(data, 2, True, np.random.default_rng(0))
    untrained, _ = simulate_images(parts, schema, replace(SMALL, steps=1, g_lr=0.0), seed=0)
    server, grid = simulate_images(parts, schema, SMALL, seed=0)
    start = untrained.generator.state_dict()
    assert all(
        torch.equal(start[k], v)
        for k, v in ImageServer(schema, SMALL, [1, 2], _torch_generator(0, 0))
        .generator.state_dict()
        .items()
    )
    moved = [not torch.equal(start[k], v) for k, v in server.generator.state_dict().items()]
    assert all(moved)
    assert grid.traffic.messages == {"query.warmup": 2, "query.gradient": 2 * SMALL.steps}
    assert grid.traffic.up["query.gradient"] > 8 * 64 * 4 * 2 * SMALL.steps  # float32 samples


def test_cli_simulate_images_writes_a_model_folder(tmp_path, monkeypatch, capsys, digits):
    data, schema = digits
    npz, schema_path, out = tmp_path / "d.npz", tmp_path / "s.json", tmp_path / "model"
    np.savez(npz, x=data.values[:, 0], y=data.labels.astype(str))
    schema_path.write_text(json.dumps(schema.to_dict()))
    args = ["federated", "simulate-images", npz, "--schema", schema_path, "--out", out,
            "--sites", "2", "--steps", "2", "--batch-size", "4", "--warm-start-steps", "2",
            "--critics-per-site", "2", "--noise-multiplier", "2", "--seed", "3"]  # fmt: skip
    code, text = run(args, monkeypatch, capsys, unwrap=True)
    assert code == 0, text
    assert "per record" in text and "per site" in text
    generator, info = load_federated_images(out)
    eps = info["summary"]["guarantees"]
    assert eps["per_record"]["epsilon"] < eps["per_site"]["epsilon"] < math.inf
    assert generator(torch.zeros(3, generator.latent_dim), torch.arange(3)).shape == (3, 1, 8, 8)
    assert sorted(p.name for p in out.iterdir()) == ["generator.safetensors", "model.json"]
    # issue 43.7: the data set's budget file holds the run's per-record ledger, charged first
    (charged,) = json.loads((tmp_path / "d.npz.dpforge-budget.json").read_text())["runs"]
    assert charged["ledger"] == info["record_ledger"] and not charged["reserved"]
    code, text = run(["budget", "set", npz, "--epsilon", "1", "--delta", "1e-4"], monkeypatch,
                     capsys)  # fmt: skip
    assert code == 0, text
    code, text = run([*args[:6], tmp_path / "again", *args[7:]], monkeypatch, capsys, unwrap=True)
    assert code != 0 and "budget" in text and not (tmp_path / "again").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--d-steps", "2"], "--d-steps applies to --critic-training all"),
        (["--epsilon", "3", "--noise-multiplier", "1"], "not both"),
        (["--split", "by:colour"], "'random' or 'by:label'"),
        (["--device", "banana"], "'banana' is not a torch device"),
    ],
)
def test_cli_refuses_options_that_do_not_apply(
    tmp_path, monkeypatch, capsys, digits, extra, message
):
    _, schema = digits
    schema_path = tmp_path / "s.json"
    schema_path.write_text(json.dumps(schema.to_dict()))
    args = ["federated", "simulate-images", tmp_path / "none.npz", "--schema", schema_path,
            "--out", tmp_path / "m", *extra]  # fmt: skip
    code, text = run(args, monkeypatch, capsys, unwrap=True)
    assert code == 2 and message in text
    assert not (tmp_path / "m").exists()
