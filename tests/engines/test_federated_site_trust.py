"""A federated site trusts nothing from the server (issue 43, items 1, 2, 4 and 5; design rule 12).

Each test replays a malicious server's attack of the fourth privacy review and fails on
723a06a:

1. the server's schema as an oracle (shrinking bounds found a site's exact maximum, a category
   list found whether a record holds a value): the site's refusals must be the same for two
   data sets that differ in the maximal record;
2. a scout "model" of total mass 6e4 turned a pair score into the site's exact record count:
   the site must refuse any array that is not a probability table of the pair's shape;
4. three warm-ups under an image site's cap epsilon = 3 re-priced old answers at the latest
   noise and reached a true composition of 4.94;
5. a table site's cap and ledger file covered one run: three runs under a cap of 1.0 composed
   past it.
"""

from __future__ import annotations

import json
import stat
from dataclasses import replace

import dp_accounting
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr", reason="Flower is not installed (pip install dpforge[federated])")

from flwr.app import Context, RecordDict  # noqa: E402

from dpforge.data.encoder import TableEncoder  # noqa: E402
from dpforge.data.tables import validate_table  # noqa: E402
from dpforge.engines import federated_app  # noqa: E402
from dpforge.engines.aggregates import EdgeCells  # noqa: E402
from dpforge.engines.federated import FederatedEngine  # noqa: E402
from dpforge.engines.federated_flower import FlowerTransport  # noqa: E402
from dpforge.engines.federated_sim import SiteGrid  # noqa: E402
from dpforge.engines.federated_site import Site, describe_encoder  # noqa: E402
from dpforge.engines.federated_trust import Trust  # noqa: E402
from dpforge.errors import DataError, DpforgeError, PrivacyError  # noqa: E402
from dpforge.privacy.accounting import epsilon  # noqa: E402
from dpforge.privacy.ledger import PrivacyLedger  # noqa: E402
from dpforge.privacy.release_noise import noise_generator, release_event  # noqa: E402
from dpforge.schema.table import Column, Schema  # noqa: E402
from dpforge.statistics.marginals import encoded_cells  # noqa: E402

OWN = Schema(columns=(
    Column("body_mass_g", "continuous", lower=2000, upper=7000),
    Column("species", "categorical", categories=("Adelie", "Chinstrap", "Gentoo")),
))  # fmt: skip
MAX_RECORD = {"body_mass_g": 4775.0, "species": "Chinstrap"}


def _penguins(with_max: bool) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"body_mass_g": np.round(rng.uniform(2700, 4500, 500)),
                          "species": rng.choice(["Adelie", "Gentoo"], 500)})  # fmt: skip
    return pd.concat([frame, pd.DataFrame([MAX_RECORD])], ignore_index=True) if with_max else frame


def _shrunk(upper: float | None = None, categories: tuple | None = None) -> dict:
    """The site's own schema with the server's changes: a bound or a category list."""
    mass, species = OWN.columns
    if upper is not None:
        mass = replace(mass, upper=upper)
    if categories is not None:
        species = replace(species, categories=categories)
    return OWN.with_columns((mass, species)).to_dict()


def _outcomes(frame: pd.DataFrame) -> list:
    """What a server learns from the attack's queries: each answer or refusal message."""
    site = Site(frame, OWN, Trust("local", 2), np.random.default_rng(1))
    attack = [_shrunk(upper) for upper in (7000, 6000, 5000, 4800, 4776, 4775, 4774, 4600, 4500)]
    attack += [_shrunk(categories=("Adelie", "Gentoo")), _shrunk(categories=("Adelie",))]
    seen = []
    for schema in attack:
        query = {"op": "validate", "schema": schema, "out_of_bounds": "error"}
        try:
            seen.append(("answered", site.answer(query, [])))
        except DpforgeError as exc:
            seen.append(("refused", str(exc)))
    rule = EdgeCells((-np.inf, 3000.0, 4600.0, 4700.0))  # the maximum's cell is beyond size 3
    site.answer({"op": "validate", "schema": OWN.to_dict(), "out_of_bounds": "error"}, [])
    query = {"op": "bincount", "column": "body_mass_g", "rule": rule.to_dict(), "size": 3,
             "std": 0.0}  # fmt: skip
    seen.append(("shape", site.answer(query, []).shape))
    assert len(site.ledger) == 1  # only the histogram was a release
    return seen


def test_the_server_schema_is_no_oracle_for_the_maximum_or_a_category():
    without, with_max = _outcomes(_penguins(False)), _outcomes(_penguins(True))
    assert without == with_max  # identical: the maximal record changes nothing the server sees
    assert without[0] == ("answered", None)  # the site's own schema
    assert without[1][0] == "refused" and "own declared schema" in without[1][1]
    assert without[-1] == ("shape", (3,))


def test_a_server_schema_may_fill_only_undeclared_metadata():
    open_schema = OWN.with_columns((Column("body_mass_g", "continuous"), OWN.columns[1]))
    site = Site(_penguins(True), open_schema, Trust("local", 2), np.random.default_rng(1))
    site.answer({"op": "validate", "schema": open_schema.to_dict(), "out_of_bounds": "error"}, [])
    filled = OWN.with_columns((Column("body_mass_g", "continuous", lower=0, upper=9e3),
                               OWN.columns[1]))  # fmt: skip
    site.answer({"op": "released", "schema": filled.to_dict()}, [])  # DP bounds: accepted
    changed = filled.with_columns(
        (filled.columns[0], replace(OWN.columns[1], categories=("Adelie",)))
    )
    with pytest.raises(PrivacyError, match="'categories' differs from this site's own"):
        site.answer({"op": "released", "schema": changed.to_dict()}, [])
    with pytest.raises(PrivacyError, match="out-of-bounds values by 'error'"):
        site.answer(
            {"op": "validate", "schema": open_schema.to_dict(), "out_of_bounds": "clip"}, []
        )
    with pytest.raises(PrivacyError, match="operation it does not know"):
        site.answer({"op": "checked"}, [])


# -- 2: the arrays the server sends -----------------------------------------------------------
def _scores_query(site: Site, frame: pd.DataFrame, tables: list[np.ndarray]):
    encoder = TableEncoder(OWN, n_bins=4)
    query = {"op": "scores", "std": 1.0, "encoder": describe_encoder(encoder), "label": None,
             "pairs": [["species", "body_mass_g"]]}  # fmt: skip
    return site.answer(query, tables)


def test_a_site_refuses_model_tables_that_are_not_probability_tables():
    frame = _penguins(True)
    site = Site(frame, OWN, Trust("local", 2), np.random.default_rng(1))
    site.answer({"op": "validate", "schema": OWN.to_dict(), "out_of_bounds": "error"}, [])
    cells = encoded_cells(TableEncoder(OWN, n_bins=4), validate_table(frame, OWN), None)
    shape = (cells["species"].size, cells["body_mass_g"].size)
    heavy = np.full(shape, 6e4 / np.prod(shape))  # the table: total mass 6e4
    for bad in (heavy, -np.ones(shape) / np.prod(shape), np.ones((2, 2)) / 4,
                np.full(shape, np.nan)):  # fmt: skip
        with pytest.raises(PrivacyError, match="probability table|shape"):
            _scores_query(site, frame, [bad])
    assert len(site.ledger) == 0  # nothing released, nothing recorded
    score = _scores_query(site, frame, [np.ones(shape) / np.prod(shape)])
    assert score.shape == (1,) and len(site.ledger) == 1
    (entry,) = site.ledger.entries
    assert entry.event == release_event(1.0)  # std 1 x 2 for sensitivity 2


# -- 5: a table site's ledger and cap across runs ---------------------------------------------
def _noise_for_two_of_three_runs(cap: float, delta: float) -> float:
    """A noise std whose release (recorded as its zCDP) fits twice under ``cap``, not three
    times."""
    for std in np.arange(3.0, 12.0, 0.1):
        composed = [epsilon(dp_accounting.SelfComposedDpEvent(
            release_event(std), k), delta, "rdp") for k in (2, 3)]  # fmt: skip
        if composed[0] < cap * 0.98 and composed[1] > cap * 1.02:
            return float(std)
    raise AssertionError("no such std")


def test_a_table_site_cap_and_ledger_file_cover_every_run(tmp_path):
    frame = _penguins(True)
    schema_path = tmp_path / "own.json"
    schema_path.write_text(OWN.to_json())
    configs = []
    for i, part in enumerate((frame.iloc[:250], frame.iloc[250:])):
        part.to_csv(tmp_path / f"site{i}.csv", index=False)
        configs.append({"data": str(tmp_path / f"site{i}.csv"), "schema": str(schema_path),
                        "trust": "local", "sites": 2, "ledger": str(tmp_path / f"l{i}.json"),
                        "max-epsilon": 1.0, "max-delta": 1e-5})  # fmt: skip
    std = _noise_for_two_of_three_runs(1.0, 1e-5)

    def one_run() -> float:  # a new server run: fresh SuperNode contexts, same site files
        grid = SiteGrid(federated_app.client_app, configs)
        engine = FederatedEngine(
            FlowerTransport(grid, list(grid.get_node_ids()), Trust("local", 2))
        )
        engine.read("measure").validated(OWN, "error")
        return engine.noisy_size("measure", std)

    one_run(), one_run()
    with pytest.raises(DataError, match="would pass its cap"):
        one_run()
    for i in range(2):
        path = tmp_path / f"l{i}.json"
        kept = PrivacyLedger.from_dict(json.loads(path.read_text()))
        assert len(kept) == 2 and kept.epsilon(1e-5) <= 1.0  # both runs, not the refused one
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_deployed_site_cap_needs_its_ledger_file():
    with pytest.raises(DpforgeError, match="needs its ledger file"):
        federated_app.site_ledger({"max-epsilon": 1.0, "max-delta": 1e-5})


# -- 4: an image site prices every answer at the noise it added then --------------------------
def test_warm_ups_cannot_reprice_an_image_site_s_old_answers(tmp_path):
    from types import SimpleNamespace

    from dpforge.engines.federated_images_guard import before_answer
    from dpforge.engines.federated_images_site import SiteSettings

    config = {"ledger": str(tmp_path / "images.ledger.json"), "max-epsilon": 3.0,
              "max-delta": 1e-5}  # fmt: skip
    context = Context(run_id=1, node_id=1, node_config=config, state=RecordDict(), run_config={})
    answered = []
    for noise_std in (4.0, 8.0, 16.0):  # each warm-up asks for more noise (sigma 2, 4, 8)
        settings = SiteSettings(critics=1, clip_norm=1.0, noise_std=noise_std, whole_batch=True,
                                critic_training="frozen", d_steps=1, warm_start_steps=1,
                                batch_size=4, critic_hidden=(8,))  # fmt: skip
        site, given = SimpleNamespace(settings=settings), 0
        while given < 2000:
            try:
                before_answer(context, site, 4)
            except DpforgeError:
                break
            given += 1
        answered.append((noise_std / 2.0, given))
    true = epsilon(dp_accounting.ComposedDpEvent([
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma), n)
        for sigma, n in answered if n
    ]), 1e-5, "rdp")  # fmt: skip
    assert true <= 3.0 * (1 + 1e-6)  # every answer at the noise it carried
    assert answered[0][1] > 0 and sum(n for _, n in answered) > answered[0][1]
    kept = json.loads((tmp_path / "images.ledger.json").read_text())
    assert [s["answers"] for s in kept["segments"]] == [n for _, n in answered if n]


# -- 43.4: a site's answers are drawn by the vetted sampler ----------------------------------
def _size_answers(frame: pd.DataFrame, trust: Trust, rng, draws: int) -> np.ndarray:
    site = Site(frame, OWN, trust, rng)
    site.answer({"op": "validate", "schema": OWN.to_dict(), "out_of_bounds": "error"}, [])
    grid = {"grid": 0.125} if trust.mode == "secagg" else {}
    return np.array([site.answer({"op": "size", "std": 3.0, **grid}, [])[0] for _ in range(draws)])


@pytest.mark.parametrize("trust", [Trust("local", 2), Trust("secagg", 4, 1)])
def test_a_site_s_answer_moves_by_one_record_under_the_noise_its_event_says(trust):
    frame = _penguins(False)
    share = 3.0 * trust.share_fraction
    answers = {
        n: _size_answers(frame.iloc[:n], trust, np.random.default_rng(n), 4000) for n in (300, 301)
    }
    moved = answers[301].mean() - answers[300].mean()
    assert abs(moved - 1.0) < 4 * share * np.sqrt(2 / 4000)  # the mean moves by one record
    assert answers[300].std() == pytest.approx(share, rel=0.06)  # std: the share priced
    if trust.mode == "secagg":  # multiples of the SecAgg+ grid, summed exactly
        assert np.array_equal(answers[300] / 0.125, np.rint(answers[300] / 0.125))


def test_a_site_in_a_release_run_draws_with_opendp(monkeypatch):
    from dpforge.privacy import release_noise

    calls, real = [], release_noise._opendp_gaussian

    def spy(std: float, atom: type):
        calls.append((std, atom))
        return real(std, atom)

    def refused(*args, **kwargs):
        raise AssertionError("numpy's floating-point Gaussian drawn in a release run")

    monkeypatch.setattr(release_noise, "_opendp_gaussian", spy)
    monkeypatch.setattr(release_noise.ReleaseGenerator, "standard_normal", refused)
    monkeypatch.setattr(release_noise.ReleaseGenerator, "normal", refused)
    _size_answers(_penguins(False), Trust("local", 2), noise_generator(None), 2)
    assert calls == [(3.0, float)] * 2
    deployed = federated_app._deployed_site.__code__.co_names
    assert "noise_generator" in deployed  # a deployed site's generator is a release run's
