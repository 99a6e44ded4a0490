"""Federated sites on Flower (issue 23.2): the sites' sums are the central aggregates plus noise.

A small table (bounds, categories and the label prior all estimated under DP) is split into
three sites. Under secagg the securely summed answers, less the sites' replayed noise shares,
are exactly the central engine's aggregates; the summed noise has the central variance (times
n / (n - t)); under local trust every site's own ledger is the central run's; a whole fit runs
through Flower's messages and SecAgg+ workflow in this process; the CLI writes a model folder
and the federation report.
"""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pandas as pd
import pytest
from tests.cli_support import run

pytest.importorskip("flwr", reason="Flower is not installed (pip install dpforge[federated])")

from flwr.app import Context, RecordDict  # noqa: E402

from dpforge.data.encoder import TableEncoder  # noqa: E402
from dpforge.engines import federated_app  # noqa: E402
from dpforge.engines.aggregates import EdgeCells  # noqa: E402
from dpforge.engines.federated_sim import (  # noqa: E402
    SiteGrid,
    simulated_engine,
    site_generator,
    split_table,
)
from dpforge.engines.federated_site import Site  # noqa: E402
from dpforge.engines.federated_site_ledger import SiteLedger  # noqa: E402
from dpforge.engines.federated_trust import Trust, degraded_epsilons  # noqa: E402
from dpforge.errors import DpforgeError, PrivacyError  # noqa: E402
from dpforge.schema.table import Column, Schema  # noqa: E402
from dpforge.statistics.anchor import AnchorConfig  # noqa: E402
from dpforge.statistics.marginals import count_tables, encoded_cells  # noqa: E402
from dpforge.synthesizer import Synthesizer  # noqa: E402

ANCHOR = AnchorConfig(steps=20, batch_size=256)


def _table(n: int = 900) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "income": np.round(rng.lognormal(8 + y, 1.0, n), 2),
            "city": rng.choice(["a", "b", "c", "d"], n, p=[0.4, 0.3, 0.2, 0.1]),
            "y": np.where(y == 1, "yes", "no"),
        }
    )
    columns = (Column("age", "integer"), Column("income", "continuous"),
               Column("city", "categorical"), Column("y", "categorical"))  # fmt: skip
    return frame, Schema(columns=columns, label="y", label_prior="dp")


def _declared(schema: Schema) -> Schema:
    """The schema with its bounds and categories declared (for the aggregate checks)."""
    return schema.with_columns((
        Column("age", "integer", lower=18, upper=90),
        Column("income", "continuous", lower=0, upper=1e6),
        Column("city", "categorical", categories=("a", "b", "c", "d")),
        Column("y", "categorical", categories=("no", "yes")),
    ))  # fmt: skip


def _replayed_noise(parts, trust: Trust, seed: int, std: float, shape, grid: float):
    """The noise shares the sites drew for their second answer (the first was the checks):
    their generators replayed."""
    share = std * trust.share_fraction
    draws = [
        np.rint(share * site_generator(seed, i, 1).standard_normal(shape) / grid)
        for i in range(len(parts))
    ]
    return np.sum(draws, axis=0) * grid


def test_secure_sum_less_the_noise_is_the_central_aggregate():
    frame, schema = _table()
    schema = _declared(schema)
    parts = split_table(frame, 3, None, np.random.default_rng(0))
    trust = Trust("secagg", 3, 1)
    engine, _ = simulated_engine(parts, schema, trust, seed=11)
    table = engine.read("measure").validated(schema, "error")
    encoder = TableEncoder(schema, n_bins=8)
    marginals = [("city",), ("y", "age"), ("income", "city")]
    noisy = table.cells(encoder, "y").noisy_counts(marginals, 2.0 * np.sqrt(3))
    grid = engine.transport.secagg_grid(2.0 * np.sqrt(3))[0]
    sizes = sum(t.size for t in noisy)
    noise = _replayed_noise(parts, trust, 11, 2.0 * np.sqrt(3), (sizes,), grid)
    central = count_tables(encoded_cells(encoder, frame, "y"), marginals)
    flat = np.concatenate([t.ravel() for t in noisy]) - noise
    np.testing.assert_allclose(flat, np.concatenate([c.ravel() for c in central]), atol=1e-9)
    assert np.abs(noise).max() > 0.5  # the noise was there


def test_secure_histogram_with_no_noise_is_exact():
    frame, schema = _table()
    parts = split_table(frame, 3, "city", np.random.default_rng(0))
    engine, _ = simulated_engine(parts, schema, Trust("secagg", 3, 1), seed=1)
    table = engine.read("measure").validated(schema, "error")
    edges = (-np.inf, 0.0, 100.0, 1000.0, 10000.0, np.inf)
    noisy = table.column("income").noisy_bincount(EdgeCells(edges), 5, 0.0)
    exact = np.bincount(EdgeCells(edges)(frame["income"].to_numpy()), minlength=5)
    np.testing.assert_array_equal(noisy, exact)
    assert EdgeCells(edges)(np.array([np.nan, 5.0])).tolist() == [-1, 1]  # empty: nowhere


@pytest.mark.parametrize("tolerate", [0, 1])
def test_summed_shares_carry_the_central_variance(tolerate):
    trust, sigma, draws = Trust("secagg", 4, tolerate), 3.0, 4000
    sites = [_site(trust, np.random.default_rng(i)) for i in range(4)]
    for s in sites:
        s.answer({"op": "validate", "schema": _one_column(), "out_of_bounds": "error"}, [])
    query = {"op": "size", "std": sigma, "grid": 2.0**-6}
    sums = [sum(s.answer(query, [])[0] for s in sites) - 20.0 for _ in range(draws)]
    expected = sigma**2 * 4 / (4 - tolerate)
    assert abs(np.var(sums) / expected - 1) < 0.08  # 4,000 draws: sd of the ratio ~0.022
    assert abs(np.mean(sums)) < 4 * np.sqrt(expected / draws)


def test_a_capped_site_refuses_a_release_past_its_own_budget():
    site = _site(Trust("local", 2), np.random.default_rng(0), SiteLedger(cap=(1.0, 1e-5)))
    site.answer({"op": "validate", "schema": _one_column(), "out_of_bounds": "error"}, [])
    site.answer({"op": "size", "std": 20.0}, [])  # epsilon about 0.25: answered
    with pytest.raises(PrivacyError, match="would pass its cap"):
        site.answer({"op": "size", "std": 0.5}, [])  # a server asking for little noise
    assert len(site.ledger) == 1  # the refused release was never recorded nor answered


def test_a_site_refuses_a_server_with_another_trust_model():
    site = _site(Trust("secagg", 4, 1), np.random.default_rng(0))
    site.answer({"op": "validate", "schema": _one_column(), "out_of_bounds": "error"}, [])
    with pytest.raises(PrivacyError, match="trust model"):  # shares sized for 10 sites
        site.answer({"op": "size", "std": 5.0, "grid": 0.25, "trust": ["secagg", 10, 1]}, [])


def _one_column() -> dict:
    return Schema(columns=(Column("a", "continuous", lower=0, upper=2),)).to_dict()


def _site(trust: Trust, rng: np.random.Generator, ledger: SiteLedger | None = None) -> Site:
    """A site of five records declaring the one-column schema as its own."""
    frame = pd.DataFrame({"a": [1.0] * 5})
    return Site(frame, Schema.from_dict(_one_column()), trust, rng, ledger)


@pytest.mark.slow
def test_local_trust_each_site_ledger_is_the_central_one():
    frame, schema = _table(2400)  # categories found at each site: its counts must stand out
    parts = split_table(frame, 3, None, np.random.default_rng(1))
    engine, grid = simulated_engine(parts, schema, Trust("local", 3), seed=2)
    synth = Synthesizer(schema, epsilon=2.0, seed=0, progress=False, anchor=ANCHOR,
                        metadata_share=0.3).fit(engine)  # fmt: skip
    central = synth.ledger_.epsilon(1e-5)
    assert central == pytest.approx(2.0, rel=1e-3)
    for ledger in grid.site_ledgers():  # the releases asked of it, at full noise
        assert 0.9 * central <= ledger.epsilon(1e-5) <= central * (1 + 1e-3)
        assert len(ledger) > 5  # one entry per release it answered
    assert "a" in synth.schema_.column("city").categories  # the union of the sites' releases
    assert synth.sample(50, seed=0).shape == (50, 4)


@pytest.mark.slow
def test_flower_simulation_fits_under_secagg_and_degrades_beyond_t():
    frame, schema = _table(2400)
    parts = split_table(frame, 3, None, np.random.default_rng(3))
    trust = Trust("secagg", 3, 1)
    engine, grid = simulated_engine(parts, schema, trust, seed=4)
    synth = Synthesizer(schema, epsilon=2.0, seed=0, progress=False, anchor=ANCHOR,
                        metadata_share=0.3).fit(engine)  # fmt: skip
    assert synth.ledger_.epsilon(1e-5) == pytest.approx(2.0, rel=1e-3)
    assert engine.transport.rounds > 10  # every release went to the sites
    worst = degraded_epsilons(synth.ledger_, trust, 1e-5)
    assert list(worst) == [2] and worst[2] > 2.0  # two of three sites colluding
    assert all(led.epsilon(1e-5) > 2.0 for led in grid.site_ledgers())  # a share alone
    assert synth.sample(50, seed=0)["y"].isin(["no", "yes"]).all()


def test_federated_engine_refuses_a_discriminator_and_a_checkpoint(tmp_path):
    frame, schema = _table(200)
    engine, _ = simulated_engine(split_table(frame, 2, None, np.random.default_rng(0)), schema,
                                 Trust("local", 2), seed=0)  # fmt: skip
    synth = Synthesizer(schema, epsilon=3.0, seed=0, progress=False,
                        anchor=AnchorConfig(share=0.5), epochs=1.0)  # fmt: skip
    with pytest.raises(PrivacyError, match="anchored table path only"):
        synth.fit(engine)
    folder = tmp_path / "ck"
    resumable = Synthesizer(schema, epsilon=3.0, seed=0, progress=False, checkpoint_dir=folder)
    with pytest.raises(DpforgeError, match="cannot resume"):
        resumable.fit(engine)


def test_cli_simulate_writes_model_and_federation_report(tmp_path, monkeypatch, capsys):
    fast = partial(Synthesizer, anchor=ANCHOR)
    monkeypatch.setattr("dpforge.fitting.FitRun", fast)
    frame, schema = _table(600)
    data, schema_path = tmp_path / "t.csv", tmp_path / "schema.json"
    frame.to_csv(data, index=False)
    schema_path.write_text(_declared(schema).to_json())
    args = ["federated", "simulate", data, "--schema", schema_path, "--out", tmp_path / "m",
            "--sites", "3", "--epsilon", "2", "--split", "by:city", "--seed", "0"]  # fmt: skip
    code, out = run(args, monkeypatch, capsys)
    assert code == 0, out
    report = json.loads((tmp_path / "m.federation.json").read_text())
    assert report["trust"] == "secagg" and report["tolerate"] == 1
    assert len(report["site_ledgers"]) == 3 and "2" in report["epsilon_if_k_sites_collude"]
    ledger = json.loads((tmp_path / "m" / "model.json").read_text())["privacy"]["ledger"]
    assert any("trust secagg" in e["name"] for e in ledger["entries"])
    code, out = run(
        [*args, "--trust", "local", "--tolerate", "1", "--overwrite"], monkeypatch, capsys
    )
    assert code != 0 and "--tolerate applies to --trust secagg only" in out


def test_deployed_apps_fit_over_a_grid(tmp_path, monkeypatch):
    """The deployment's server_app and client_app (sites reading their CSV, noise from the OS,
    ledger files), over the in-process grid instead of a SuperLink."""
    monkeypatch.setattr("dpforge.fitting.FitRun", partial(Synthesizer, anchor=ANCHOR))
    frame, schema = _table(900)
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(_declared(schema).to_json())
    configs = []
    for i, part in enumerate(split_table(frame, 3, None, np.random.default_rng(5))):
        part.to_csv(tmp_path / f"site{i}.csv", index=False)
        ledger = str(tmp_path / f"site{i}.ledger.json")
        configs.append({"data": str(tmp_path / f"site{i}.csv"), "schema": str(schema_path),
                        "trust": "secagg", "sites": 3, "tolerate": 1,
                        "ledger": ledger})  # fmt: skip
    grid = SiteGrid(federated_app.client_app, configs)
    run_config = {"schema": str(schema_path), "out": str(tmp_path / "m"), "epsilon": 2.0,
                  "trust": "secagg", "sites": 3, "tolerate": 1, "wait": 5}  # fmt: skip
    federated_app.server_app(grid, Context(run_id=1, node_id=1, node_config={},
                                           state=RecordDict(), run_config=run_config))  # fmt: skip
    assert (tmp_path / "m" / "model.json").is_file()
    report = json.loads((tmp_path / "m.federation.json").read_text())
    assert report["epsilon"] == pytest.approx(2.0, rel=1e-3) and report["tolerate"] == 1
    for i in range(3):
        ledger = json.loads((tmp_path / f"site{i}.ledger.json").read_text())
        assert len(ledger["entries"]) >= 5  # every release this site answered


# -- issue 43.7: federated runs charge the budget file; issue 46.4: clipping and the unit ------
def _simulate_files(tmp_path, monkeypatch, frame=None):
    monkeypatch.setattr("dpforge.fitting.FitRun", partial(Synthesizer, anchor=ANCHOR))
    table, schema = _table(600)
    data, schema_path = tmp_path / "t.csv", tmp_path / "schema.json"
    (table if frame is None else frame).to_csv(data, index=False)
    schema_path.write_text(_declared(schema).to_json())
    return data, schema_path


def test_cli_simulate_charges_the_data_set_budget_before_its_first_release(
    tmp_path, monkeypatch, capsys
):
    data, schema_path = _simulate_files(tmp_path, monkeypatch)
    code, out = run(["budget", "set", data, "--epsilon", "4", "--delta", "1e-5"], monkeypatch,
                    capsys)  # fmt: skip
    assert code == 0, out
    args = ["federated", "simulate", data, "--schema", schema_path, "--sites", "3",
            "--epsilon", "3", "--trust", "local", "--seed", "0"]  # fmt: skip
    code, out = run([*args, "--out", tmp_path / "m1"], monkeypatch, capsys)
    assert code == 0, out
    assert "data set budget" in out and "per one record" in out
    for second in ("m2", "m3"):  # ε 3 + 3 composes past the declared 4: refused, every time
        code, out = run([*args, "--out", tmp_path / second], monkeypatch, capsys)
        assert code != 0 and "budget" in out, out
        assert not (tmp_path / second).exists()
    runs = json.loads((tmp_path / "t.csv.dpforge-budget.json").read_text())["runs"]
    assert len(runs) == 1 and not runs[0]["reserved"]  # the first run, settled with its ledger
    ledger = json.loads((tmp_path / "m1" / "model.json").read_text())["privacy"]["ledger"]
    charged = {e["name"] for e in runs[0]["ledger"]["entries"]}
    assert charged <= {e["name"] for e in ledger["entries"]} and len(charged) > 3


def test_cli_simulate_clips_out_of_bounds_values_when_asked_and_states_the_unit(
    tmp_path, monkeypatch, capsys
):
    frame, _ = _table(600)
    frame.loc[5, "age"] = 120  # outside the declared [18, 90]
    data, schema_path = _simulate_files(tmp_path, monkeypatch, frame)
    args = ["federated", "simulate", data, "--schema", schema_path, "--out", tmp_path / "m",
            "--sites", "3", "--trust", "local", "--seed", "0", "--no-budget-file"]  # fmt: skip
    code, out = run(args, monkeypatch, capsys)
    assert code != 0 and "--clip-out-of-bounds" in out
    code, out = run([*args, "--clip-out-of-bounds"], monkeypatch, capsys)
    assert code == 0, out
    assert "per one record" in out and "no privacy unit" in " ".join(out.split())
    report = json.loads((tmp_path / "m.federation.json").read_text())
    assert report["unit"].startswith("one record")
    code, out = run(["federated", "simulate", "--help"], monkeypatch, capsys)
    assert "--clip-out-of-bounds" in out and "no privacy unit" in " ".join(out.split())
