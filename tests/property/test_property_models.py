"""Model folders edited by hand or damaged: load and sample correctly, or one clean error."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from hypothesis import given
from hypothesis import strategies as st
from property_support import assert_clean_error, assert_cli_clean, run_cli
from safetensors.torch import load_file, save_file
from strategies import mutated

import dpforge
from dpforge.errors import DpforgeError, ModelFileError

MANIFEST, WEIGHTS = "model.json", "generator.safetensors"


def _edits(manifest: dict) -> dict:
    """Hand edits a steward might make, by name (each returns the edited copy)."""

    def edit(change):
        def apply():
            copy = json.loads(json.dumps(manifest))
            change(copy)
            return copy

        return apply

    columns = lambda m: m["schema"]["columns"]  # noqa: E731
    return {
        "prior negative": edit(lambda m: m.__setitem__("label_prior", [-0.2, 1.2])),
        "prior short": edit(lambda m: m.__setitem__("label_prior", [1.0])),
        "prior not summing": edit(lambda m: m.__setitem__("label_prior", [0.5, 0.6])),
        "prior text": edit(lambda m: m.__setitem__("label_prior", ["0.5", "0.5"])),
        "prior missing": edit(lambda m: m.__setitem__("label_prior", None)),
        "column renamed": edit(lambda m: columns(m)[0].__setitem__("name", "radius_mm")),
        "dtype changed": edit(lambda m: columns(m)[0].__setitem__("type", "integer")),
        "to categorical": edit(
            lambda m: columns(m).__setitem__(
                0, {"name": "radius", "type": "categorical", "categories": ["s", "m", "l"]}
            )
        ),
        "classes swapped": edit(lambda m: columns(m)[3]["categories"].reverse()),
        "bounds widened": edit(lambda m: columns(m)[1].__setitem__("upper", 500.0)),
        "latent size": edit(lambda m: m["config"].__setitem__("latent_dim", 5)),
        "hidden size": edit(lambda m: m["config"].__setitem__("generator_hidden", [9])),
        "method": edit(lambda m: m.__setitem__("method", "gswgan")),
        "a list": lambda: [json.loads(json.dumps(manifest))],
        "epsilon lowered": edit(lambda m: m["privacy"].__setitem__("target_epsilon", 0.1)),
        "ledger emptied": edit(lambda m: m["privacy"]["ledger"].__setitem__("entries", [])),
        "edges reversed": edit(
            lambda m: m.__setitem__("encoding", {"n_bins": 8, "edges": {"radius": [40.0, 0.0]}})
        ),
    }


def _check_loads_or_refuses(folder: Path, unchanged: bool, strict: bool) -> None:
    """The folder samples valid records through the API and the CLI, or both refuse cleanly.

    With the digest (``strict``) only an unchanged model.json may load.
    """
    try:
        synth = dpforge.load(folder)
        rows = synth.sample(7, seed=0)
    except DpforgeError as exc:
        assert isinstance(exc, ModelFileError | DpforgeError)
        assert_clean_error(exc)
        loaded = False
    except Exception as exc:  # noqa: BLE001 - a traceback for the user
        assert_clean_error(exc)
    else:
        loaded = True
        _assert_valid_records(rows, synth.schema_)
        assert unchanged or not strict, "an edited model.json loaded despite the digest"
    out = folder.parent / "samples.csv"
    code, output = run_cli(["sample", folder, "-n", 5, "-o", out, "--seed", 1])
    assert_cli_clean(code, output)
    assert (code == 0) == loaded, output
    if loaded:
        assert len(pd.read_csv(out)) == 5


def _assert_valid_records(rows: pd.DataFrame, schema) -> None:
    assert list(rows.columns) == schema.names and len(rows) == 7
    for column in schema.columns:
        values = rows[column.name]
        if column.is_numeric:
            array = values.to_numpy(np.float64)
            assert np.isfinite(array).all()
            assert (array >= column.lower).all() and (array <= column.upper).all()
        else:
            assert set(values) <= set(column.categories)


@given(st.data(), st.booleans())
def test_mutated_model_json_loads_correctly_or_is_refused(model_folders, data, strict):
    source = model_folders[strict]
    manifest = json.loads((source / MANIFEST).read_text())
    edits = _edits(manifest)
    how = data.draw(st.sampled_from(["random", *edits]))
    edited = data.draw(mutated(st.just(manifest))) if how == "random" else edits[how]()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        shutil.copytree(source, folder)
        (folder / MANIFEST).write_text(json.dumps(edited, indent=1))
        _check_loads_or_refuses(folder, unchanged=edited == manifest, strict=strict)


def _tensors(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / WEIGHTS))


FILE_DAMAGE = {
    "no model.json": lambda f: (f / MANIFEST).unlink(),
    "no weights": lambda f: (f / WEIGHTS).unlink(),
    "empty model.json": lambda f: (f / MANIFEST).write_text(""),
    "model.json not UTF-8": lambda f: (f / MANIFEST).write_bytes(b"\xff\xfe{}"),
    "model.json truncated": lambda f: (f / MANIFEST).write_text((f / MANIFEST).read_text()[:99]),
    "weights truncated": lambda f: (f / WEIGHTS).write_bytes((f / WEIGHTS).read_bytes()[:200]),
    "weights garbage": lambda f: (f / WEIGHTS).write_bytes(b"\x00" * 64),
    "weights a folder": lambda f: ((f / WEIGHTS).unlink(), (f / WEIGHTS).mkdir()),
    "a NaN weight": lambda f: save_file(
        {k: v.fill_(float("nan")) for k, v in _tensors(f).items()}, str(f / WEIGHTS)
    ),
    "half precision": lambda f: save_file(
        {k: v.half() for k, v in _tensors(f).items()}, str(f / WEIGHTS)
    ),
    "a tensor cut": lambda f: save_file(
        {k: v[..., :1].contiguous() for k, v in _tensors(f).items()}, str(f / WEIGHTS)
    ),
    "an extra tensor": lambda f: save_file(
        {**_tensors(f), "extra": torch.zeros(2)}, str(f / WEIGHTS)
    ),
    "a tensor missing": lambda f: save_file(dict(list(_tensors(f).items())[1:]), str(f / WEIGHTS)),
}


@given(st.sampled_from(sorted(FILE_DAMAGE)), st.booleans())
def test_damaged_model_files_are_refused_on_one_line(model_folders, damage, strict):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        shutil.copytree(model_folders[strict], folder)
        FILE_DAMAGE[damage](folder)
        _check_loads_or_refuses(folder, unchanged=False, strict=True)


def test_edits_name_the_key_and_the_file(model_folders, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(model_folders[False], folder)
    manifest = json.loads((folder / MANIFEST).read_text())
    cases = {
        "prior negative": "$.label_prior[0] is a number (-0.2); allowed: a probability",
        "prior short": "$.label_prior has 1 item(s)",
        "prior not summing": "$.label_prior sums to 1.1; allowed: probabilities summing to 1",
        "a list": "$ is a list; a model.json is a JSON object",
        "latent size": "tensor 'body.0.weight' has shape [8, 6] but model.json describes [8, 7]",
        "to categorical": "tensor",
        "edges reversed": '$.encoding.edges["radius"] must increase strictly',
    }
    for name, expected in cases.items():
        (folder / MANIFEST).write_text(json.dumps(_edits(manifest)[name]()))
        try:
            dpforge.load(folder)
        except ModelFileError as exc:
            message = assert_clean_error(exc)
            assert expected in message, (name, message)
            assert str(folder) in message or "generator.safetensors" in message
        else:
            raise AssertionError(f"{name}: accepted")
    shutil.copytree(model_folders[True], tmp_path / "strict")
    (tmp_path / "strict" / MANIFEST).write_text(json.dumps(_edits(manifest)["column renamed"]()))
    try:
        dpforge.load(tmp_path / "strict")
    except ModelFileError as exc:
        assert "was changed after the model was saved" in assert_clean_error(exc)
    else:
        raise AssertionError("a renamed column loaded despite the digest")


def test_a_model_json_that_is_a_list_in_a_real_process(model_folders, tmp_path):
    """As a user runs it: a separate process, its stderr and exit status (no traceback)."""
    import subprocess
    import sys

    folder = tmp_path / "model"
    shutil.copytree(model_folders[True], folder)
    (folder / MANIFEST).write_text(json.dumps([json.loads((folder / MANIFEST).read_text())]))
    result = subprocess.run(
        [sys.executable, "-c", "from dpforge.cli import main; main()", "sample", str(folder),
         "-n", "5", "-o", str(tmp_path / "out.csv")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"error: {folder / MANIFEST}: $ is a list; a model.json is a JSON object"
    )
    assert not (tmp_path / "out.csv").exists()
