"""Each kind's files (dpforge.data.kind_files): what the command line reads and writes per kind.

The commands never branch on the kind; these pin what each kind's entry says, as a user meets
it: a table's samples may go to part files and to Spark, an image's and a series' may not; the
series' samples are a CSV and its plot; a reading option of another kind is refused with a
message that names it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpforge.cli.engine import check_engine
from dpforge.cli.io import refuse_foreign_options
from dpforge.data.kind_files import DATA_TYPES, files_for
from dpforge.errors import DpforgeError


def test_every_kind_has_its_files_and_an_unknown_one_is_refused():
    assert DATA_TYPES == ("table", "image", "timeseries")
    with pytest.raises(DpforgeError, match=r"unknown data type 'video'.*'table', 'image'"):
        files_for("video")


def test_where_each_kind_writes_its_samples():
    out, model = Path("s.csv"), Path("models/m")
    assert files_for("table").sample_paths(out) == [out]
    assert files_for("timeseries").sample_paths(out) == [out, Path("s.png")]
    assert files_for("table").default_samples_path(model) == Path("models/m.csv")
    assert files_for("image").default_samples_path(model) == Path("models/m-images")
    assert [files_for(k).partitioned for k in DATA_TYPES] == [True, False, False]
    assert [files_for(k).streams for k in DATA_TYPES] == [True, False, False]


def test_spark_reads_tables_only():
    check_engine("spark", None, None, "table")
    for kind in ("image", "timeseries"):
        with pytest.raises(DpforgeError, match=f"measures tables; this schema is for {kind}"):
            check_engine("spark", None, None, kind)


def test_a_reading_option_of_another_kind_is_refused_by_name():
    refuse_foreign_options("timeseries", labels=None, id_column="id", layout="long")
    refuse_foreign_options("image", labels=Path("l.idx"), id_column=None, layout="wide")
    with pytest.raises(DpforgeError, match=r"^\[data\] layout = long applies to time series"):
        refuse_foreign_options("table", labels=None, id_column=None, layout="long", in_file=True)
    with pytest.raises(DpforgeError, match=r"^--labels l.idx applies to images.*timeseries data"):
        refuse_foreign_options("timeseries", labels=Path("l.idx"), id_column=None, layout="wide")
