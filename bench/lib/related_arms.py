"""The arms of bench/related.py: each fits on the real training tables and returns synthetic
tables (a dict of DataFrames linked by keys) with its fit and sample seconds.

* ``dpforge``: :class:`dpforge.relational.RelationalSynthesizer` at ε.
* ``flat``: the tables flattened by hand: each child row with its parent's columns (a parent
  without children is one row with empty child columns), fitted with the single-table default
  :class:`dpforge.Synthesizer` at ε with ``privacy_unit`` the parent key and the same k. The
  flat table holds no parent key (the unit is never modelled), so the split back makes each
  sampled row one parent with its one child (none where a required child column is empty): what
  flattening loses is the grouping of children under a parent.
* ``alone``: each table fitted alone at ε / 2 (the parent per record, the child with the parent
  key as its unit and k rows): the links are broken, each child row gets a random parent. As
  many child rows are sampled as the training tables hold after the bounding to k (not
  private: it favours this arm).
* ``hma``: SDV's HMA, non-private, in its own venv (bench/peers/sdv_hma.py through CSV files).
* ``real``: the real holdout tables in place of synthetic ones (the sampling-noise floor).

Every arm samples as many parents as the real training tables hold; the private arms are
fitted on the training tables as given (each bounds the children to k itself), HMA on the
same tables cut to k children per parent (the evaluation's bounding, seed 0), so that every
arm sees at most k children per parent.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from dpforge import Synthesizer
from dpforge.data.encoder import fresh_keys
from dpforge.data.relational import joined_child, key_texts
from dpforge.evaluation.relational_features import bounded_children
from dpforge.relational import RelationalSynthesizer
from dpforge.schema.relational import RelationalSchema, joined_name
from lib import harness

__all__ = ["ARMS", "PRIVATE_ARMS", "run_arm"]

ARMS = ("dpforge", "flat", "alone", "hma", "real")
PRIVATE_ARMS = ("dpforge", "flat", "alone")
SDV_VENV = Path(os.environ.get("DPFORGE_SDV_VENV", Path.home() / ".cache" / "dpforge-sdv-venv"))
SDV_RUNNER = Path(__file__).resolve().parent.parent / "peers" / "sdv_hma.py"
Tables = dict[str, pd.DataFrame]


def _dpforge(train: Tables, schema: RelationalSchema, epsilon: float, seed: int):
    n = len(train[schema.parent.name])
    with harness.Timer() as fit:
        model = RelationalSynthesizer(schema, epsilon=epsilon, seed=seed, progress=False)
        model.fit(train)
    with harness.Timer() as sample:
        tables = model.sample(n, seed=seed)
    return tables, fit.seconds, sample.seconds


# -- flattened by hand ---------------------------------------------------------------------
def _flat_table(train: Tables, schema: RelationalSchema):
    """The left join (childless parents keep one row, child columns empty) and its schema."""
    (child,) = schema.children
    parent, key = schema.parent, schema.parent.key
    joined = joined_child(train, schema, child)
    owners = set(key_texts(train[child.name][child.link.foreign_key], key))
    alone = train[parent.name][~np.isin(key_texts(train[parent.name][key], key), list(owners))]
    lonely = alone.rename(columns={c: joined_name(child, child.schema.names, c)
                                   for c in alone.columns if c != key})  # fmt: skip
    lonely = lonely.rename(columns={key: child.link.foreign_key})
    flat = pd.concat([joined, lonely], ignore_index=True)[joined.columns]
    base = schema.joined(child, aggregates=False)
    own = set(child.schema.names) - {child.link.foreign_key}
    columns = tuple(replace(c, nullable=True) if c.name in own else c for c in base.columns)
    return flat, replace(base, columns=columns)


def _flat(train: Tables, schema: RelationalSchema, epsilon: float, seed: int):
    (child,) = schema.children
    flat, flat_schema = _flat_table(train, schema)
    n = len(train[schema.parent.name])
    with harness.Timer() as fit:
        unit = {"privacy_unit": child.link.foreign_key, "max_rows_per_unit": child.max_rows}
        model = Synthesizer(flat_schema, epsilon=epsilon, seed=seed, progress=False, **unit)
        model.fit(flat)
    with harness.Timer() as sample:
        rows = model.sample(n, seed=seed).reset_index(drop=True)
    return _split_back(rows, schema, np.random.default_rng(seed)), fit.seconds, sample.seconds


def _split_back(rows: pd.DataFrame, schema: RelationalSchema, rng) -> Tables:
    """Each flat row one parent (a new key) and its child row where every child column the
    child's schema requires is set (else the parent has no child: the flat table's child
    columns are all nullable, for the parents without children)."""
    (child,) = schema.children
    parent = schema.parent
    keys = fresh_keys(len(rows), rng)
    names = {joined_name(child, child.schema.names, c): c for c in parent.schema.output_names}
    parents = rows[[n for n in names if n in rows.columns]].rename(columns=names)
    parents.insert(0, parent.key, keys)
    own = [c for c in child.schema.output_names if c != child.link.foreign_key]
    required = [c.name for c in child.schema.modelled.columns if not c.nullable]
    has_child = rows[required].notna().all(axis=1).to_numpy()
    children = rows.loc[has_child, own].reset_index(drop=True)
    children.insert(0, child.link.foreign_key, keys[has_child])
    columns = [parent.key, *(c for c in parent.schema.output_names if c != parent.key)]
    return {parent.name: parents[columns], child.name: children}


# -- each table alone ----------------------------------------------------------------------
def _alone(train: Tables, schema: RelationalSchema, epsilon: float, seed: int):
    (child,) = schema.children
    parent = schema.parent
    n = len(train[parent.name])
    m = len(bounded_children(train, schema, np.random.default_rng(0))[child.name])  # not private
    with harness.Timer() as fit:
        parents = Synthesizer(parent.schema, epsilon=epsilon / 2, seed=seed, progress=False)
        unit = {"privacy_unit": child.link.foreign_key, "max_rows_per_unit": child.max_rows}
        children = Synthesizer(
            child.schema, epsilon=epsilon / 2, seed=seed + 1, progress=False, **unit
        )
        parents.fit(train[parent.name])
        children.fit(train[child.name])
    rng = np.random.default_rng(seed)
    with harness.Timer() as sample:
        top = parents.sample(n, seed=seed).reset_index(drop=True)
        keys = fresh_keys(n, rng)
        top.insert(0, parent.key, keys)
        rows = children.sample(m, seed=seed + 1).reset_index(drop=True)
        rows.insert(0, child.link.foreign_key, keys[rng.integers(0, n, len(rows))])
    return {parent.name: top, child.name: rows}, fit.seconds, sample.seconds


# -- SDV's HMA -----------------------------------------------------------------------------
def _hma(train: Tables, schema: RelationalSchema, seed: int):
    bounded = bounded_children(train, schema, np.random.default_rng(0))
    with tempfile.TemporaryDirectory(prefix="dpforge-hma-") as work:
        folder, out = Path(work, "in"), Path(work, "out")
        folder.mkdir()
        spec = {
            "in": str(folder),
            "out": str(out),
            "seed": seed,
            "tables": {},
            "parents": len(train[schema.parent.name]),
        }
        for table in schema.tables:
            bounded[table.name].to_csv(folder / f"{table.name}.csv", index=False)
            spec["tables"][table.name] = _hma_table(table)
        Path(work, "spec.json").write_text(json.dumps(spec))
        python = SDV_VENV / "bin" / "python"
        subprocess.run([str(python), str(SDV_RUNNER), str(Path(work, "spec.json"))], check=True)
        tables = {t.name: pd.read_csv(out / f"{t.name}.csv", dtype=str, keep_default_na=False)
                  for t in schema.tables}  # fmt: skip
        seconds = json.loads((out / "seconds.json").read_text())
    return _as_read(tables, schema), seconds["fit"], seconds["sample"]


def _hma_table(table) -> dict:
    columns = {c.name: ("number" if c.is_numeric else "category")
               for c in table.schema.columns if not c.is_identifier}  # fmt: skip
    entry = {"key": table.key, "columns": columns}
    if table.link is not None:
        entry |= {"parent": table.link.parent, "foreign_key": table.link.foreign_key}
    return entry


def _as_read(tables: Tables, schema: RelationalSchema) -> Tables:
    """CSV text as the evaluation reads it: empty cells as missing, numbers as numbers."""
    out = {}
    for table in schema.tables:
        frame = tables[table.name].replace("", np.nan)
        for c in table.schema.columns:
            if c.is_numeric and c.name in frame.columns:
                frame[c.name] = pd.to_numeric(frame[c.name])
        out[table.name] = frame
    return out


def run_arm(arm: str, train: Tables, holdout: Tables, schema: RelationalSchema,
            epsilon: float | None, seed: int):  # fmt: skip
    """(synthetic tables, fit seconds, sample seconds) of ``arm``."""
    if arm == "dpforge":
        return _dpforge(train, schema, epsilon, seed)
    if arm == "flat":
        return _flat(train, schema, epsilon, seed)
    if arm == "alone":
        return _alone(train, schema, epsilon, seed)
    if arm == "hma":
        return _hma(train, schema, seed)
    if arm == "real":
        return bounded_children(holdout, schema, np.random.default_rng(seed)), 0.0, 0.0
    raise ValueError(f"unknown arm {arm!r}; one of {ARMS}")
