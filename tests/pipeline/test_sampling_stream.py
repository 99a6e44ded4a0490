"""Sampling streams in chunks (issue 14, Scale): bounded memory however many rows are asked.

``Synthesizer.sample_chunks`` yields consecutive chunks from one random stream; the command
line writes them to one CSV as they come. Peak memory for 10^6 and 10^7 rows is measured by
bench/memory.py (bench/results/memory/sample_and_fit.md).
"""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from dpforge.cli import main
from dpforge.data.kind_files import write_csv_chunks
from dpforge.errors import DataError, PrivacyError
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.synthesizer import Synthesizer

SMALL = DPCGANConfig(batch_size=64, generator_hidden=(16,), discriminator_hidden=(16,))


@pytest.fixture(scope="module")
def fitted(cancer):
    frame, schema = cancer
    synth = Synthesizer(
        schema, epsilon=8.0, noise_multiplier=1.5, anchor=None, method_options=SMALL, seed=0,
        progress=False,
    )  # fmt: skip
    return synth.fit(frame)


def test_chunks_add_up_to_n_rows_from_one_reproducible_stream(fitted):
    chunks = list(fitted.sample_chunks(2500, seed=3, chunk_rows=1000))
    assert [len(c) for c in chunks] == [1000, 1000, 500]
    again = pd.concat(list(fitted.sample_chunks(2500, seed=3, chunk_rows=1000)))
    pd.testing.assert_frame_equal(pd.concat(chunks), again)
    assert not pd.concat(chunks).duplicated().all()  # a stream, not one chunk repeated
    assert list(chunks[0].columns) == list(fitted.schema_.names)


def test_chunks_written_as_one_csv_with_one_header(fitted, tmp_path):
    path = tmp_path / "rows.csv"
    write_csv_chunks(fitted.sample_chunks(2500, seed=0, chunk_rows=700), path)
    rows = pd.read_csv(path)
    assert len(rows) == 2500 and list(rows.columns) == list(fitted.schema_.names)
    assert set(rows["diagnosis"]) <= {"benign", "malignant"}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n": 0}, DataError, "whole number >= 1"),
        ({"n": 10, "chunk_rows": 0}, DataError, "chunk_rows must be"),
        ({"n": 10, "seed": -1}, PrivacyError, "between 0 and 2"),
    ],
)
def test_bad_sample_requests_are_refused(fitted, kwargs, error, message):
    with pytest.raises(error, match=message):
        next(iter(fitted.sample_chunks(**kwargs)))


def test_the_sample_command_writes_a_table_and_refuses_bad_requests(
    fitted, tmp_path, monkeypatch, capsys
):
    model = tmp_path / "model"
    fitted.save(model)
    out = tmp_path / "rows.csv"

    def run(*args):
        monkeypatch.setattr(sys, "argv", ["dpforge", "sample", str(model), *map(str, args)])
        try:
            main()
        except SystemExit as exc:
            return exc.code or 0, capsys.readouterr().err
        return 0, capsys.readouterr().err

    assert run("-n", 1000, "-o", out, "--seed", 1)[0] == 0
    rows = pd.read_csv(out)
    assert len(rows) == 1000 and list(rows.columns) == list(fitted.schema_.names)
    for args, message in [
        (("-n", 0, "-o", tmp_path / "a.csv"), "at least 1"),
        (("-n", 5, "-o", tmp_path / "a.csv", "--seed", -1), "between 0 and 2"),
        (("-n", 5, "-o", model), "never replaces its inputs"),
        (("-n", 5, "-o", tmp_path), "is or holds the input"),
        (("-n", 5, "-o", out), "already exists"),
    ]:
        code, err = run(*args)
        assert code == 2 and message in err and "Traceback" not in err, err
