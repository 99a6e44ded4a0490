"""Tests of train-on-synthetic, test-on-real utility for images, on scikit-learn's real digits.

``load_digits``: 1,797 handwritten digits, 8x8 pixels with 17 grey levels (0..16), scaled here
to 0..255 like 8-bit images. A "synthetic" set made of real training images must score high;
the same images with shuffled labels must score near chance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError
from dpforge.evaluation.images import tstr_auroc, tstr_cnn_accuracy
from dpforge.evaluation.utility import MetricResult

CLASSES = tuple(str(d) for d in range(10))
CNN_EPOCHS = 8


@pytest.fixture(scope="module")
def digits() -> tuple[ArrayData, ArrayData]:
    """A seeded 1,200 / 597 split of the digits as (n, 1, 8, 8) images in 0..255."""
    raw = load_digits()
    images = np.round(raw.images * (255.0 / 16.0))[:, None, :, :]
    labels = raw.target.astype(str).astype(object)
    order = np.random.default_rng(0).permutation(len(images))
    train, test = order[:1200], order[1200:]
    return ArrayData(images[train], labels[train]), ArrayData(images[test], labels[test])


def shuffled(data: ArrayData, seed: int = 1) -> ArrayData:
    """The same images with their labels permuted: nothing to learn about the classes."""
    return ArrayData(data.values, np.random.default_rng(seed).permutation(data.labels))


def subset(data: ArrayData, keep: np.ndarray) -> ArrayData:
    return ArrayData(data.values[keep], data.labels[keep])


@pytest.fixture(scope="module")
def real_auroc(digits) -> dict[str, MetricResult]:
    train, test = digits
    return tstr_auroc(train, test, CLASSES, seed=0)


@pytest.fixture(scope="module")
def real_cnn(digits) -> MetricResult:
    train, test = digits
    return tstr_cnn_accuracy(train, test, CLASSES, epochs=CNN_EPOCHS, seed=0)


# -- scikit-learn AuROC ----------------------------------------------------------------------
def test_real_training_images_give_a_high_auroc(real_auroc):
    assert set(real_auroc) == {"logistic", "mlp"}
    for model, result in real_auroc.items():
        assert isinstance(result, MetricResult)
        assert result.name == f"tstr_auroc_macro_{model}"
        assert result.value == result.details["macro"] > 0.98
        assert result.details["micro"] > 0.98
        assert set(result.details["per_class"]) == set(CLASSES)
        assert result.details["accuracy"] > 0.9
        assert result.details["classes_missing_from_train"] == []
        assert result.details["n_train"] == 1200 and result.details["n_test"] == 597


def test_label_shuffled_synthetic_images_score_near_chance(digits):
    train, test = digits
    for result in tstr_auroc(shuffled(train), test, CLASSES, seed=0).values():
        assert abs(result.value - 0.5) < 0.1
        assert result.details["accuracy"] < 0.25


def test_synthetic_set_missing_a_class_is_reported_not_an_error(digits):
    train, test = digits
    without_nine = subset(train, train.labels != "9")
    results = tstr_auroc(without_nine, test, CLASSES, models=("logistic",))
    result = results["logistic"]
    assert result.details["classes_missing_from_train"] == ["9"]
    assert result.details["per_class"]["9"] == 0.5  # predicted probability 0 for every image
    assert math.isfinite(result.value) and 0.85 < result.value < 1.0


def test_synthetic_set_with_one_class_is_degenerate(digits):
    train, test = digits
    result = tstr_auroc(subset(train, train.labels == "3"), test, CLASSES, models=("mlp",))["mlp"]
    assert result.details["degenerate"] is True
    assert result.value == 0.5


def test_auroc_is_deterministic_for_a_seed(digits, real_auroc):
    train, test = digits
    again = tstr_auroc(train, test, CLASSES, models=("mlp",), seed=0)["mlp"]
    assert again.value == real_auroc["mlp"].value
    assert again.details["per_class"] == real_auroc["mlp"].details["per_class"]


def test_pixels_are_scaled_by_the_declared_range(digits, real_auroc):
    train, test = digits
    in_sixteenths = ArrayData(train.values * (16.0 / 255.0), train.labels)
    test_sixteenths = ArrayData(test.values * (16.0 / 255.0), test.labels)
    result = tstr_auroc(
        in_sixteenths, test_sixteenths, CLASSES, models=("logistic",), pixel_range=(0, 16)
    )
    assert result["logistic"].value == pytest.approx(real_auroc["logistic"].value, abs=1e-6)


def test_bad_inputs_raise_errors_that_name_the_problem(digits):
    train, test = digits
    with pytest.raises(ValueError, match="models"):
        tstr_auroc(train, test, CLASSES, models=("svm",))
    with pytest.raises(ValueError, match="pixel_range"):
        tstr_auroc(train, test, CLASSES, pixel_range=(255, 0))
    with pytest.raises(DataError, match="no labels"):
        tstr_auroc(ArrayData(train.values), test, CLASSES)
    relabelled = ArrayData(train.values, np.where(train.labels == "7", "seven", train.labels))
    with pytest.raises(DataError, match="seven"):
        tstr_auroc(relabelled, test, CLASSES)
    with pytest.raises(DataError, match="shape"):
        tstr_auroc(ArrayData(train.values[:, :, :4, :], train.labels), test, CLASSES)
    with pytest.raises(DataError, match="channels, height, width"):
        tstr_auroc(ArrayData(train.values[:, 0], train.labels), test, CLASSES)
    with pytest.raises(DataError, match="at least 2 classes"):
        tstr_auroc(train, test, ("0",))


# -- small CNN accuracy ----------------------------------------------------------------------
def test_cnn_trained_on_real_images_is_accurate(real_cnn):
    assert real_cnn.name == "tstr_cnn_accuracy"
    assert real_cnn.value == real_cnn.details["accuracy"] > 0.9
    assert real_cnn.details["balanced_accuracy"] > 0.9
    assert real_cnn.details["auroc_macro"] > 0.98
    assert real_cnn.details["epochs"] == CNN_EPOCHS
    assert real_cnn.details["classes_missing_from_train"] == []


def test_cnn_trained_on_shuffled_labels_is_near_chance(digits):
    train, test = digits
    result = tstr_cnn_accuracy(shuffled(train), test, CLASSES, epochs=CNN_EPOCHS, seed=0)
    assert result.value < 0.25


def test_cnn_is_deterministic_and_leaves_the_global_rng_alone(digits, real_cnn):
    train, test = digits
    state = torch.random.get_rng_state()
    again = tstr_cnn_accuracy(train, test, CLASSES, epochs=CNN_EPOCHS, seed=0)
    assert torch.equal(state, torch.random.get_rng_state())
    assert again.value == real_cnn.value
    assert again.details["final_train_loss"] == real_cnn.details["final_train_loss"]
    other = tstr_cnn_accuracy(train, test, CLASSES, epochs=1, seed=1)
    assert other.details["final_train_loss"] != real_cnn.details["final_train_loss"]


def test_cnn_reports_a_missing_class(digits):
    train, test = digits
    without = subset(train, ~np.isin(train.labels, ["0", "1"]))
    result = tstr_cnn_accuracy(without, test, CLASSES, epochs=2, seed=0)
    assert result.details["classes_missing_from_train"] == ["0", "1"]
    assert 0.0 <= result.value < 0.85  # a fifth of the test images cannot be right


def test_cnn_rejects_bad_settings(digits):
    train, test = digits
    with pytest.raises(ValueError, match="epochs"):
        tstr_cnn_accuracy(train, test, CLASSES, epochs=0)
    tiny = ArrayData(train.values[:, :, :3, :3], train.labels)
    with pytest.raises(DataError, match="4x4"):
        tstr_cnn_accuracy(tiny, ArrayData(test.values[:, :, :3, :3], test.labels), CLASSES)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cnn_runs_on_a_gpu(digits):
    train, test = digits
    result = tstr_cnn_accuracy(train, test, CLASSES, epochs=CNN_EPOCHS, seed=0, device="cuda")
    assert result.value > 0.9
    assert result.details["device"].startswith("cuda")
