"""Outputs never destroy what dpforge did not write (issue 14, "Files lost").

The command line as a user calls it: an existing folder is replaced only when it is a model
folder dpforge wrote; the current folder, its parents and the inputs are never outputs; every
output path is checked before any work; a folder replacement killed at any moment leaves the
old or the new model, and the next run cleans up the leftovers.
"""

from __future__ import annotations

import json
import os

import pytest

import dpforge.storage as storage
from cli_support import fast, run
from dpforge.cli.io import check_sample_outputs
from dpforge.errors import OutputExistsError
from dpforge.model_io import MANIFEST, MODEL_FOLDER, WEIGHTS

TARGET = {"data": {"target": "diagnosis"}}
FAST = ["--epsilon", "8", *fast(TARGET)]


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


def _refused(code: int, out: str, *words: str) -> None:
    assert code == 2, out
    assert "Traceback" not in out
    assert len(out.strip().splitlines()) == 1, out
    for word in words:
        assert word in out, out


@pytest.mark.parametrize("out", [".", "..", "DATA_DIR", "data.csv", "user"])
def test_fit_never_replaces_the_current_folder_an_input_or_a_foreign_folder(
    files, tmp_path, monkeypatch, capsys, out
):
    data, schema_path = files
    monkeypatch.chdir(tmp_path)
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "notes.txt").write_text("mine")
    before = _listing(tmp_path)
    target = {"DATA_DIR": tmp_path}.get(out, out)
    code, text = run(
        ["fit", data, "--schema", schema_path, "--out", target, "--overwrite", *FAST],
        monkeypatch,
        capsys,
    )
    _refused(code, text, "dpforge")
    assert _listing(tmp_path) == before
    assert (tmp_path / "user" / "notes.txt").read_text() == "mine"
    assert data.stat().st_size > 0


def test_overwrite_replaces_a_model_folder_and_leaves_nothing_beside_it(
    files, tmp_path, monkeypatch, capsys
):
    data, schema_path = files
    model = tmp_path / "model"
    args = ["fit", data, "--schema", schema_path, "--out", model, *FAST]
    assert run(args, monkeypatch, capsys)[0] == 0
    first = (model / WEIGHTS).read_bytes()
    code, out = run([*args[:-2], "--seed", "1", "--overwrite"], monkeypatch, capsys)
    assert code == 0, out
    assert _listing(model) == sorted([MANIFEST, WEIGHTS])
    assert (model / WEIGHTS).read_bytes() != first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".model.")]
    # a user's file put into the model folder makes it no longer dpforge's to replace
    (model / "my-notes.txt").write_text("mine")
    code, out = run([*args, "--overwrite"], monkeypatch, capsys)
    _refused(code, out, "not a model folder dpforge wrote")
    assert (model / "my-notes.txt").read_text() == "mine"


def test_every_output_is_checked_before_any_work(files, tmp_path, monkeypatch, capsys):
    data, schema_path = files
    model = tmp_path / "model"
    (tmp_path / "model.csv").write_text("an earlier sample")
    code, out = run(
        [
            "fit",
            data,
            "--schema",
            schema_path,
            "--out",
            model,
            "--epsilon",
            "8",
            *fast({**TARGET, "output": {"samples": 10}}),
        ],
        monkeypatch,
        capsys,
    )
    _refused(code, out, "model.csv already exists")
    assert not model.exists()  # refused before training, not after writing the model
    # samples written onto the data file are refused even with --overwrite
    code, out = run(
        ["fit", data, "--schema", schema_path, "--out", model, "--overwrite", "--epsilon", "8",
         *fast({**TARGET, "output": {"samples": 10, "samples_out": str(data)}})],
        monkeypatch, capsys,
    )  # fmt: skip
    _refused(code, out, "never replaces its inputs")
    assert not model.exists()


def test_a_series_sample_checks_the_plot_before_writing_the_csv(tmp_path):
    out = tmp_path / "series.csv"
    (tmp_path / "series.png").write_bytes(b"an earlier plot")
    with pytest.raises(OutputExistsError, match="series.png already exists"):
        check_sample_outputs("timeseries", out, overwrite=False)
    assert not out.exists()
    check_sample_outputs("timeseries", out, overwrite=True)  # both replaceable files


def _model(folder, tag: str):
    folder.mkdir()
    (folder / MANIFEST).write_text(json.dumps({"format": "dpforge-model", "tag": tag}))
    (folder / WEIGHTS).write_bytes(tag.encode())


def _tag(folder) -> str:
    return json.loads((folder / MANIFEST).read_text())["tag"]


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs, no cleanup."""


@pytest.mark.parametrize("kill_at", [1, 2, 3])
def test_a_replacement_killed_at_any_rename_leaves_the_old_or_the_new_model(
    tmp_path, monkeypatch, kill_at
):
    target = tmp_path / "model"
    _model(target, "old")
    calls = []
    real_rename = os.rename

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) == kill_at:
            raise Killed
        real_rename(src, dst)

    def build(staging):
        (staging / MANIFEST).write_text(json.dumps({"format": "dpforge-model", "tag": "new"}))
        (staging / WEIGHTS).write_bytes(b"new")

    monkeypatch.setattr(storage.os, "rename", rename)
    with pytest.raises(Killed):
        storage.replace_folder(target, build, MODEL_FOLDER, overwrite=True)
    monkeypatch.setattr(storage.os, "rename", real_rename)
    # the next run (or 'dpforge sample') recovers: a complete model is at the target
    storage.recover_folder(target, MODEL_FOLDER)
    assert _tag(target) in {"old", "new"}
    assert _tag(target) == ("old" if kill_at <= 2 else "new")
    assert _listing(tmp_path) == ["model"]


def test_leftovers_of_killed_runs_are_cleaned_up_and_foreign_ones_kept(tmp_path):
    target = tmp_path / "model"
    _model(target, "current")
    partial = tmp_path / ".model.dpforge-tmp-0123456789ab"  # killed while writing
    partial.mkdir()
    (partial / WEIGHTS).write_bytes(b"half")
    (tmp_path / ".model.k3j_9xqz").mkdir()  # empty staging folder of an older dpforge
    foreign = tmp_path / ".model.dpforge-old-0123456789ab"
    foreign.mkdir()
    (foreign / "someone-elses.txt").write_text("not ours")
    storage.check_output_folder(target, MODEL_FOLDER, overwrite=True)
    assert _listing(tmp_path) == [".model.dpforge-old-0123456789ab", "model"]
    assert _tag(target) == "current"


@pytest.mark.parametrize(("out", "checkpoint"), [("m", "m/ck"), ("ck/m", "ck"), ("m", "m")])
def test_the_checkpoint_folder_and_the_model_folder_are_kept_apart(
    files, tmp_path, monkeypatch, capsys, out, checkpoint
):
    data, schema_path = files
    monkeypatch.chdir(tmp_path)
    code, text = run(
        ["fit", data, "--schema", schema_path, "--out", out, "--checkpoint-dir", checkpoint,
         *FAST],
        monkeypatch, capsys,
    )  # fmt: skip
    _refused(code, text, "private discriminator", "keep them apart")
    assert _listing(tmp_path) == ["data.csv", "schema.json"]


def test_a_killed_write_leaves_a_temporary_file_that_the_next_check_removes(tmp_path):
    out = tmp_path / "rows.csv"
    leftover = tmp_path / ".rows.csv.k2x9_a.tmp"  # what atomic_write had open at the kill
    leftover.write_text("x,y\n1,2\n")
    other = tmp_path / ".notes.txt.abc.tmp"  # another file's temporary: not this output's
    other.write_text("keep")
    storage.check_output_file(out, overwrite=False)
    assert not leftover.exists() and other.exists() and not out.exists()
