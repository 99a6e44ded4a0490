"""Issue 25: hostile inputs that crashed the calculator, options checked after the work they
guard, integer columns whose samples overflowed, and accepted values that make no sense."""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from cli_support import fast, run
from dpforge.errors import PrivacyError, SchemaError
from dpforge.options import check_budget
from dpforge.schema.table import Column, Schema

FAST = fast()
LARGEST_INTEGER = 2**53
MEMORY_LIMIT = 4 * 2**30  # the crash needed more; a bounded answer needs well under 1 GiB


def _one_line_error(code: int, out: str) -> str:
    assert code == 2, out
    assert "Traceback" not in out
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[0].startswith("error:"), out
    return " ".join(lines)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_calculator_unreachable_epsilon_answers_in_bounded_memory():
    """Was: MemoryError std::bad_alloc (or minutes of swapping) and a traceback."""
    args = ["privacy", "-n", "100", "-b", "100", "--epsilon", "1e-6", "--steps", "1000000"]
    result = subprocess.run(
        [sys.executable, "-c", "from dpforge.cli import main; main()", *args, "--delta", "1e-4"],
        capture_output=True,
        text=True,
        timeout=240,
        preexec_fn=_limit_memory,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    message = " ".join(result.stderr.split())
    assert "cannot be reached" in message and "at least" in message
    smallest = float(message.split("gives epsilon ")[1].split(";")[0])
    assert 0.001 < smallest < 0.01  # what is possible: about 0.0032 at sigma = 2**20


def test_calculator_reports_a_huge_epsilon_by_rdp_alone(monkeypatch, capsys):
    """Was: the PLD accountant ran out of memory on sigma = 0.3 over a million steps."""
    args = ["privacy", "-n", "100", "-b", "100", "--sigma", "0.3", "--steps", "1000000"]
    code, out = run([*args, "--json"], monkeypatch, capsys)
    assert code == 0, out
    report = json.loads(out[out.index("{") :])
    assert report["accountant"] == "rdp" and report["epsilon_pld"] is None
    assert report["epsilon"] > 1000


@pytest.mark.parametrize(
    ("extra", "topic"),
    [
        (["--sigma", "1", "--steps", "1000", "--delta", "1e-300"], "smallest delta"),
        (["--sigma", "1", "--epsilon", "1e300"], "above 100"),
        (["--sigma", "1", "--epochs", "1e308"], "private steps"),
    ],
)
def test_calculator_refuses_senseless_requests_on_one_line(extra, topic, monkeypatch, capsys):
    """Was: ε = ∞ for δ = 1e-300, an endless search for ε = 1e300, OverflowError for 1e308
    epochs."""
    code, out = run(["privacy", "-n", "100", "-b", "1", *extra], monkeypatch, capsys)
    assert topic in _one_line_error(code, out)


def test_calculator_warns_about_a_tiny_target(monkeypatch, capsys):
    _, text = run(
        ["privacy", "-n", "100", "-b", "10", "--epsilon", "1e-300", "--steps", "3"],
        monkeypatch,
        capsys,
        unwrap=True,
    )
    assert "note: --epsilon=1e-300 is far below" in text  # one line, no Python file and line


@pytest.mark.parametrize(
    ("extra", "topic"),
    [
        ({"output": {"samples": -5}}, "[output] samples = -5"),
        ({"output": {"samples_out": "s.csv"}}, "without samples"),
        ({"data": {"layout": "tall"}}, "[data] layout"),
    ],
)
def test_fit_refuses_a_bad_extra_before_training(
    files, tmp_path, extra, topic, monkeypatch, capsys
):
    """Was: --samples -5 trained a whole model, then refused, leaving the model folder."""
    data, schema = files
    out = tmp_path / "m"
    args = ["fit", data, "--schema", schema, "--out", out, *fast(extra)]
    code, text = run(args, monkeypatch, capsys)
    assert topic in _one_line_error(code, text)
    assert not out.exists() and not (tmp_path / "s.csv").exists()
    assert not list(tmp_path.glob("*budget*"))


@pytest.mark.parametrize(
    ("extra", "topic"),
    [
        ({"labels": "labels.idx"}, "labels.idx applies to images"),
        ({"id_column": "patient"}, "patient applies to time series"),
        ({"layout": "long"}, "long applies to time series"),
    ],
)
@pytest.mark.parametrize("command", ["fit", "schema"])
def test_a_table_refuses_reading_options_of_other_data_types(
    files, tmp_path, extra, topic, command, monkeypatch, capsys
):
    """Was: --labels and --id-column on a table were silently ignored (stop 26's leftover)."""
    data, schema = files
    out = tmp_path / "m"
    if command == "fit":
        given = ["--schema", schema, *fast({"data": extra})]
    else:
        ((key, value),) = extra.items()
        given = ["--" + key.replace("_", "-"), value]
    code, text = run([command, data, "--out", out, *given], monkeypatch, capsys)
    assert topic in " ".join(_one_line_error(code, text).split())
    assert not out.exists() and not list(tmp_path.glob("*budget*"))


def test_checkpoint_every_without_a_checkpoint_dir_is_refused(files, tmp_path, monkeypatch, capsys):
    data, schema = files
    args = ["fit", data, "--schema", schema, "--out", tmp_path / "m"]
    code, text = run([*args, *fast({"output": {"checkpoint_every": 7}})], monkeypatch, capsys)
    line = _one_line_error(code, text)
    assert "checkpoint_every = 7 needs --checkpoint-dir" in line


@pytest.mark.parametrize("bound", [1e300, 2.0**53 + 2, 1e19])
def test_integer_bounds_beyond_2_53_are_refused(bound):
    """Was: accepted, and samples came back as -9223372036854775808."""
    with pytest.raises(SchemaError, match="largest usable range"):
        Column("n", "integer", lower=-bound, upper=bound).validate()
    Column("x", "continuous", lower=-bound, upper=bound).validate()  # floats are fine
    Column("n", "integer", lower=-LARGEST_INTEGER, upper=LARGEST_INTEGER).validate()


def test_integer_schema_file_beyond_2_53_is_refused_by_fit(files, tmp_path, monkeypatch, capsys):
    data, schema_path = files
    document = json.loads(schema_path.read_text())
    document["columns"].append({"name": "code", "type": "integer", "lower": -1e300, "upper": 1e300})
    frame = pd.read_csv(data)
    frame["code"] = np.arange(len(frame))
    frame.to_csv(data, index=False)
    schema_path.write_text(json.dumps(document))
    args = ["fit", data, "--schema", schema_path, "--out", tmp_path / "m", *FAST]
    message = _one_line_error(*run(args, monkeypatch, capsys))
    assert "'code'" in message and str(LARGEST_INTEGER) in message
    assert not (tmp_path / "m").exists()


def test_a_draft_types_huge_whole_numbers_as_continuous():
    from dpforge.data.tables import draft_schema

    frame = pd.DataFrame(
        {"amount": [float(2**60 + 2**10 * (i % 20)) for i in range(40)], "y": ["a", "b"] * 20}
    )
    assert draft_schema(frame, with_values=True).column("amount").type == "continuous"


def test_a_tiny_epsilon_warns_and_a_tiny_delta_is_refused():
    """ε = 1e-300 trained a model of pure noise without a word; δ = 1e-300 certified ε = ∞."""
    with pytest.warns(UserWarning, match="delta"):
        check_budget(1e-300, 1e-5, 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_budget(1.0, 1e-5, 0.1)
        check_budget(math.inf, 1e-5, 0.1)
    with pytest.raises(PrivacyError, match="smallest delta"):
        check_budget(1.0, 1e-300, 0.1)


def test_schema_loaded_from_a_document_keeps_its_integer_check():
    document = Schema((Column("n", "integer", 0.0, 9.0),)).to_dict()
    document["columns"][0]["upper"] = 1e300
    with pytest.raises(SchemaError, match="integer"):
        Schema.from_dict(document)
