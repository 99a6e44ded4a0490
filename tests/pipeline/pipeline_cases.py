"""Fixed-seed runs of every kind and pipeline shape, recorded as fixtures.

Each case is one small fit: a table, an image set or a series set; anchoring only, anchoring
with a discriminator refining it, or the discriminator only. Its ledger, plan, epsilon and
trained outputs are stored in ``tests/pipeline/fixtures/<case>.json`` (written by
``python -m tests.pipeline.pipeline_cases [NAME...]``) so that a change of the pipeline's
shape that changes what a run does shows up as a difference. Re-record only for a change that
is meant to alter a run, and say so in the commit.

The releases (ledger, plan, epsilon) come from NumPy's seeded generators, exact counts and the
accountant: they are the same on every machine and are compared exactly (floats to 1e-6). The
trained outputs (the generator's weights, the first sampled records and, for tables, a summary
of a larger sample) are not: PyTorch's and MKL's CPU kernels round differently by processor,
and training amplifies that. They are compared within each case's stated tolerance
(``test_pipeline_fixtures.TOLERANCES``, measured between processors), on every CPU.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpforge.datasets.breast_cancer import load_breast_cancer_demo
from dpforge.datasets.images import load_digits_images
from dpforge.datasets.series import load_italy_power_demand
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.methods.dpwgan import DPWGANConfig
from dpforge.methods.gswgan import GSWGANConfig
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.features import FeatureAnchorConfig
from dpforge.synthesizer import Synthesizer

FIXTURES = Path(__file__).parent / "fixtures"
SMALL_IMAGE = {"generator_channels": (16, 8), "discriminator_channels": (8, 16), "latent_dim": 16}
SMALL_SERIES = {"generator_hidden": (16,), "discriminator_hidden": (32,), "latent_dim": 8}
TABLE_ANCHOR = AnchorConfig(steps=30, batch_size=256)
EMBEDDING = FeatureAnchorConfig(
    statistic="embedding", n_features=300, steps=40, batch_size=200, lr=5e-3
)


def _table():
    train, _, schema = load_breast_cancer_demo()
    return train.iloc[:, list(range(6)) + [-1]], _six(schema)


def _six(schema):
    from dpforge.schema.table import Schema

    columns = schema.columns[:6] + (schema.columns[-1],)
    return Schema(columns=columns, label=schema.label, label_prior=schema.label_prior)


def _images():
    train, _, schema = load_digits_images()
    return train, schema


def _series():
    train, _, schema = load_italy_power_demand()
    return train, schema


CASES: dict[str, tuple[Callable[[], Any], dict[str, Any]]] = {
    "table_anchor": (_table, {"epsilon": 3.0, "anchor": TABLE_ANCHOR}),
    "table_anchor_refine": (
        _table,
        {
            "epsilon": 3.0,
            "method": "dpcgan",
            "anchor": AnchorConfig(share=0.5, steps=30, batch_size=256),
            "method_options": DPCGANConfig(batch_size=64),
            "epochs": 16.0,
        },
    ),
    "table_discriminator": (
        _table,
        {
            "epsilon": 3.0,
            "method": "dpwgan",
            "anchor": None,
            "method_options": DPWGANConfig(batch_size=64),
            "epochs": 16.0,
        },
    ),
    "table_nonprivate": (_table, {"epsilon": math.inf, "anchor": TABLE_ANCHOR}),
    "image_moments": (_images, {"epsilon": 10.0}),
    "image_embedding": (_images, {"epsilon": 10.0, "anchor": EMBEDDING}),
    "image_moments_refine": (
        _images,
        {
            "epsilon": 10.0,
            "anchor": FeatureAnchorConfig(statistic="moments", rank=10, share=0.5),
            "method_options": DPCGANConfig(batch_size=64, **SMALL_IMAGE),
            "epochs": 5.0,
        },
    ),
    "image_discriminator": (
        _images,
        {
            "epsilon": 50.0,
            "anchor": None,
            "method_options": DPCGANConfig(batch_size=32, **SMALL_IMAGE),
            "epochs": 2.5,
        },
    ),
    "series_embedding": (_series, {"epsilon": 3.0, "anchor": EMBEDDING}),
    "series_embedding_refine": (
        _series,
        {
            "epsilon": 3.0,
            "method": "dpwgan",
            "anchor": FeatureAnchorConfig(
                statistic="embedding", n_features=300, steps=40, batch_size=200, share=0.5
            ),
            "method_options": DPWGANConfig(batch_size=64, **SMALL_SERIES),
            "epochs": 10.0,
        },
    ),
    "series_discriminator": (
        _series,
        {
            "epsilon": 50.0,
            "method": "gswgan",
            "anchor": None,
            "method_options": GSWGANConfig(batch_size=16, num_discriminators=20, **SMALL_SERIES),
            "epochs": 5.5,
        },
    ),
}


def run_case(name: str) -> dict[str, Any]:
    """Fit the case with seed 0 and return what the fixture holds."""
    load, options = CASES[name]
    data, schema = load()
    delta = 1e-5 if name.startswith("table") else 1e-4
    synth = Synthesizer(schema, delta=delta, seed=0, progress=False, **options).fit(data)
    weights = synth.generator_.state_dict().values()
    trained = {
        "sample": _sample_json(synth.sample(5, seed=1)),
        "weights_sum": float(sum(p.double().sum() for p in weights)),
    }
    if name.startswith("table"):
        trained["summary"] = _summary(synth.sample(SUMMARY_ROWS, seed=2))
    return {
        "ledger": synth.ledger_.to_dict(),
        "plan": asdict(synth.plan_),
        "epsilon": synth.privacy_spent().epsilon,
        "trained": trained,
    }


SUMMARY_ROWS = 2000  # enough that a column's mean is known to about 0.02 of its spread


def _summary(frame: Any) -> dict[str, Any]:
    """Each numeric column's mean and standard deviation, each other column's shares."""
    numeric = frame.select_dtypes("number")
    shares = {
        column: {str(k): float(v) for k, v in frame[column].value_counts(normalize=True).items()}
        for column in frame.columns.difference(numeric.columns)
    }
    return {
        "mean": {c: float(v) for c, v in numeric.mean().items()},
        "std": {c: float(v) for c, v in numeric.std().items()},
        "shares": shares,
    }


def _sample_json(sample: Any) -> dict[str, Any]:
    if hasattr(sample, "to_dict") and hasattr(sample, "columns"):
        return {"rows": json.loads(sample.to_json(orient="split", double_precision=15))}
    return {
        "values": np.asarray(sample.values, dtype=np.float64).round(10).tolist(),
        "labels": None if sample.labels is None else [str(v) for v in sample.labels],
    }


RELEASES = ("ledger", "plan", "epsilon")  # the same on every machine


def normalised(record: dict[str, Any]) -> dict[str, Any]:
    """The record as JSON reads it back (tuples as lists, keys sorted)."""
    return json.loads(json.dumps(record, sort_keys=True))


def differences(actual: Any, expected: Any, where: str) -> list[str]:
    """Where ``actual`` departs from ``expected``: keys, lengths and strings exactly, floats to a
    relative and absolute 1e-6 (an accountant's last digits may round by machine)."""
    if isinstance(expected, dict):
        if sorted(actual) != sorted(expected):
            return [f"{where}: keys {sorted(actual)} != {sorted(expected)}"]
        return [d for k in expected for d in differences(actual[k], expected[k], f"{where}.{k}")]
    if isinstance(expected, list):
        if len(actual) != len(expected):
            return [f"{where}: {len(actual)} items != {len(expected)}"]
        pairs = enumerate(zip(actual, expected, strict=True))
        return [d for i, (a, e) in pairs for d in differences(a, e, f"{where}[{i}]")]
    if isinstance(expected, float) and not isinstance(actual, str):
        close = bool(np.isclose(actual, expected, rtol=1e-6, atol=1e-6))
    else:
        close = actual == expected
    return [] if close else [f"{where}: {actual!r} != {expected!r}"]


def main(args: list[str]) -> None:
    torch.set_num_threads(1)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name in args or list(CASES):
        print(name, flush=True)
        record = normalised(run_case(name))
        (FIXTURES / f"{name}.json").write_text(json.dumps(record, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
