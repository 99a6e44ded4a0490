"""SDV's HMA on related tables, run in SDV's own venv (bench/peers/setup_sdv.sh), never imported
by dpforge. ``python sdv_hma.py SPEC.json`` reads the spec (in and out folders, the tables,
their keys and column kinds, the seed, the number of parents), fits ``HMASynthesizer`` on the
CSV files of the in folder, writes one CSV per table to the out folder, and the fit and sample
seconds to ``seconds.json`` there. The non-private structure ceiling of bench/related.py.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd


def metadata_dict(spec: dict) -> dict:
    """SDV's metadata (spec version V1) of the tables: keys as ids, numbers as numerical,
    the rest categorical; one relationship per child."""
    tables, links = {}, []
    for name, table in spec["tables"].items():
        columns = {
            c: {"sdtype": "numerical" if kind == "number" else "categorical"}
            for c, kind in table["columns"].items()
        }
        for key in (table.get("key"), table.get("foreign_key")):
            if key:
                columns[key] = {"sdtype": "id"}
        entry = {"columns": columns}
        if table.get("key"):
            entry["primary_key"] = table["key"]
        tables[name] = entry
        if table.get("parent"):
            parent = spec["tables"][table["parent"]]
            links.append(
                {
                    "parent_table_name": table["parent"],
                    "parent_primary_key": parent["key"],
                    "child_table_name": name,
                    "child_foreign_key": table["foreign_key"],
                }
            )
    return {"METADATA_SPEC_VERSION": "V1", "tables": tables, "relationships": links}


def main(path: str) -> None:
    from sdv.metadata import Metadata
    from sdv.multi_table import HMASynthesizer

    spec = json.loads(Path(path).read_text())
    folder, out = Path(spec["in"]), Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    data = {}
    for name, table in spec["tables"].items():
        text = {c: str for c, kind in table["columns"].items() if kind != "number"}
        data[name] = pd.read_csv(folder / f"{name}.csv", dtype=text)  # codes as written: "1"
    metadata = Metadata.load_from_dict(metadata_dict(spec))
    started = time.perf_counter()
    model = HMASynthesizer(metadata, verbose=False)
    model.fit(data)
    fitted = time.perf_counter()
    model._numpy_seed = spec["seed"]  # SDV 2.0 samples from this seed; fit resets it to 73251
    root = next(n for n, t in spec["tables"].items() if not t.get("parent"))
    tables = model.sample(num_rows=spec["parents"], main_table_name=root)
    sampled = time.perf_counter()
    for name, frame in tables.items():
        frame.to_csv(out / f"{name}.csv", index=False)
    seconds = {"fit": fitted - started, "sample": sampled - fitted}
    (out / "seconds.json").write_text(json.dumps(seconds))


if __name__ == "__main__":
    main(sys.argv[1])
