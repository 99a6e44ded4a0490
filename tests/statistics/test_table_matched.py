"""Table rows matched to the stored marginals at sample time (:mod:`dpforge.statistics.reweight`).

What matching reads is the DP release the ledger records (the noisy counts, nothing exact): the
ledger does not change, the folder stores the noisy counts and its round trip samples the same
rows; matched rows are closer to the release than plain ones; old folders and wrong settings are
refused with a way out; a tampered release is refused on load."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from tests.cli_support import save_without_release

import dpforge
from cli_support import run
from dpforge.errors import DataError, ModelFileError
from dpforge.generate import sample_mover
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.marginals import encoded_cells, true_counts
from dpforge.statistics.particles import MoveSettings
from dpforge.statistics.reweight import MarginalTargets, ReweightSettings
from dpforge.synthesizer import Synthesizer

FAST = AnchorConfig(steps=30, batch_size=256)


@pytest.fixture(scope="module")
def fitted(cancer):
    frame, schema = cancer
    synth = Synthesizer(schema, epsilon=3.0, seed=0, progress=False, anchor=FAST)
    return synth.fit(frame), frame


def _gap(synth, rows) -> float:
    """The rows' summed TVD to every stored marginal."""
    targets = MarginalTargets(synth.sample_release_.marginals)
    index = targets.cell_index(encoded_cells(synth.encoder_, rows, "diagnosis"))
    hist = np.bincount(index.reshape(-1), minlength=targets.flat.size) / len(rows)
    return 0.5 * float(np.abs(hist - targets.flat).sum())


def test_matching_reads_only_the_release_and_round_trips(fitted, tmp_path):
    synth, _ = fitted
    ledger = json.dumps(synth.ledger_.to_dict(), sort_keys=True)
    matched = synth.sample(300, seed=3)  # tables match by default
    assert json.dumps(synth.ledger_.to_dict(), sort_keys=True) == ledger  # nothing charged
    assert matched.equals(synth.sample(300, seed=3, move=True))
    assert not matched.equals(synth.sample(300, seed=3, move=False))
    synth.save(tmp_path / "model")
    assert (tmp_path / "model" / "release.safetensors").is_file()
    assert dpforge.load(tmp_path / "model").sample(300, seed=3).equals(matched)


def test_matched_rows_are_closer_to_the_release(fitted):
    synth, _ = fitted
    plain = synth.sample(2000, seed=4, move=False)
    matched = synth.sample(2000, seed=4, move=ReweightSettings(pool=8))
    assert _gap(synth, matched) < 0.7 * _gap(synth, plain)


def test_the_folder_stores_the_consistent_estimate_not_the_exact_counts(fitted, tmp_path):
    """The release is the consistent estimate of the noisy counts (statistics/estimate.py):
    non-negative, each 1-way table the sum of its label x column table, still off the exact
    counts by about the noise (less: every cell has several readings)."""
    synth, frame = fitted
    release = synth.sample_release_
    blocks = encoded_cells(synth.encoder_, frame, "diagnosis")
    first = [m for m in release.marginals if len(m.columns) == 1 or m.columns[0] == "diagnosis"]
    plan = synth.anchor_plan_
    expected = plan.round_one_noise * np.sqrt(len(first))  # round 1: one Gaussian release
    noise = np.concatenate([m.noisy_counts - true_counts(blocks, m.columns).ravel() for m in first])
    assert plan.round_one_noise > 0
    assert 0.2 * expected < np.std(noise) < expected
    one_way = {m.columns[0]: m.noisy_counts for m in first if len(m.columns) == 1}
    for m in first:
        assert m.noisy_counts.min() >= 0
        if len(m.columns) == 2 and m.columns[1] in one_way:
            by_class = m.noisy_counts.reshape(m.shape).sum(axis=0)
            np.testing.assert_allclose(by_class, one_way[m.columns[1]], rtol=1e-6, atol=1e-6)
    synth.save(tmp_path / "model")
    stored = dpforge.load(tmp_path / "model").sample_release_.marginals
    assert len(stored) == len(release.marginals)
    for a, b in zip(stored, release.marginals, strict=True):
        assert np.array_equal(a.noisy_counts, b.noisy_counts)
    info = json.loads((tmp_path / "model" / "model.json").read_text())
    assert info["release"]["kind"] == "table"
    assert all("noisy_counts" not in m for m in info["release"]["marginals"])


def test_a_condition_matches_the_class_marginals(fitted):
    synth, _ = fitted
    rows = synth.sample(200, seed=5, conditions={"diagnosis": "benign"})
    assert set(rows["diagnosis"]) == {"benign"} and len(rows) == 200


def test_chunks_give_the_asked_rows_and_a_row_drawn_twice_is_not_a_copy(fitted):
    synth, _ = fitted
    rows = synth.sample(250, seed=6, move=ReweightSettings(pool=2, chunk=100))
    assert len(rows) == 250
    # the values inside a cell are drawn per row: repeated cells, fresh values
    assert not rows.duplicated().any()


def test_an_old_folder_is_refused_when_matching_is_asked_for(fitted, tmp_path, monkeypatch, capsys):
    synth, _ = fitted
    save_without_release(synth, tmp_path / "old")  # as saved before it existed
    old = dpforge.load(tmp_path / "old")
    with pytest.raises(DataError, match="move=False"):
        old.sample(10, seed=0, move=True)
    assert old.sample(50, seed=0).equals(synth.sample(50, seed=0, move=False))
    code, out = run(
        ["sample", tmp_path / "old", "-n", "5", "-o", tmp_path / "s.csv", "--move"],
        monkeypatch, capsys,
    )  # fmt: skip
    assert code != 0 and "--no-move" in out and not (tmp_path / "s.csv").exists()


def test_the_command_line_matches_by_default(fitted, tmp_path, monkeypatch, capsys):
    synth, _ = fitted
    synth.save(tmp_path / "model")
    for flag, name in (([], "m.csv"), (["--no-move"], "p.csv")):
        args = ["sample", tmp_path / "model", "-n", "40", "--seed", "2", "-o", tmp_path / name]
        code, out = run(args + flag, monkeypatch, capsys)
        assert code == 0, out
    matched = (tmp_path / "m.csv").read_text()
    assert matched != (tmp_path / "p.csv").read_text()
    assert matched == synth.sample(40, seed=2).to_csv(index=False)


def test_settings_of_the_other_kind_are_refused(fitted):
    synth, _ = fitted
    with pytest.raises(DataError, match="ReweightSettings"):
        synth.sample(10, seed=0, move=MoveSettings())
    with pytest.raises(DataError, match="MoveSettings"):
        sample_mover(object(), ReweightSettings(), True)


@pytest.mark.parametrize("tamper", ["shape", "column", "row_totals", "row_totals_sum"])
def test_a_tampered_release_is_refused_on_load(fitted, tmp_path, tamper):
    synth, _ = fitted
    folder = tmp_path / "model"
    synth.save(folder)
    if tamper == "shape":
        tensors = load_file(folder / "release.safetensors")
        tensors["marginal_0000"] = tensors["marginal_0000"][:-1]
        save_file(tensors, folder / "release.safetensors", metadata=_metadata(folder))
    else:
        info = json.loads((folder / "model.json").read_text())
        marginals = info["release"]["marginals"]
        if tamper == "column":
            marginals[0]["columns"] = ["no_such_column"]
        else:  # class totals (folders fitted with class_totals) negative, or off the total
            led = next(m for m in marginals if len(m["columns"]) == 2)
            rows = [led["total"] / led["shape"][0]] * led["shape"][0]
            rows[0] = -5.0 if tamper == "row_totals" else 1e6
            led["row_totals"] = rows
        (folder / "model.json").write_text(json.dumps(info))
    with pytest.raises(ModelFileError, match="release|model.json"):
        dpforge.load(folder)


def _metadata(folder) -> dict[str, str]:
    from safetensors import safe_open

    with safe_open(folder / "release.safetensors", "np") as f:
        return f.metadata()


def test_picked_cells_come_back_as_one_hot_features(fitted):
    synth, _ = fitted
    encoder = synth.encoder_
    rng = np.random.default_rng(8)
    probs = rng.dirichlet(np.ones(encoder.output_dim), 4000)  # any non-negative outputs
    cells = encoder.picked_cells(probs, np.random.default_rng(9))
    dense = probs[:, encoder.dense_positions()]
    features = encoder.with_cells(cells, dense)
    blocks = [s for s in encoder.spans if s.activation == "softmax"]
    for j, span in enumerate(blocks):
        block = features[:, span.start : span.stop]
        assert np.array_equal(block.sum(axis=1), np.ones(4000))
        assert np.array_equal(block.argmax(axis=1), cells[:, j])
        share = np.bincount(cells[:, j], minlength=span.dim) / 4000  # drawn as decoding draws
        expected = (
            probs[:, span.start : span.stop]
            / probs[:, span.start : span.stop].sum(1, keepdims=True)
        ).mean(0)
        assert np.abs(share - expected).max() < 0.03
    assert np.array_equal(features[:, encoder.dense_positions()], dense)
