"""``dpforge federated server-images|client-images`` (issue 23.3): GS-WGAN on Flower's runtime.

A deployed site is rebuilt for every message (Flower starts a process per message), so its
state must survive the trip through its Flower context: checked here by answering the same
queries from a site that lives on and from one rebuilt from its kept state. The refusals come
before any process starts. The slow test deploys a server and two sites over TLS on localhost
and checks the model folder and that both ledgers are ``simulate-images``'s for the same
settings.
"""

from __future__ import annotations

import json
from dataclasses import replace

import dp_accounting
import numpy as np
import pytest
import torch
from tests.cli_support import run

pytest.importorskip("flwr", reason="Flower is not installed (pip install dpforge[federated])")
pytest.importorskip("cryptography", reason="the test certificates need cryptography")

from tests.engines.test_federated_deploy import _free_port, _start, _stop  # noqa: E402
from tests.engines.tls_files import write_tls_files  # noqa: E402

from dpforge.data.arrays import ArrayData  # noqa: E402
from dpforge.datasets.images import load_digits_images  # noqa: E402
from dpforge.engines.federated_deploy import IMAGES_APP, wait_for_port, write_app  # noqa: E402
from dpforge.engines.federated_images import (  # noqa: E402
    FederatedImageConfig,
    ImageServer,
    split_images,
)
from dpforge.engines.federated_images_app import (  # noqa: E402
    SITE_STATE,
    image_config,
    image_run_config,
)
from dpforge.engines.federated_images_run import load_federated_images  # noqa: E402
from dpforge.engines.federated_images_site import ImageSite, SiteSettings  # noqa: E402
from dpforge.engines.federated_sim import SiteGrid  # noqa: E402
from dpforge.errors import DataError, DpforgeError  # noqa: E402
from dpforge.privacy.federated_gswgan import record_event  # noqa: E402

SEED, SITES = 5, 2
SMALL = FederatedImageConfig(steps=2, batch_size=4, critics_per_site=2, warm_start_steps=2,
                             warm_pool=8, noise_multiplier=1.0)  # fmt: skip
SETTINGS = ["--steps", "2", "--batch-size", "4", "--warm-start-steps", "2",
            "--critics-per-site", "2", "--epsilon", "8"]  # fmt: skip


@pytest.fixture(scope="module")
def digits():
    train, _, schema = load_digits_images()
    return ArrayData(train.values[:80], train.labels[:80]), schema


def _settings(training: str) -> SiteSettings:
    return SiteSettings(2, 1.0, 0.5, False, training, 1, 2, 4, (8,))


@pytest.mark.parametrize("training", ["frozen", "all"])
def test_a_site_rebuilt_from_its_kept_state_answers_as_the_live_one(digits, training):
    data, schema = digits
    live = ImageSite(data, schema, _settings(training), torch.Generator().manual_seed(1))
    samples = torch.rand((4, 1, 8, 8), generator=torch.Generator().manual_seed(2)) * 2 - 1
    labels = torch.tensor([0, 1, 2, 3])
    live.warm_start(samples, labels)
    live.answer(samples, labels)  # Adam's moments and step count exist now
    rebuilt = ImageSite(data, schema, _settings(training), torch.Generator().manual_seed(99))
    rebuilt.load_state_arrays(live.state_arrays())
    for _ in range(2):  # critic steps (training "all"), the critic picked, the noise
        assert torch.equal(live.answer(samples, labels), rebuilt.answer(samples, labels))
    assert torch.equal(live.subset, rebuilt.subset)


def test_the_run_config_round_trips_through_flowers_app_folder(tmp_path):
    from flwr.common.config import get_project_config, validate_config

    config = FederatedImageConfig(steps=7, batch_size=3, sites_per_step=2, epsilon=4.5,
                                  sanitize="batch", critic_training="all", d_steps=3)  # fmt: skip
    project = get_project_config(write_app(tmp_path / "app", image_run_config(config),
                                           IMAGES_APP))  # fmt: skip
    valid, errors, _ = validate_config(project, check_module=True)
    assert valid, errors
    assert image_config(project["tool"]["flwr"]["app"]["config"]) == config
    assert image_config(image_run_config(replace(config, noise_multiplier=0.0))) == replace(
        config, noise_multiplier=0.0
    )


def _files(tmp_path, digits) -> tuple:
    data, schema = digits
    whole, schema_path = tmp_path / "all.npz", tmp_path / "schema.json"
    np.savez(whole, x=data.values[:, 0], y=data.labels.astype(str))
    schema_path.write_text(json.dumps(schema.to_dict()))
    sites = []
    for i, part in enumerate(split_images(data, SITES, False, np.random.default_rng(SEED))):
        sites.append(tmp_path / f"site{i}.npz")
        np.savez(sites[-1], x=part.values[:, 0], y=part.labels.astype(str))
    return whole, schema_path, sites


def test_tls_is_required_and_a_site_is_checked_before_it_joins(
    tmp_path, monkeypatch, capsys, digits
):
    _, schema_path, sites = _files(tmp_path, digits)
    server = ["federated", "server-images", "--schema", schema_path, "--out", tmp_path / "m",
              "--sites", "2"]  # fmt: skip
    code, text = run(server, monkeypatch, capsys, unwrap=True)
    assert code == 2 and "TLS needs --certificate, --key, --ca" in text
    code, text = run([*server, "--insecure", "--d-steps", "2"], monkeypatch, capsys, unwrap=True)
    assert code == 2 and "--d-steps applies to --critic-training all" in text
    code, text = run([*server, "--insecure", "--sites-per-step", "3"], monkeypatch, capsys,
                     unwrap=True)  # fmt: skip
    assert code == 2 and "3" in text and "SuperLink" not in text  # refused before it starts
    client = ["federated", "client-images", sites[0], "--server", "localhost:9", "--schema",
              schema_path]  # fmt: skip
    code, text = run(client, monkeypatch, capsys, unwrap=True)
    assert code == 2 and "TLS needs --ca" in text
    with np.load(sites[1]) as bad:
        x = bad["x"].copy()
        x[3, 2, 2] = 99.0  # outside the schema's declared range
        np.savez(sites[1], x=x, y=bad["y"])
    code, text = run([*client[:2], sites[1], *client[3:], "--insecure"], monkeypatch, capsys,
                     unwrap=True)  # fmt: skip
    assert code == 2 and "99" in text and "SuperNode" not in text
    assert not (tmp_path / "m").exists()


def _deployed_sites_run(node_configs: list[dict], schema) -> tuple:
    """The deployment's client_app over the in-process grid (its contexts kept between
    messages, as a SuperNode keeps them) and the simulation's server."""
    from dpforge.engines.federated_images_app import client_app

    grid = SiteGrid(client_app, node_configs)
    server = ImageServer(schema, SMALL, sorted(grid.get_node_ids()), torch.Generator())
    server.run(grid)
    return server, grid


def test_the_deployed_site_app_keeps_its_critics_between_messages(tmp_path, digits):
    _, schema_path, sites = _files(tmp_path, digits)
    configs = [{"images": str(f), "schema": str(schema_path)} for f in sites]
    server, grid = _deployed_sites_run(configs, digits[1])
    assert server.step_index == SMALL.steps
    for context in grid.contexts.values():
        kept = context.state.array_records[SITE_STATE]
        assert kept["critic.weights.0"].numpy().shape[0] == 2  # both critics, stacked
        assert len(kept["subset"].numpy()) == 40  # each of its images assigned to a critic


def test_a_deployed_site_without_its_warm_start_state_refuses(tmp_path, digits):
    from dpforge.engines.federated_images_app import client_app

    _, schema_path, sites = _files(tmp_path, digits)
    grid = SiteGrid(client_app, [{"images": str(f), "schema": str(schema_path)} for f in sites])
    server = ImageServer(digits[1], SMALL, sorted(grid.get_node_ids()), torch.Generator())
    with pytest.raises(DataError, match="holds no state from the run's warm-up query"):
        server.step(grid)  # a gradient query before (or without the state of) the warm-up


def test_a_deployed_site_refuses_bad_images_without_telling_the_server_values(tmp_path, digits):
    _, schema_path, sites = _files(tmp_path, digits)
    with np.load(sites[0]) as part:
        x = part["x"].copy()
        x[3, 2, 2] = 99.0
        np.savez(sites[0], x=x, y=part["y"])
    configs = [{"images": str(f), "schema": str(schema_path)} for f in sites]
    with pytest.raises(DataError, match="a site refused the warmup query") as refused:
        _deployed_sites_run(configs, digits[1])
    assert "99" not in str(refused.value) and "<private>" in str(refused.value)


def _model(folder) -> dict:
    return json.loads((folder / "model.json").read_text())


@pytest.mark.slow
def test_a_deployment_over_tls_writes_the_model_and_the_simulated_ledgers(
    tmp_path, monkeypatch, capsys, digits
):
    whole, schema_path, files = _files(tmp_path, digits)
    tls, port, out = write_tls_files(tmp_path), _free_port(), tmp_path / "deployed"
    server = _start(["server-images", "--schema", schema_path, "--out", out, "--sites", SITES,
                     "--listen", f"127.0.0.1:{port}", "--certificate", tls["certificate"],
                     "--key", tls["key"], "--ca", tls["ca"], "--seed", SEED, "--wait", 120,
                     "--no-budget-file", *SETTINGS], tmp_path / "server.log")  # fmt: skip
    wait_for_port("127.0.0.1", port, server, 120.0)
    sites = [
        _start(
            [
                "client-images",
                f,
                "--server",
                f"localhost:{port}",
                "--ca",
                tls["ca"],
                "--schema",
                schema_path,
                "--port",
                _free_port(),
                "--connect-timeout",
                10,
            ],
            tmp_path / f"site{i}.log",
        )  # fmt: skip
        for i, f in enumerate(files)
    ]
    try:
        assert server.wait(300) == 0, (tmp_path / "server.log").read_text()[-3000:]
        for i, site in enumerate(sites):
            assert site.wait(60) == 0, (tmp_path / f"site{i}.log").read_text()[-3000:]
    finally:
        for process in (server, *sites):
            _stop(process)
    simulated = tmp_path / "simulated"
    code, text = run(["federated", "simulate-images", whole, "--schema", schema_path, "--out",
                      simulated, "--sites", SITES, "--seed", SEED, *SETTINGS],
                     monkeypatch, capsys, unwrap=True)  # fmt: skip
    assert code == 0, text
    deployed, expected = _model(out), _model(simulated)
    for key in ("record_ledger", "site_ledger", "config", "schema"):
        assert deployed[key] == expected[key], key
    assert deployed["summary"]["guarantees"] == expected["summary"]["guarantees"]
    assert deployed["summary"]["noise_multiplier"] == expected["summary"]["noise_multiplier"]
    generator, _ = load_federated_images(out)
    assert generator(torch.zeros(3, generator.latent_dim), torch.arange(3)).shape == (3, 1, 8, 8)
    assert sorted(p.name for p in out.iterdir()) == ["generator.safetensors", "model.json"]
    log = (tmp_path / "server.log").read_text()  # shown before Flower started, and at the end
    planned = log.index("planned, per record: epsilon = 8 at delta = 1e-05")
    assert planned < log.index("Using SuperLink") < log.index("per record (add or remove")


# -- a deployed site's own count and cap (engines/federated_images_guard.py) --------------------
def _planned_site_settings(schema) -> SiteSettings:
    server = ImageServer(schema, SMALL, [1, 2], torch.Generator())
    server.plan()
    return server.site_settings()


def test_a_capped_site_answers_up_to_its_cap_and_keeps_a_write_ahead_ledger(tmp_path, digits):
    from dpforge.engines.federated_images_guard import site_guarantee

    _, schema_path, sites = _files(tmp_path, digits)
    settings = _planned_site_settings(digits[1])
    one, two = (site_guarantee([(settings, n)], 1e-5) for n in (1, 2))
    assert 0 < one < two < float("inf")  # each answer costs, from the noise the site adds
    capped = {"images": str(sites[0]), "schema": str(schema_path), "ledger": str(tmp_path / "l"),
              "max-epsilon": (one + two) / 2, "max-delta": 1e-5}  # fmt: skip
    configs = [capped, {"images": str(sites[1]), "schema": str(schema_path)}]
    with pytest.raises(DataError, match="refused the gradient query") as refused:
        _deployed_sites_run(configs, digits[1])  # SMALL asks each site twice
    assert "its own per-record epsilon" in str(refused.value)
    kept = json.loads((tmp_path / "l").read_text())
    (entry,) = kept["per_record"]["entries"]
    assert entry["name"].startswith("1 sanitized answers of this site")  # the refused one: not


def test_a_site_guarantee_follows_the_noise_it_adds():
    from dpforge.engines.federated_images_guard import site_guarantee, site_ledgers

    settings = _settings("frozen")  # C 1, noise std 0.5: sigma 0.25, batches of 4
    assert site_guarantee([(replace(settings, noise_std=0.0), 1)], 1e-5) == float("inf")
    assert site_guarantee([(replace(settings, noise_std=4.0), 3)], 1e-5) < site_guarantee(
        [(settings, 3)], 1e-5
    )
    per_record, per_site = site_ledgers([(settings, 3)])
    gaussian = dp_accounting.GaussianDpEvent(0.25)
    assert per_site.entries[0].event == dp_accounting.SelfComposedDpEvent(gaussian, 4 * 3)
    assert per_record.entries[0].event == record_event(2, 0.25, 4, 3)


def test_a_site_refuses_more_samples_than_the_warm_up_announced(tmp_path, digits):
    from flwr.app import Context, RecordDict

    from dpforge.engines.federated_images_guard import before_answer

    site = ImageSite(digits[0], digits[1], _settings("frozen"), torch.Generator())
    context = Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})
    before_answer(context, site, 4)
    with pytest.raises(DpforgeError, match="refuses a query of 5 samples"):
        before_answer(context, site, 5)


def test_an_image_site_refuses_samples_that_are_not_a_batch_of_its_records(digits):
    """Issue 43 (a site checks every array the server sends): shape, finite values, labels."""
    data, schema = digits
    site = ImageSite(data, schema, _settings("frozen"), torch.Generator().manual_seed(1))
    good, labels = torch.zeros((4, 1, 8, 8)), torch.arange(4) % 3
    site.check_query(good, labels)
    bad = [(torch.zeros((4, 1, 8, 7)), labels), (torch.full((4, 1, 8, 8), float("nan")), labels),
           (good, None), (good, torch.full((4,), 99)), (good.long(), labels)]  # fmt: skip
    for samples, given in bad:
        with pytest.raises(DpforgeError, match="this site refuses the query"):
            site.check_query(samples, given)
