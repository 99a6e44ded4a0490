"""``dpforge fit``'s small surface as a user meets it: at most 15 parameters, everything else in
one validated options file (TOML or JSON), refinement asked for by name, the commands in a
user's order, help that fits 80 columns, and warnings as one clean line."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer.main
from typer.testing import CliRunner

from cli_support import run
from dpforge.cli import COMMANDS, app
from dpforge.cli.fit_options import anchor_option, method_config
from dpforge.cli.options_doc import markdown
from dpforge.cli.options_file import SECTIONS, read_options, section_classes, section_keys
from dpforge.errors import DpforgeError
from dpforge.methods import DPCGANConfig, DPWGANConfig
from dpforge.options import REFINE_SHARE
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer

MAX_FIT_PARAMETERS = 15
DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "options-file.md"


def _fit_command():
    return typer.main.get_command(app).commands["fit"]


def _one_line(code: int, out: str) -> str:
    assert code == 2 and "Traceback" not in out, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), out
    return lines[0]


@pytest.fixture
def small(tmp_path):
    """A small table (300 rows: a number, a code, a label) and its schema, as files."""
    rng = np.random.default_rng(0)
    label = rng.choice(["no", "yes"], 300)
    frame = pd.DataFrame(
        {
            "age": np.round(rng.uniform(20, 80, 300) + (label == "yes") * 5, 1),
            "code": rng.choice(["a", "b", "c"], 300),
            "y": label,
        }
    )
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    schema = Schema(
        (
            Column("age", "continuous", lower=0.0, upper=100.0),
            Column("code", "categorical", categories=("a", "b", "c")),
            Column("y", "categorical", categories=("no", "yes")),
        ),
        label="y",
    )
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(schema.to_json())
    return data, schema_path, schema


def test_fit_takes_at_most_15_parameters():
    names = [p.name for p in _fit_command().params if p.name != "help"]
    assert len(names) <= MAX_FIT_PARAMETERS, names


def test_commands_are_listed_in_a_users_order():
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "120"})
    listed = re.findall(r"^│ (\w+)\s", result.output, flags=re.MULTILINE)
    assert [n for n in listed if n in COMMANDS] == list(COMMANDS)


def test_help_at_80_columns_shows_every_option_name_in_full():
    group = typer.main.get_command(app)
    for name in ("fit", "schema", "sample", "evaluate", "report", "audit", "demo"):
        result = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0, result.output
        assert max(len(line) for line in result.output.splitlines()) <= 80
        for param in group.commands[name].params:
            for flag in (o for o in param.opts if o.startswith("--")):
                assert flag in result.output, (name, flag)
        assert not re.search(r"--[\w-]*…", result.output), (name, result.output)


def test_help_says_what_runs():
    top = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "120"}).output
    demo = CliRunner().invoke(app, ["demo", "--help"], env={"COLUMNS": "120"}).output
    fit = CliRunner().invoke(app, ["fit", "--help"], env={"COLUMNS": "200"}).output
    assert "GAN" not in top and "marginal anchoring" in demo and "CGAN" not in demo
    clip = next(line for line in fit.splitlines() if "--clip-out-of-bounds" in line)
    assert "clipped" in clip


def test_options_file_round_trip_into_the_configs(tmp_path, small):
    _, _, schema = small
    toml = tmp_path / "run.toml"
    toml.write_text(
        "[anchor]\nshare = 0.6\nn_bins = 16\ngenerator_hidden = [32, 32]\n"
        "[refine]\nbatch_size = 32\nclip_decay = 0.9\nepochs = 3\n"
        "[generator]\nlatent_dim = 8\n[privacy]\nmetadata_share = 0.2\n"
        "[data]\nlabels = 'labels.idx'\n[output]\nprogress = false\n"
    )
    options = read_options(toml, "table", "dpwgan")
    anchor = anchor_option(options, schema, "dpwgan", public=False)
    assert anchor == AnchorConfig(share=0.6, n_bins=16, generator_hidden=(32, 32))
    assert method_config(options, "dpwgan") == DPWGANConfig(
        batch_size=32, clip_decay=0.9, latent_dim=8
    )
    assert options.refine_run.epochs == 3.0 and options.privacy.metadata_share == 0.2
    assert options.data.labels == tmp_path / "labels.idx"  # relative to the file
    assert options.output.progress is False
    as_json = tmp_path / "run.json"
    as_json.write_text(
        json.dumps(
            {
                "anchor": {"share": 0.6, "n_bins": 16, "generator_hidden": [32, 32]},
                "refine": {"batch_size": 32, "clip_decay": 0.9, "epochs": 3},
                "generator": {"latent_dim": 8},
                "privacy": {"metadata_share": 0.2},
                "data": {"labels": "labels.idx"},
                "output": {"progress": False},
            }
        )
    )
    from_json = read_options(as_json, "table", "dpwgan")
    assert replace(from_json, source="") == replace(options, source="")


def test_refine_without_a_share_gets_the_default_share(tmp_path, small):
    _, _, schema = small
    toml = tmp_path / "run.toml"
    toml.write_text("[anchor]\nn_bins = 16\n")
    anchor = anchor_option(read_options(toml, "table", "gswgan"), schema, "gswgan", False)
    assert anchor.share == REFINE_SHARE
    toml.write_text("[anchor]\nshare = 0\n")
    assert anchor_option(read_options(toml, "table", "dpcgan"), schema, "dpcgan", False) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[anchor]\nn_bin = 3\n",
            "[anchor] unknown key 'n_bin' (did you mean 'n_bins'?); valid keys: ",
        ),
        ("[anchr]\nshare = 1\n", "unknown section 'anchr' (did you mean 'anchor'?)"),
        ("[anchor]\nn_bins = 'many'\n", "[anchor] n_bins = 'many' must be a whole number"),
        ("[output]\nprogress = 1\n", "[output] progress = 1 must be true or false"),
        ("[anchor]\nn_bins = true\n", "[anchor] n_bins = True must be a whole number"),
        ("[anchor]\ngenerator_hidden = 32\n", "must be a list of whole numbers"),
        ("[anchor]\nshare = 0.5\n", "leaves 50% of the budget to a refiner"),
        ("[refine]\nbatch_size = 32\n", "sets [refine] batch_size, but no refiner runs"),
        ("epsilon = 1\n", "'epsilon' stands outside any section"),
        ("[anchor\n", "not valid TOML"),
    ],
)
def test_a_bad_options_file_gives_one_line_that_names_the_key(
    small, tmp_path, monkeypatch, capsys, text, expected
):
    data, schema_path, _ = small
    toml = tmp_path / "run.toml"
    toml.write_text(text)
    model = tmp_path / "model"
    args = ["fit", data, "--schema", schema_path, "--out", model, "--options", toml]
    line = _one_line(*run(args, monkeypatch, capsys))
    assert expected in line
    if "valid keys" in expected:
        assert "n_bins, " in line and "share" in line
    assert not model.exists()


def test_refine_contradicting_the_options_file_names_both(small, tmp_path, monkeypatch, capsys):
    data, schema_path, _ = small
    toml = tmp_path / "run.toml"
    toml.write_text("[anchor]\nshare = 1\n")
    args = ["fit", data, "--schema", schema_path, "--out", tmp_path / "m", "--options", toml]
    line = _one_line(*run([*args, "--refine", "dpwgan"], monkeypatch, capsys))
    assert "--refine dpwgan gets no budget" in line and "share = 1" in line
    line = _one_line(*run([*args, "--refine", "wgan"], monkeypatch, capsys))
    assert "--refine 'wgan': choose one of dpcgan, dpwgan, gswgan" in line


@pytest.mark.slow
def test_refine_dpwgan_with_its_options_runs(small, tmp_path, monkeypatch, capsys):
    data, schema_path, _ = small
    toml = tmp_path / "run.toml"
    toml.write_text(
        "[anchor]\nshare = 0.5\nsteps = 20\npairs_per_column = 0\n"
        "[generator]\ngenerator_hidden = [16]\n"
        "[refine]\nbatch_size = 32\nepochs = 11\nd_steps = 1\ndiscriminator_hidden = [16]\n"
        "clip_decay = 0.9\n[output]\nprogress = false\n"
    )
    model = tmp_path / "model"
    args = ["fit", data, "--schema", schema_path, "--out", model, "--epsilon", "3"]
    args += ["--refine", "dpwgan", "--options", toml, "--seed", "0"]
    code, out = run(args, monkeypatch, capsys)
    assert code == 0, out
    manifest = json.loads((model / "model.json").read_text())
    assert manifest["method"] == "dpwgan" and manifest["config"]["clip_decay"] == 0.9
    names = [e["name"] for e in manifest["privacy"]["ledger"]["entries"]]
    assert any(n.startswith("anchor:") for n in names)
    assert any("dpwgan" in n and "discriminator steps" in n for n in names)


def test_the_clipping_notice_is_one_line_on_stderr(small, tmp_path, monkeypatch, capsys):
    data, schema_path, _ = small
    pd.read_csv(data).drop(columns="code").to_csv(data, index=False)  # refused after the notice
    toml = tmp_path / "run.toml"
    toml.write_text("[privacy]\nrecord_budget = false\n")
    args = ["fit", data, "--schema", schema_path, "--out", tmp_path / "m", "--options", toml]
    code, out = run([*args, "--clip-out-of-bounds"], monkeypatch, capsys)
    assert code == 2 and "'code'" in out, out
    notes = [line for line in out.splitlines() if line.startswith("note:") and "clip" in line]
    assert len(notes) == 1 and "clip" in notes[0], out
    assert "UserWarning" not in out and "typer" not in out and ".py:" not in out


def test_python_names_the_refiner_as_the_command_line_does(small):
    _, _, schema = small
    synth = Synthesizer(schema, method="dpwgan", progress=False)
    synth.check_options()
    assert synth._resolved_anchor(None).share == REFINE_SHARE
    with pytest.raises(DpforgeError, match="leaves it no budget"):
        Synthesizer(schema, method="dpwgan", anchor=AnchorConfig(share=1.0)).check_options()
    with pytest.raises(DpforgeError, match="configure a refiner, but this run has none"):
        Synthesizer(schema, method_options=DPCGANConfig(batch_size=8)).check_options()


def test_docs_page_lists_every_key_of_the_options_file():
    text = DOCS_PAGE.read_text()
    for kind in ("table", "image"):
        for refiner in ("dpcgan", "dpwgan", "gswgan"):
            classes = section_classes(kind, refiner)
            for section in SECTIONS:
                for key in section_keys(section, classes[section]):
                    assert f"`{key}`" in text, (section, key)
    for section in SECTIONS:
        assert f"[{section}]" in text
    # regenerate: python -m dpforge.cli.options_doc > docs/options-file.md
    assert text == markdown(), "docs/options-file.md is stale"


def test_import_dpforge_exports_what_a_user_needs():
    import dpforge

    for name in dpforge.__all__:
        assert getattr(dpforge, name) is not None, name
    assert dpforge.Synthesizer is Synthesizer and dpforge.AnchorConfig is AnchorConfig
    assert {"load", "draft_schema", "load_schema", "evaluate_table", "DataBudget"} <= set(
        dpforge.__all__
    )
