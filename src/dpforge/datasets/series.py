"""Time-series benchmark data: sktime's UCR ItalyPowerDemand (shipped with sktime, offline).

Returns ``(train, test, schema)`` with :class:`ArrayData` records and a schema that declares
public only what the data's own documentation makes public.
"""

from __future__ import annotations

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError
from dpforge.schema.array import TIMESERIES, ArraySchema, Channel

ITALY_CLASSES = ("1", "2")  # UCR: 1 = October-March (winter), 2 = April-September (summer)


def load_italy_power_demand(
    seed: int = 0, test_size: float = 0.3
) -> tuple[ArrayData, ArrayData, ArraySchema]:
    """UCR ItalyPowerDemand (1,096 daily curves of 24 hourly values, 2 classes), via sktime.

    The UCR split (67 train / 1,029 test) leaves too few records to train under DP, so the two
    parts are pooled and split ``1 - test_size`` / ``test_size``, stratified and seeded. Public:
    the length 24 and the two classes (UCR's documentation). The value range is NOT public
    (each curve is z-normalised, but its extremes depend on the data): the channel bounds are
    null, so fit estimates them under DP and charges the budget. Label prior: uniform.
    """
    try:
        from sktime.datasets import load_italy_power_demand as sktime_loader
    except ImportError:
        raise DataError(
            "ItalyPowerDemand comes with sktime: pip install sktime (it is in the 'test' extra)"
        ) from None
    from sklearn.model_selection import train_test_split

    parts = [sktime_loader(split=s, return_type="numpy3D") for s in ("train", "test")]
    values = np.concatenate([p[0] for p in parts]).astype(np.float64)
    labels = np.concatenate([p[1] for p in parts]).astype(str).astype(object)
    x_tr, x_te, y_tr, y_te = train_test_split(
        values, labels, test_size=test_size, stratify=labels, random_state=seed
    )
    schema = ArraySchema(
        TIMESERIES, (1, 24), (Channel("demand"),), label="class", classes=ITALY_CLASSES
    )
    return ArrayData(x_tr, y_tr), ArrayData(x_te, y_te), schema
