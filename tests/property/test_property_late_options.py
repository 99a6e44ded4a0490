"""Settings of ``dpforge fit`` that need neither the schema's data nor the data (issue 25.2):
refused before anything is read or trained, leaving nothing on disk but the options file."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from property_support import assert_cli_clean, no_training, run_cli

from cli_support import options_file

LIMIT_S = 30

LATE = st.one_of(
    st.integers(-(10**12), -1).map(lambda n: ("samples", {"output": {"samples": n}})),
    st.just(("samples_out", {"output": {"samples_out": "samples.csv"}})),
    st.integers(-100, 0).map(lambda n: ("checkpoint_every", {"output": {"checkpoint_every": n}})),
    st.text("abcxyz", min_size=1, max_size=6)
    .filter(lambda t: t not in ("wide", "long"))
    .map(lambda t: ("layout", {"data": {"layout": t}})),
)


@settings(max_examples=20, deadline=None)
@given(LATE, st.sampled_from([[], ["--refine", "dpcgan"], ["--epsilon", "8"]]))
def test_a_late_checked_option_is_refused_before_any_work(table_files, late, others):
    key, sections = late
    if others[:1] == ["--refine"]:
        sections = {**sections, "anchor": {"share": 0}}
    with tempfile.TemporaryDirectory() as tmp, no_training():
        out = Path(tmp) / "model"
        path = options_file(sections, Path(tmp))
        args = ["fit", table_files[0], "--schema", table_files[1], "--out", out, *others]
        code, output = run_cli([*args, "--options", path], limit_s=LIMIT_S)
        assert code != -1, f"{sections} was accepted: training started"
        assert_cli_clean(code, output)
        assert code == 2 and key in output
        assert list(Path(tmp).iterdir()) == [path]
