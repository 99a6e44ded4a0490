"""Time-series benchmark data shipped with sktime (offline): UCR ItalyPowerDemand (one channel)
and UEA BasicMotions (six channels).

Returns ``(train, test, schema)`` with :class:`ArrayData` records and a schema that declares
public only what the data's own documentation makes public.
"""

from __future__ import annotations

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError
from dpforge.schema.array import TIMESERIES, ArraySchema, Channel

ITALY_CLASSES = ("1", "2")  # UCR: 1 = October-March (winter), 2 = April-September (summer)
MOTION_CLASSES = ("badminton", "running", "standing", "walking")
MOTION_CHANNELS = ("acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z")


def _sktime_loader(name: str):
    """sktime's loader ``load_<name>``, or a DataError that says how to install it."""
    try:
        from sktime import datasets
    except ImportError:
        raise DataError(
            f"{name} comes with sktime: pip install sktime (it is in the 'test' extra)"
        ) from None
    return getattr(datasets, f"load_{name}")


def load_basic_motions() -> tuple[ArrayData, ArrayData, ArraySchema]:
    """UEA BasicMotions via sktime: 80 recordings (40 train / 40 test, UEA's split) of 6
    channels (3-axis accelerometer and gyroscope of a smart watch) x 100 time points, 4
    activities. Public: the shape, the channel names and the classes (UEA's documentation);
    the channels' ranges are NOT (null: estimated under DP, or declare them)."""
    loader = _sktime_loader("basic_motions")
    parts = [loader(split=s, return_type="numpy3D") for s in ("train", "test")]
    schema = ArraySchema(
        TIMESERIES, (6, 100), tuple(Channel(n) for n in MOTION_CHANNELS),
        label="activity", classes=MOTION_CLASSES,
    )  # fmt: skip
    train, test = (ArrayData(x.astype(np.float64), y.astype(str).astype(object)) for x, y in parts)
    return train, test, schema


def load_italy_power_demand(
    seed: int = 0, test_size: float = 0.3
) -> tuple[ArrayData, ArrayData, ArraySchema]:
    """UCR ItalyPowerDemand (1,096 daily curves of 24 hourly values, 2 classes), via sktime.

    The UCR split (67 train / 1,029 test) leaves too few records to train under DP, so the two
    parts are pooled and split ``1 - test_size`` / ``test_size``, stratified and seeded. Public:
    the length 24 and the two classes (UCR's documentation). The channel bounds are left null,
    so fit estimates them under DP and charges the budget. A z-normalised curve of length L
    lies within ±sqrt(L - 1), a bound that reads no data, but declaring it (or ±3) scored no
    better on public UCR sets (bench/results/series/range_public.md). Label prior: uniform.
    """
    sktime_loader = _sktime_loader("italy_power_demand")
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
