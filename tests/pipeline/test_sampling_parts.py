"""Sampling at scale (issue 23.1): ``dpforge sample -n N --format parquet --partitions P`` writes
a folder of part files in parallel worker processes, each streaming its partition in chunks.

The figures at scale (10^7 and more rows, time and memory per worker) are in
bench/results/spark_scale/sampling_parts.md.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cli_support import run
from dpforge.data.parts import (
    MANIFEST,
    PartsRequest,
    partition_rows,
    partition_seeds,
    write_parts,
)
from dpforge.errors import DataError
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.synthesizer import Synthesizer

SMALL = DPCGANConfig(batch_size=64, generator_hidden=(16,), discriminator_hidden=(16,))


@pytest.fixture(scope="module")
def model(cancer, tmp_path_factory):
    frame, schema = cancer
    synth = Synthesizer(
        schema, epsilon=8.0, noise_multiplier=1.5, anchor=None, method_options=SMALL, seed=0,
        progress=False,
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("parts") / "model"
    synth.fit(frame).save(folder)
    return folder, schema


def _sample(model_folder, out, monkeypatch, capsys, *extra):
    args = ["sample", model_folder, "-n", "5000", "--out", out, "--seed", "7", *extra]
    return run(args, monkeypatch, capsys)


def test_parquet_parts_hold_every_row_with_the_schema_types(model, tmp_path, monkeypatch, capsys):
    folder, schema = model
    out = tmp_path / "parts"
    code, text = _sample(folder, out, monkeypatch, capsys, "--format", "parquet",
                         "--partitions", "4", "--workers", "2")  # fmt: skip
    assert code == 0, text
    manifest = json.loads((out / MANIFEST).read_text())
    assert [p["rows"] for p in manifest["parts"]] == [1250] * 4
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [MANIFEST] + [f"part-{i:05d}.parquet" for i in range(4)]
    )
    rows = pd.read_parquet(out)  # the folder reads as one data set
    assert len(rows) == 5000 and list(rows.columns) == list(schema.names)
    assert rows["diagnosis"].isin(["benign", "malignant"]).all()
    assert all(np.issubdtype(rows[c].dtype, np.floating) for c in schema.names[:-1])
    first = pd.read_parquet(out / "part-00000.parquet")
    assert not first.equals(pd.read_parquet(out / "part-00001.parquet"))  # own seeds
    # The same parts, written by this process alone: they do not depend on the workers.
    alone = write_parts(PartsRequest(folder, 5000, 4, "parquet", 7), tmp_path / "alone")
    for i in range(4):
        name = f"part-{i:05d}.parquet"
        pd.testing.assert_frame_equal(pd.read_parquet(out / name), pd.read_parquet(alone / name))


def test_csv_parts_and_overwrite_only_of_a_parts_folder(model, tmp_path, monkeypatch, capsys):
    folder, schema = model
    out = tmp_path / "csv-parts"
    args = ("--partitions", "2", "--workers", "1")
    assert _sample(folder, out, monkeypatch, capsys, *args)[0] == 0
    rows = pd.concat(pd.read_csv(out / f"part-{i:05d}.csv") for i in range(2))
    assert len(rows) == 5000 and list(rows.columns) == list(schema.names)
    code, text = _sample(folder, out, monkeypatch, capsys, *args)
    assert code == 2 and "already exists" in text
    assert _sample(folder, out, monkeypatch, capsys, *args, "--overwrite")[0] == 0
    (out / "notes.txt").write_text("the steward's own file")
    code, text = _sample(folder, out, monkeypatch, capsys, *args, "--overwrite")
    assert code == 2 and "not a synthetic parts folder dpforge wrote" in " ".join(text.split())
    assert (out / "notes.txt").read_text() == "the steward's own file"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--format", "xml"], "--format 'xml': choose one of"),
        (["--partitions", "0"], "--partitions 0: give a whole number"),
        (["--partitions", "6000"], "more than the 5000 rows"),
        (["--partitions", "2", "--workers", "0"], "--workers 0"),
    ],
)
def test_bad_part_requests_are_refused_before_any_work(
    model, tmp_path, monkeypatch, capsys, extra, message
):
    folder, _ = model
    code, text = _sample(folder, tmp_path / "p", monkeypatch, capsys, *extra)
    assert code == 2 and message in " ".join(text.split())
    assert not (tmp_path / "p").exists()


def test_partition_rows_and_seeds():
    assert partition_rows(10, 3) == [4, 3, 3] and sum(partition_rows(10**9, 7)) == 10**9
    seeds = partition_seeds(5, 100)
    assert seeds == partition_seeds(5, 100) and len(set(seeds)) == 100
    assert all(0 <= s < 2**63 for s in seeds)
    assert partition_seeds(None, 2) != partition_seeds(None, 2)  # fresh entropy when unseeded
    with pytest.raises(DataError, match="more than the 3 rows"):
        PartsRequest(model=None, rows=3, partitions=4).check()
