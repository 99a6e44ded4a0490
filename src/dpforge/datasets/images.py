"""Image benchmark data: MNIST / Fashion-MNIST (by path) and scikit-learn's 8x8 digits
(shipped with scikit-learn, offline).

Each loader returns ``(train, test, schema)`` with :class:`ArrayData` records and a schema that
declares public only what the data's own documentation makes public.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.datasets.files import dataset_file
from dpforge.schema.array import ArraySchema, image_schema

DIGIT_CLASSES = tuple(str(d) for d in range(10))
FASHION_CLASSES = DIGIT_CLASSES  # idx labels 0..9 (T-shirt/top ... ankle boot)


def load_idx_dataset(
    name: str = "mnist", data_dir: str | Path | None = None, n_train: int | None = None
) -> tuple[ArrayData, ArrayData, ArraySchema]:
    """MNIST or Fashion-MNIST from the four idx .gz files in ``<data_dir>/<name>/``.

    Public: the 28x28 grey format and its pixel range 0..255, the ten classes "0".."9". The
    class proportions are not: the label prior is "uniform" (free; the DP-CGAN and GS-WGAN
    papers use it). ``n_train`` keeps the first ``n_train`` training images (CPU-sized runs).
    """
    from dpforge.data.images import read_idx_images

    def part(images: str, labels: str) -> ArrayData:
        return read_idx_images(
            dataset_file(data_dir, name, images), dataset_file(data_dir, name, labels)
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
