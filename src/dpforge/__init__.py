"""dpforge: differentially private synthetic tables, images and time series.

What a user needs, from one import::

    import dpforge

    schema = dpforge.draft_schema(dpforge.read_csv("patients.csv"), label="outcome")  # review it
    model = dpforge.Synthesizer(schema, epsilon=3.0).fit(dpforge.read_csv("patients.csv"))
    model.save("model/")
    rows = dpforge.load("model/").sample(1000)

``import dpforge`` itself stays light (no torch, pandas or scikit-learn): ``dpforge --help``
and a Spark executor that only counts records import it. The names that need those libraries
load on first use (PEP 562 lazy loading, each from the one module that defines it); the public
schema types, the errors and ``ArrayData`` load at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError, DpforgeError, PrivacyError, SchemaError
from dpforge.schema.array import ArraySchema, Channel, image_schema, load_schema
from dpforge.schema.table import Column, Schema

if TYPE_CHECKING:
    from dpforge.data.tables import draft_schema, read_csv
    from dpforge.evaluation.evaluate import evaluate_table
    from dpforge.evaluation.report import write_report
    from dpforge.methods import DPCGANConfig, DPWGANConfig, GSWGANConfig
    from dpforge.privacy.budget import BudgetExceededError, DataBudget
    from dpforge.statistics.anchor import AnchorConfig
    from dpforge.statistics.features import FeatureAnchorConfig
    from dpforge.synthesizer import Synthesizer, load

__version__ = "0.1.0"

# name -> the module that defines it, imported when the name is first used
_LAZY = {
    "Synthesizer": "dpforge.synthesizer",
    "load": "dpforge.synthesizer",
    "read_csv": "dpforge.data.tables",
    "draft_schema": "dpforge.data.tables",
    "AnchorConfig": "dpforge.statistics.anchor",
    "FeatureAnchorConfig": "dpforge.statistics.features",
    "DPCGANConfig": "dpforge.methods",
    "DPWGANConfig": "dpforge.methods",
    "GSWGANConfig": "dpforge.methods",
    "evaluate_table": "dpforge.evaluation.evaluate",
    "write_report": "dpforge.evaluation.report",
    "DataBudget": "dpforge.privacy.budget",
    "BudgetExceededError": "dpforge.privacy.budget",
}

__all__ = [
    "AnchorConfig",
    "ArrayData",
    "ArraySchema",
    "BudgetExceededError",
    "Channel",
    "Column",
    "DPCGANConfig",
    "DPWGANConfig",
    "DataBudget",
    "DataError",
    "DpforgeError",
    "FeatureAnchorConfig",
    "GSWGANConfig",
    "PrivacyError",
    "Schema",
    "SchemaError",
    "Synthesizer",
    "__version__",
    "draft_schema",
    "evaluate_table",
    "image_schema",
    "load",
    "load_schema",
    "read_csv",
    "write_report",
]


def __getattr__(name: str) -> object:
    """The heavy names of ``__all__``, imported from their module on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'dpforge' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # later uses skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
