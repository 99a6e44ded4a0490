"""Federated images on a torch device: the same sanitizer, the same ledgers, the same messages.

The CUDA cases run where a GPU is (the benchmark machine runs this file first); on the CPU the
same checks run against the CPU itself.
"""

from __future__ import annotations

import pytest

pytest.importorskip("flwr")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from dpforge.data.arrays import ArrayData  # noqa: E402
from dpforge.datasets.images import load_digits_images  # noqa: E402
from dpforge.engines.federated_images import FederatedImageConfig, split_images  # noqa: E402
from dpforge.engines.federated_images_run import simulate_images  # noqa: E402
from dpforge.engines.federated_images_site import sanitize  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
SMALL = FederatedImageConfig(
    steps=3, batch_size=8, critics_per_site=3, warm_start_steps=2, warm_pool=16,
    generator_hidden=(16,), critic_hidden=(16,), noise_multiplier=2.0,
)  # fmt: skip


@pytest.fixture(scope="module")
def parts():
    train, _, schema = load_digits_images()
    data = ArrayData(train.values[:90], train.labels[:90])
    return split_images(data, 3, False, np.random.default_rng(0)), schema


@pytest.mark.parametrize("device", DEVICES)
def test_sanitize_on_a_device_clips_as_on_the_cpu_and_adds_noise_once(device):
    gen = torch.Generator().manual_seed(0)
    upstream = torch.randn(64, 1, 8, 8, generator=gen) * torch.logspace(-2, 2, 64).view(-1, 1, 1, 1)
    on_cpu = sanitize(upstream, 1.0, 0.0, False, gen)
    there = sanitize(upstream.to(device), 1.0, 0.0, False, torch.Generator(device=device))
    assert there.device.type == device
    assert torch.allclose(there.cpu(), on_cpu, atol=1e-6)
    assert there.flatten(1).double().norm(dim=1).max() <= 1.0
    noise = sanitize(upstream.to(device), 1.0, 3.0, False, torch.Generator(device=device)) - there
    assert abs(noise.double().std().item() - 3.0) < 0.05 * 3.0  # once: twice is sqrt(2) * 3


@pytest.mark.parametrize("device", DEVICES)
def test_a_simulation_on_a_device_keeps_the_cpu_ledgers_and_messages(parts, device):
    sites, schema = parts
    cpu_server, cpu_grid = simulate_images(sites, schema, SMALL, 0, "cpu")
    server, grid = simulate_images(sites, schema, SMALL, 0, device)
    assert next(server.generator.parameters()).device.type == device
    assert server.record_ledger.to_dict() == cpu_server.record_ledger.to_dict()
    assert server.site_ledger.to_dict() == cpu_server.site_ledger.to_dict()
    assert grid.traffic.messages == cpu_grid.traffic.messages  # the same queries, same sizes
    assert grid.traffic.down == cpu_grid.traffic.down and grid.traffic.up == cpu_grid.traffic.up
    assert server.step_index == SMALL.steps
    assert all(torch.isfinite(p).all() for p in server.generator.parameters())


def test_a_run_stops_when_go_on_says_so_and_keeps_the_planned_ledger(parts):
    sites, schema = parts
    full, _ = simulate_images(sites, schema, SMALL, 0)
    cut, _ = simulate_images(sites, schema, SMALL, 0, "cpu", lambda s: s.step_index < 2)
    assert cut.step_index == 2 and full.step_index == SMALL.steps
    assert cut.record_ledger.to_dict() == full.record_ledger.to_dict()  # an upper bound
