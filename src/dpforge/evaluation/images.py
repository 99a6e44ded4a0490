"""Utility of synthetic images: train on synthetic, test on real (TSTR).

Two measures from the literature this project compares itself with (design.md section 6):

* :func:`tstr_auroc` — the DP-CGAN paper's: scikit-learn logistic regression and MLP trained on
  flattened pixels scaled to [0, 1], one-vs-rest AuROC on the real test images (macro and
  micro averages). DP-CGAN on MNIST at eps = 9.6 reports LR 0.8642, MLP 0.8858.
* :func:`tstr_cnn_accuracy` — GS-WGAN's and Bie et al.'s: a small CNN (two convolutions and a
  fully connected head) trained on the synthetic images, accuracy on the real test images
  (GS-WGAN 0.80, Bie et al. 95.0% on MNIST at eps = 10).

**Real-data reference.** Both functions take any labelled training set: called with the REAL
training images instead of synthetic ones (same classes, same seed) they give the real-data
baseline the published tables print next to each score, e.g.
``tstr_auroc(real_train, real_test, classes)``.

Images are ``ArrayData`` of shape ``(n, channels, height, width)`` with values in the public
pixel range (``pixel_range``, 0..255 for 8-bit images) and one label (text) per image. Class
indices follow the public class list ``classes``, so a synthetic set lacking a class still
lines up with the test set: the class is named in ``details["classes_missing_from_train"]``
and gets predicted probability 0 (AuROC 0.5 for that class) instead of an error.

Evaluating on real data is not differentially private: these scores are for the data steward's
own assessment, like the tabular ones in :mod:`dpforge.evaluation.utility`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError
from dpforge.evaluation.utility import (
    MetricResult,
    Predictions,
    accuracy_scores,
    auroc_scores,
    encode_labels,
    fit_proba,
)

IMAGE_MODELS = ("logistic", "mlp")
_SKLEARN_KIND = {"logistic": "lr", "mlp": "mlp"}  # names of dpforge.evaluation.utility


# -- helpers shared with dpforge.evaluation.series ---------------------------------------------
def checked_classes(classes: Sequence[str]) -> tuple[str, ...]:
    """The public class list as a tuple of distinct strings (at least two)."""
    out = tuple(str(c) for c in classes)
    if len(out) < 2:
        raise DataError(f"TSTR needs at least 2 classes, got {list(out)}")
    if len(set(out)) != len(out):
        raise DataError(f"classes must be distinct, got {list(out)}")
    return out


def checked_values(data: ArrayData, ndim: int, layout: str, role: str) -> np.ndarray:
    """``data.values`` as float64, after checking rank and finiteness (errors name ``role``)."""
    if not isinstance(data, ArrayData):
        raise DataError(f"the {role} set must be an ArrayData, got {type(data).__name__}")
    if data.values.ndim != ndim:
        raise DataError(f"the {role} set must have shape {layout}, got {list(data.values.shape)}")
    if len(data) == 0:
        raise DataError(f"the {role} set has no records")
    values = data.values.astype(np.float64, copy=False)
    if not np.all(np.isfinite(values)):
        raise DataError(f"the {role} set holds missing or infinite values")
    return values


def check_same_shape(train: ArrayData, test: ArrayData) -> None:
    """Training and test records must have one shape, or no classifier can use both."""
    if train.shape != test.shape:
        raise DataError(
            f"training records have shape {list(train.shape)} but test records "
            f"{list(test.shape)}: both must match the schema's shape"
        )


def encode_array_labels(data: ArrayData, classes: tuple[str, ...], role: str) -> np.ndarray:
    """Class index per record; a label outside ``classes`` is an error that names it."""
    if data.labels is None:
        raise DataError(f"the {role} set has no labels: TSTR needs one label per record")
    frame = pd.DataFrame({f"{role} label": np.asarray(data.labels, dtype=object)})
    return encode_labels(frame, f"{role} label", classes)


def prediction_details(pred: Predictions, y_train: np.ndarray, **extra: Any) -> dict[str, Any]:
    """Accuracy, balanced accuracy and what the classifier saw, for a result's details."""
    seen = set(y_train.tolist())
    missing = [c for k, c in enumerate(pred.classes) if k not in seen]
    return {
        **accuracy_scores(pred),
        **pred.info,
        "n_train": len(y_train),
        "n_test": len(pred.y_true),
        "classes_missing_from_train": missing,
        **extra,
    }


def check_models(models: Sequence[str], allowed: Sequence[str]) -> tuple[str, ...]:
    out = tuple(models)
    unknown = [m for m in out if m not in allowed]
    if not out or unknown:
        raise ValueError(f"models must be a non-empty selection of {tuple(allowed)}, got {out}")
    return out


# -- pixels --------------------------------------------------------------------------------------
def _check_range(pixel_range: tuple[float, float]) -> tuple[float, float]:
    low, high = (float(v) for v in pixel_range)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"pixel_range must be two finite numbers, low < high; got {pixel_range}")
    return low, high


def scaled_pixels(data: ArrayData, pixel_range: tuple[float, float], role: str) -> np.ndarray:
    """Images ``(n, C, H, W)`` mapped from the public ``pixel_range`` to [0, 1] (clipped)."""
    low, high = _check_range(pixel_range)
    values = checked_values(data, 4, "(n, channels, height, width)", role)
    return np.clip((values - low) / (high - low), 0.0, 1.0)


def _labelled_pixels(
    synthetic: ArrayData,
    real_test: ArrayData,
    classes: Sequence[str],
    pixel_range: tuple[float, float],
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Checked classes, then scaled images and class indices of the training and test sets."""
    names = checked_classes(classes)
    x_train = scaled_pixels(synthetic, pixel_range, "synthetic")
    x_test = scaled_pixels(real_test, pixel_range, "real test")
    check_same_shape(synthetic, real_test)
    y_train = encode_array_labels(synthetic, names, "synthetic")
    y_test = encode_array_labels(real_test, names, "real test")
    return names, x_train, y_train, x_test, y_test


# -- scikit-learn AuROC (DP-CGAN) -------------------------------------------------------------
def tstr_auroc(
    synthetic: ArrayData,
    real_test: ArrayData,
    classes: Sequence[str],
    models: Sequence[str] = IMAGE_MODELS,
    seed: int = 0,
    pixel_range: tuple[float, float] = (0.0, 255.0),
) -> dict[str, MetricResult]:
    """One-vs-rest AuROC on real test images of classifiers trained on ``synthetic``.

    For each of ``models`` ("logistic": LogisticRegression, "mlp": MLPClassifier with one
    hidden layer of 100, as in :mod:`dpforge.evaluation.utility`), trained on the flattened
    pixels scaled to [0, 1]. Returns ``{model: MetricResult}``; ``value`` is the macro AuROC
    (the DP-CGAN paper's measure), ``details`` hold the micro and weighted averages, per-class
    AuROC, accuracy, balanced accuracy and ``classes_missing_from_train``.
    Pass the real training images as ``synthetic`` for the real-data reference.
    """
    chosen = check_models(models, IMAGE_MODELS)
    names, x_train, y_train, x_test, y_test = _labelled_pixels(
        synthetic, real_test, classes, pixel_range
    )
    flat_train, flat_test = x_train.reshape(len(x_train), -1), x_test.reshape(len(x_test), -1)
    results = {}
    for model in chosen:
        proba, info = fit_proba(
            _SKLEARN_KIND[model], seed, flat_train, y_train, flat_test, len(names)
        )
        pred = Predictions(names, y_test, proba, {**info, "classifier": model, "seed": seed})
        scores = auroc_scores(pred)
        details = {**scores, **prediction_details(pred, y_train), "average": "macro"}
        results[model] = MetricResult(f"tstr_auroc_macro_{model}", scores["macro"], details)
    return results


# -- small CNN accuracy (GS-WGAN, Bie et al.) ------------------------------------------------
def _cnn(channels: int, height: int, width: int, n_classes: int) -> nn.Sequential:
    """conv(16) - ReLU - pool - conv(32) - ReLU - pool - FC(128) - ReLU - FC(classes).

    Built on the meta device so that construction draws nothing from torch's global RNG; the
    caller initialises the weights from its own generator.
    """
    if height < 4 or width < 4:
        raise DataError(f"the CNN needs images of at least 4x4 pixels, got {height}x{width}")
    flat = 32 * (height // 4) * (width // 4)
    with torch.device("meta"):
        return nn.Sequential(
            nn.Conv2d(channels, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(flat, 128),
            nn.ReLU(),
            nn.Linear(128, n_classes),
        )


def _initialise(net: nn.Module, generator: torch.Generator) -> nn.Module:
    """PyTorch's default Conv/Linear initialisation, drawn from ``generator`` (on the CPU)."""
    net = net.to_empty(device="cpu")
    with torch.no_grad():
        for layer in net.modules():
            if isinstance(layer, nn.Conv2d | nn.Linear):
                nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
                bound = 1.0 / math.sqrt(layer.weight[0].numel())
                layer.bias.uniform_(-bound, bound, generator=generator)
    return net


def _train_cnn(
    net: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    epochs: int,
    batch_size: int,
    generator: torch.Generator,
) -> float:
    """Adam (lr 1e-3) on shuffled mini-batches; returns the mean loss of the last epoch."""
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    net.train()
    last = float("nan")
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=generator).to(x.device)
        total = 0.0
        for start in range(0, len(x), batch_size):
            idx = order[start : start + batch_size]
            loss = nn.functional.cross_entropy(net(x[idx]), y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(idx)
        last = total / len(x)
    return last


def _cnn_proba(net: nn.Module, x: torch.Tensor, batch_size: int = 1000) -> np.ndarray:
    net.eval()
    with torch.inference_mode():
        parts = [
            torch.softmax(net(x[s : s + batch_size]), dim=1) for s in range(0, len(x), batch_size)
        ]
    return torch.cat(parts).double().cpu().numpy()


def _as_tensor(pixels: np.ndarray, device: torch.device) -> torch.Tensor:
    """[0, 1] pixels to a float32 tensor centred on 0 ([-1, 1])."""
    return torch.from_numpy((pixels * 2.0 - 1.0).astype(np.float32)).to(device)


def tstr_cnn_accuracy(
    synthetic: ArrayData,
    real_test: ArrayData,
    classes: Sequence[str],
    epochs: int = 3,
    seed: int = 0,
    device: str | torch.device = "cpu",
    batch_size: int = 64,
    pixel_range: tuple[float, float] = (0.0, 255.0),
) -> MetricResult:
    """Accuracy on real test images of a small CNN trained on ``synthetic`` (GS-WGAN's measure).

    Two 3x3 convolutions (16, 32 channels, each followed by 2x2 max-pooling) and a fully
    connected head (128), trained with Adam for ``epochs`` on pixels scaled to [-1, 1].
    All randomness (weights, batch order) comes from a ``torch.Generator`` seeded with
    ``seed``; torch's global RNG is neither read nor advanced. ``details`` hold balanced
    accuracy, macro AuROC, ``classes_missing_from_train``, the last epoch's loss and the
    training time. Pass the real training images as ``synthetic`` for the real-data reference.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    names, x_train, y_train, x_test, y_test = _labelled_pixels(
        synthetic, real_test, classes, pixel_range
    )
    device = torch.device(device)
    generator = torch.Generator().manual_seed(seed)
    net = _initialise(_cnn(*x_train.shape[1:], len(names)), generator).to(device)
    started = time.perf_counter()
    loss = _train_cnn(
        net,
        _as_tensor(x_train, device),
        torch.from_numpy(y_train).to(device),
        epochs,
        batch_size,
        generator,
    )
    seconds = time.perf_counter() - started
    proba = _cnn_proba(net, _as_tensor(x_test, device))
    pred = Predictions(names, y_test, proba, {"classifier": "cnn", "seed": seed})
    details = prediction_details(
        pred,
        y_train,
        auroc_macro=auroc_scores(pred)["macro"],
        epochs=epochs,
        batch_size=batch_size,
        final_train_loss=loss,
        train_seconds=seconds,
        device=str(device),
    )
    return MetricResult("tstr_cnn_accuracy", details["accuracy"], details)
