"""End to end on real records: fit, sample, privacy spent, save, load, resume."""

from __future__ import annotations

import math
import re

import dp_accounting
import numpy as np
import pytest

import dpforge
from dpforge.errors import DataError, OutputExistsError, PrivacyError
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.schema.table import Column, Schema

FAST = DPCGANConfig(
    batch_size=64, latent_dim=16, generator_hidden=(32,), discriminator_hidden=(32,)
)


def _fit(frame, schema, **kwargs):
    options = dict(
        epsilon=8.0,
        delta=1e-5,
        noise_multiplier=1.5,
        method_options=FAST,
        seed=0,
        progress=False,
        anchor=None,
    )
    options.update(kwargs)
    return dpforge.Synthesizer(schema, **options).fit(frame)


@pytest.fixture(scope="module")
def fitted(cancer):
    frame, schema = cancer
    return _fit(frame, schema)


def test_fit_returns_self_and_spends_no_more_than_the_target(fitted):
    report = fitted.privacy_spent()
    assert report.epsilon <= 8.0
    assert report.epsilon > 7.5  # the planner uses the budget
    assert report.accountant == "pld"  # the record count is a discrete Gaussian (issue 43.4)
    steps, q = fitted.plan_.steps, fitted.plan_.sample_rate
    # q = B / N with N the record count released under DP (569 records, noise std about 7)
    assert 64 / q == round(64 / q) and abs(64 / q - 569) < 50
    assert fitted.ledger_.entries[-1].event == dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(1.5)), steps
    )


def test_samples_have_the_schema_columns_and_types(fitted, cancer):
    _, schema = cancer
    rows = fitted.sample(300, seed=1)
    assert list(rows.columns) == schema.names
    for column in schema.feature_columns:
        assert rows[column.name].between(column.lower, column.upper).all()
    assert set(rows["diagnosis"]) <= {"malignant", "benign"}
    only = fitted.sample(50, conditions={"diagnosis": "benign"}, seed=1)
    assert (only["diagnosis"] == "benign").all()
    with pytest.raises(DataError, match="not a class"):
        fitted.sample(5, conditions={"diagnosis": "unknown"})


def test_save_load_gives_the_same_generator(fitted, tmp_path):
    path = fitted.save(tmp_path / "model")
    assert sorted(p.name for p in path.iterdir()) == ["generator.safetensors", "model.json"]
    loaded = dpforge.load(path)
    assert loaded.sample(20, seed=5).equals(fitted.sample(20, seed=5))
    assert loaded.privacy_spent().epsilon == pytest.approx(fitted.privacy_spent().epsilon)
    with pytest.raises(OutputExistsError):
        fitted.save(path)


def test_saved_folder_holds_no_training_row_and_no_discriminator(fitted, cancer, tmp_path):
    from safetensors import safe_open

    frame, _ = cancer
    path = fitted.save(tmp_path / "model")
    blob = b"".join(p.read_bytes() for p in path.iterdir())
    with safe_open(str(path / "generator.safetensors"), "pt") as f:
        assert all(k.startswith("body.") for k in f.keys())  # noqa: SIM118 (not a dict)
    numbers = set(re.findall(r"-?\d+\.\d+(?:e-?\d+)?", (path / "model.json").read_text()))
    values = frame.iloc[:, :-1].to_numpy()
    for row in values:  # no record as binary float64/float32 rows, nor a precise value as text
        assert row.astype(np.float64).tobytes() not in blob
        assert row.astype(np.float32).tobytes() not in blob
        precise = {repr(float(v)) for v in row if len(repr(float(v))) >= 6 and v % 1}
        assert not precise & numbers


def test_non_private_baseline_says_epsilon_is_infinite(cancer):
    frame, schema = cancer
    synth = _fit(frame, schema, epsilon=math.inf, noise_multiplier=None, epochs=2)
    assert synth.privacy_spent().epsilon == math.inf
    assert isinstance(synth.ledger_.entries[-1].event, dp_accounting.NonPrivateDpEvent)


def test_dp_metadata_is_charged_to_the_same_budget(cancer):
    frame, schema = cancer
    blank = Schema(
        tuple(Column(c.name, c.type) if c.name != "diagnosis" else c for c in schema.columns),
        label="diagnosis",
        label_prior="dp",
    )
    synth = _fit(frame, blank, epsilon=8.0)
    names = [e.name for e in synth.ledger_.entries]
    assert sum(n.startswith("metadata: bounds") for n in names) == 6
    assert "metadata: label prior of 'diagnosis'" in names
    assert synth.privacy_spent().epsilon <= 8.0
    assert synth.plan_.steps < _fit(frame, schema).plan_.steps  # metadata cost training steps
    assert synth.label_prior_.sum() == pytest.approx(1.0)
    assert all(c.is_complete for c in synth.schema_.columns)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"epsilon": 0.0}, "epsilon must be > 0"),
        ({"epsilon": -1.0}, "epsilon must be > 0"),
        ({"delta": 0.01}, "not below 1/N"),
        ({"epsilon": 0.05, "noise_multiplier": 2.0}, "allows only"),
        ({"epsilon": math.inf, "noise_multiplier": None}, "needs epochs"),
    ],
)
def test_impossible_privacy_requests_are_refused(cancer, kwargs, pattern):
    frame, schema = cancer
    with pytest.raises(PrivacyError, match=pattern):
        _fit(frame, schema, **kwargs)


def test_interrupted_fit_resumes_without_paying_twice(cancer, tmp_path, monkeypatch):
    """Resuming replays exactly the uninterrupted run: same ledger, same generator."""
    import dpforge.pipeline.refine as synth_module

    frame, schema = cancer
    options = dict(epsilon=4.0, noise_multiplier=2.0, checkpoint_every=50)
    whole = _fit(frame, schema, **options)

    class Interrupt(Exception):
        pass

    original = synth_module.save_checkpoint
    saved_steps = []

    def save_then_stop(folder, method, state, generator, run_info):
        original(folder, method, state, generator, run_info)
        saved_steps.append(state.step)
        if state.step == 100:
            raise Interrupt

    monkeypatch.setattr(synth_module, "save_checkpoint", save_then_stop)
    with pytest.raises(Interrupt):
        _fit(frame, schema, checkpoint_dir=tmp_path / "ckpt", **options)
    assert saved_steps == [0, 50, 100]
    monkeypatch.setattr(synth_module, "save_checkpoint", original)
    resumed = _fit(frame, schema, checkpoint_dir=tmp_path / "ckpt", **options)
    assert resumed.ledger_.to_dict() == whole.ledger_.to_dict()
    assert resumed.sample(30, seed=2).equals(whole.sample(30, seed=2))
    with pytest.raises(PrivacyError, match="records"):
        _fit(frame.iloc[:500], schema, checkpoint_dir=tmp_path / "ckpt", **options)


def test_non_private_baseline_reads_metadata_without_noise_and_says_so(cancer):
    frame, schema = cancer
    frame = frame.assign(site=np.where(np.arange(len(frame)) % 3 == 0, "north", "south"))
    blank = Schema(
        tuple(Column(c.name, c.type) if c.name != "diagnosis" else c for c in schema.columns)
        + (Column("site", "categorical"),),
        label="diagnosis",
        label_prior="dp",
    )
    synth = _fit(frame, blank, epsilon=math.inf, noise_multiplier=None, epochs=1)
    assert synth.privacy_spent().epsilon == math.inf
    metadata = [e for e in synth.ledger_.entries if e.name.startswith("metadata")]
    assert metadata and all(isinstance(e.event, dp_accounting.NonPrivateDpEvent) for e in metadata)
    assert synth.schema_.column("site").categories == ("north", "south")


def test_outputs_get_the_users_usual_file_mode(tmp_path):
    import os

    from dpforge.storage import atomic_write

    path = tmp_path / "out.txt"
    old = os.umask(0o022)
    try:
        atomic_write(path, lambda p: p.write_text("x"), overwrite=False)
    finally:
        os.umask(old)
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)


def test_fit_refuses_an_unreviewed_draft_schema(cancer):
    """Issue 13.2: a draft's values were read from the data; the Python API refuses it too."""
    from dpforge.data.tables import draft_schema
    from dpforge.errors import SchemaError

    frame, _ = cancer
    draft = draft_schema(frame, label="diagnosis", with_values=True)
    assert draft.notes
    with pytest.raises(SchemaError, match="draft"):
        _fit(frame, draft)


def test_clipping_is_announced_the_same_way_whatever_the_records(cancer):
    """Issue 13.4: the count of clipped values (3 for 'mean area' in the demo) was printed."""
    import warnings

    frame, schema = cancer
    narrow = Schema(
        tuple(
            Column(c.name, c.type, lower=c.lower, upper=c.lower + 1.0)
            if c.name == "mean_area"
            else c
            for c in schema.columns
        ),
        label="diagnosis",
    )
    messages = []
    for public in (schema, narrow):  # no value clipped; most values of 'mean_area' clipped
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _fit(frame, public, out_of_bounds="clip", epsilon=2.0, noise_multiplier=None)
        messages.append(sorted({str(w.message) for w in caught}))
    assert messages[0] == messages[1]
    assert any("clipped" in m for m in messages[0])
    assert not any("mean_area" in m or re.search(r"\d", m) for m in messages[0])
