"""Image and time-series benchmark data: MNIST / Fashion-MNIST (by path), scikit-learn's 8x8
digits and sktime's ItalyPowerDemand (shipped with installed packages, offline).

Each loader returns ``(train, test, schema)`` with :class:`ArrayData` records and a schema that
declares public only what the data's own documentation makes public.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpsynth.array_schema import TIMESERIES, ArraySchema, Channel, image_schema
from dpsynth.data.arrays import ArrayData
from dpsynth.datasets import _dataset_file
from dpsynth.errors import DataError

DIGIT_CLASSES = tuple(str(d) for d in range(10))
FASHION_CLASSES = DIGIT_CLASSES  # idx labels 0..9 (T-shirt/top ... ankle boot)
ITALY_CLASSES = ("1", "2")  # UCR: 1 = October-March (winter), 2 = April-September (summer)


def load_idx_dataset(
    name: str = "mnist", data_dir: str | Path | None = None, n_train: int | None = None
) -> tuple[ArrayData, ArrayData, ArraySchema]:
    """MNIST or Fashion-MNIST from the four idx .gz files in ``<data_dir>/<name>/``.

    Public: the 28x28 grey format and its pixel range 0..255, the ten classes "0".."9". The
    class proportions are not: the label prior is "uniform" (free; the DP-CGAN and GS-WGAN
    papers use it). ``n_train`` keeps the first ``n_train`` training images (CPU-sized runs).
    """
    from dpsynth.data.images import read_idx_images

    def part(images: str, labels: str) -> ArrayData:
        return read_idx_images(
            _dataset_file(data_dir, name, images), _dataset_file(data_dir, name, labels)
        )

    train = part("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
    test = part("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    if n_train is not None:
        train = ArrayData(train.values[:n_train], train.labels[:n_train])
    return train, test, image_schema((1, 28, 28), classes=DIGIT_CLASSES)


def load_digits_images(seed: int = 0) -> tuple[ArrayData, ArrayData, ArraySchema]:
    """scikit-learn's 1,797 8x8 digit images (grey levels 0..16, documented), split 80/20.

    Public: shape, the documented range 0..16 and the classes 0..9. For tests and quick demos.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    bunch = load_digits()
    values = bunch.images.astype(np.float64)[:, None]
    labels = bunch.target.astype(str).astype(object)
    x_tr, x_te, y_tr, y_te = train_test_split(
        values, labels, test_size=0.2, stratify=labels, random_state=seed
    )
    schema = image_schema((1, 8, 8), lower=0.0, upper=16.0, classes=DIGIT_CLASSES)
    return ArrayData(x_tr, y_tr), ArrayData(x_te, y_te), schema


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
