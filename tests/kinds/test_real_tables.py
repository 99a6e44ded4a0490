"""Real tables as data stewards hold them (issue 21), end to end on small fits: missing values
on the Palmer penguins, heaped numbers, identifiers, and the demo's public split."""

from __future__ import annotations

import json
import shlex
from functools import partial

import numpy as np
import pandas as pd
import pytest

from cli_support import run
from dpforge.evaluation.fidelity import marginal_fidelity
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer, load

palmerpenguins = pytest.importorskip("palmerpenguins")
SMALL = AnchorConfig(steps=300, batch_size=512)
ATOMS = np.array([17.5, 22.0, 27.0, 32.5, 40.0, 61.0])


def penguins_text() -> pd.DataFrame:
    frame = palmerpenguins.load_penguins()
    return frame.astype(object).where(frame.notna(), "").astype(str)


def penguin_schema() -> Schema:
    """A public schema (bounds from field guides); every measured column may be empty."""
    return Schema(
        columns=(
            Column("species", "categorical", categories=("Adelie", "Chinstrap", "Gentoo")),
            Column("island", "categorical", categories=("Biscoe", "Dream", "Torgersen")),
            Column("bill_length_mm", "continuous", 30.0, 60.0, nullable=True, resolution=0.1),
            Column("bill_depth_mm", "continuous", 13.0, 22.0, nullable=True, resolution=0.1),
            Column("flipper_length_mm", "integer", 170.0, 235.0, nullable=True),
            Column("body_mass_g", "integer", 2500.0, 6500.0, nullable=True),
            Column("sex", "categorical", categories=("female", "male"), nullable=True),
            Column("year", "integer", 2007.0, 2009.0),
        ),
        label="species",
    )


@pytest.mark.slow
def test_penguins_missing_rates_and_their_dependence_on_the_label_are_reproduced():
    """The same code path without noise (epsilon = inf): each nullable column's missing rate
    within 0.01, and the missing rate of 'sex' per species (none for Chinstrap) too."""
    synth = Synthesizer(penguin_schema(), epsilon=float("inf"), seed=0, anchor=SMALL)
    rows = synth.fit(penguins_text()).sample(20_000, seed=1)
    real = palmerpenguins.load_penguins()
    for column in ("bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "sex"):
        assert abs(rows[column].isna().mean() - real[column].isna().mean()) <= 0.01, column
    by_species = rows["sex"].isna().groupby(rows["species"]).mean()
    expected = real["sex"].isna().groupby(real["species"]).mean()
    assert (by_species - expected).abs().max() <= 0.01
    assert str(rows["body_mass_g"].dtype) == "Int64"


def heaped_table(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Ages recorded on six points, their weights depending on the label."""
    weights = np.array([0.1, 0.25, 0.2, 0.2, 0.15, 0.1])
    label = rng.choice(["a", "b"], n)
    age = np.where(
        label == "a", rng.choice(ATOMS, n, p=weights), rng.choice(ATOMS, n, p=weights[::-1])
    )
    return pd.DataFrame({"age": age, "age_free": age, "y": label})


def atom_tvd(real: np.ndarray, synthetic: np.ndarray) -> float:
    """TVD over the six atoms plus one cell for every value on none of them."""

    def distribution(values: np.ndarray) -> np.ndarray:
        hits = np.isclose(values[:, None], ATOMS[None, :])
        index = np.where(hits.any(axis=1), hits.argmax(axis=1), ATOMS.size)
        return np.bincount(index, minlength=ATOMS.size + 1) / values.size

    return 0.5 * float(np.abs(distribution(real) - distribution(synthetic)).sum())


@pytest.mark.slow
def test_six_atoms_come_back_as_atoms_at_epsilon_one():
    """At epsilon = 1 on 4,000 rows: 1-way TVD <= 0.02 on the six atoms themselves (with the
    public resolution 0.5), and on 10 public bins without it."""
    schema = Schema(
        (
            Column("age", "continuous", 0.0, 100.0, resolution=0.5),
            Column("age_free", "continuous", 0.0, 100.0),
            Column("y", "categorical", categories=("a", "b")),
        ),
        label="y",
    )
    real = heaped_table(4000, np.random.default_rng(0))
    anchor = AnchorConfig(steps=500, batch_size=256)
    synth = Synthesizer(schema, epsilon=1.0, seed=0, anchor=anchor).fit(real)
    rows = synth.sample(20_000, seed=1)
    assert atom_tvd(real["age"].to_numpy(), rows["age"].to_numpy()) <= 0.02
    assert marginal_fidelity(real, rows, schema, 10).one_way["age_free"] <= 0.02


def identifier_table() -> tuple[pd.DataFrame, Schema]:
    """Penguins with a record number and a free-text note, as a steward's export has them."""
    table = penguins_text()
    table["record"] = [f"PX-{9_000_000 + i}" for i in range(len(table))]
    table["note"] = [f"seen by ranger Quixotic{i} near the old pier" for i in range(len(table))]
    public = penguin_schema()
    extra = (Column("record", "surrogate"), Column("note", "drop"))
    return table, public.with_columns(public.columns + extra)


@pytest.mark.slow
def test_an_identifier_never_reaches_the_model_folder(tmp_path):
    table, schema = identifier_table()
    synth = Synthesizer(schema, epsilon=1.0, seed=0, anchor=AnchorConfig(steps=20))
    synth.fit(table).save(tmp_path / "model")
    for path in (tmp_path / "model").iterdir():
        content = path.read_bytes()
        assert b"PX-9" not in content and b"Quixotic" not in content, path.name
    rows = load(tmp_path / "model").sample(500, seed=0)
    assert "note" not in rows.columns
    assert rows["record"].is_unique and not set(rows["record"]) & set(table["record"])
    assert json.loads((tmp_path / "model" / "model.json").read_text())["schema"]["columns"][-1] == {
        "name": "note",
        "type": "drop",
    }


@pytest.mark.slow
def test_the_demo_writes_its_split_and_the_commands_it_prints_run(tmp_path, monkeypatch, capsys):
    import dpforge.cli.demo as demo

    fast = partial(Synthesizer, anchor=AnchorConfig(steps=20, batch_size=128))
    monkeypatch.setattr(demo, "Synthesizer", fast)
    out = tmp_path / "demo"
    code, text = run(["demo", "--out", out, "--seed", "0"], monkeypatch, capsys)
    assert code == 0, text
    assert {"public-train.csv", "public-test.csv"} <= {p.name for p in out.iterdir()}
    commands = [line.strip() for line in text.splitlines() if line.startswith("  dpforge ")]
    assert [c.split()[1] for c in commands] == ["evaluate", "report"]
    args = shlex.split(commands[0])[1:] + ["--no-attacks", "--classifiers", "lr"]
    code, text = run(args, monkeypatch, capsys)
    assert code == 0, text
    assert json.loads((out / "evaluation.json").read_text())["utility"] is not None
