"""Options of ``dpforge fit`` that need neither the schema nor the data (issue 25.2): refused
before anything is read or trained, leaving nothing on disk."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from property_support import assert_cli_clean, no_training, run_cli

LIMIT_S = 30

LATE = st.one_of(
    st.integers(-(10**12), -1).map(lambda n: ("--samples", ["--samples", n])),
    st.just(("--samples-out", ["--samples-out", "{tmp}/samples.csv"])),
    st.text("abcxyz", min_size=1, max_size=6)
    .filter(lambda t: t not in ("wide", "long"))
    .map(lambda t: ("--layout", ["--layout", t])),
)


@settings(max_examples=20, deadline=None)
@given(LATE, st.sampled_from([[], ["--anchor-share", "0"], ["--epsilon", "8"]]))
def test_a_late_checked_option_is_refused_before_any_work(table_files, late, others):
    option, extra = late
    with tempfile.TemporaryDirectory() as tmp, no_training():
        out = Path(tmp) / "model"
        args = ["fit", *table_files, "--out", out, "--quiet", *others]
        args.insert(2, "--schema")
        args += [str(a).format(tmp=tmp) for a in extra]
        code, output = run_cli(args, limit_s=LIMIT_S)
        assert code != -1, f"{extra} was accepted: training started"
        assert_cli_clean(code, output)
        assert code == 2 and option in output
        assert list(Path(tmp).iterdir()) == []
