"""Redacted error messages (issue 13.9): bad-input errors quote rows, values and counts of the
private data; ``--redact-errors`` or ``DPFORGE_REDACT_ERRORS=1`` hides them for shared logs and
keeps the public parts (column names, the kind of problem, what to do)."""

from __future__ import annotations

import pandas as pd
import pytest

from cli_support import quiet
from cli_support import run as run_cli

FAST = [*quiet(), "--seed", "0"]


def run(args, monkeypatch, capsys) -> tuple[int, str]:
    return run_cli(args, monkeypatch, capsys, unwrap=True)


def _damage(data, column, row, value):
    frame = pd.read_csv(data)
    frame[column] = frame[column].astype(object).where(frame.index != row - 1, value)
    frame.to_csv(data, index=False)


@pytest.mark.parametrize(
    ("column", "value", "plain", "redacted"),
    [
        (
            "mean_area",
            "9876.5x",
            "column 'mean_area', row 10: '9876.5x' is not a number",
            "column 'mean_area', row <private>: <private> is not a number",
        ),
        (
            "mean_radius",
            "",
            "column 'mean_radius', row 10: missing value",
            "column 'mean_radius', row <private>: missing value <private>",
        ),
        (
            "diagnosis",
            "unsure",
            "column 'diagnosis', row 10: unknown category 'unsure'",
            "column 'diagnosis', row <private>: unknown category <private>; the schema allows",
        ),
        (
            "mean_texture",
            "987.25",
            "column 'mean_texture', row 10: value 987.25 is outside the declared bounds",
            "column 'mean_texture', row <private>: value <private> is outside the declared "
            "bounds [9, 40] (<private> value(s) in all)",
        ),
    ],
)
@pytest.mark.parametrize("how", ["option", "environment"])
def test_redacted_errors_hide_rows_values_and_counts(
    files, tmp_path, monkeypatch, capsys, column, value, plain, redacted, how
):
    data, schema_path = files
    _damage(data, column, 10, value)
    fit = ["fit", data, "--schema", schema_path, "--out", tmp_path / "model", *FAST]
    code, out = run(fit, monkeypatch, capsys)
    assert code == 2 and plain in out  # the steward's own messages name row and value
    if how == "option":
        code, out = run(["--redact-errors", *fit], monkeypatch, capsys)
    else:
        monkeypatch.setenv("DPFORGE_REDACT_ERRORS", "1")
        code, out = run(fit, monkeypatch, capsys)
    assert code == 2 and out.startswith("error:") and "Traceback" not in out
    assert redacted in out
    assert "row 10" not in out and (not value or value not in out)
    assert not (tmp_path / "model").exists()


def test_redaction_ends_with_the_command(files, tmp_path, monkeypatch, capsys):
    data, schema_path = files
    _damage(data, "mean_area", 3, "big")
    fit = ["fit", data, "--schema", schema_path, "--out", tmp_path / "model", *FAST]
    _, out = run(["--redact-errors", *fit], monkeypatch, capsys)
    assert "row <private>" in out
    _, out = run(fit, monkeypatch, capsys)
    assert "row 3: 'big' is not a number" in out


def test_redacted_errors_in_python_hide_record_numbers_and_values():
    import numpy as np

    from dpforge.data.arrays import ArrayData, validate_arrays
    from dpforge.errors import DataError, redacted_errors
    from dpforge.schema.array import image_schema

    values = np.zeros((5, 1, 2, 2))
    values[3, 0, 1, 1] = 99.5
    schema = image_schema((1, 2, 2), lower=0.0, upper=16.0, label=None)
    with pytest.raises(DataError, match=r"record 4, .*99\.5"):
        validate_arrays(ArrayData(values), schema)
    with redacted_errors(), pytest.raises(DataError) as caught:
        validate_arrays(ArrayData(values), schema)
    message = str(caught.value)
    assert "record <private>, channel 'gray'" in message and "99" not in message
    assert "widen the range" in message  # what to do stays
