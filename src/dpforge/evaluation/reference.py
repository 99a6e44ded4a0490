"""A reference classifier trained on REAL training images: label fidelity and Fréchet distance.

* **Label fidelity** — the share of conditional samples that a classifier trained on the real
  training images assigns to the class they were generated for, overall and per class. A
  conditional generator whose samples ignore their label scores near chance (1/K); it is the
  first thing to check when a classifier trained on synthetic images fails.
* **Fréchet distance** — between Gaussians fitted to the reference classifier's penultimate
  features (128 units) of synthetic and real images (the FID formula; the features are our own
  small CNN's, not Inception's, so the values are comparable only with each other).
  :func:`frechet_distance` takes feature rows, so standard Inception features computed by the
  user (e.g. with a locally supplied Inception network) can be passed to it instead.
* **Inception score** — exp(E_x KL(p(y|x) || p(y))) with p(y|x) the reference classifier's
  class probabilities (Salimans et al. 2016, with our classifier in place of Inception): 1 when
  every sample looks alike to it, the number of classes when samples are confidently
  classified and spread evenly over the classes.

Like every score on real data, these are for the data steward's own assessment, not DP.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from scipy import linalg

from dpforge.data.arrays import ArrayData
from dpforge.evaluation.images import (
    _as_tensor,
    _cnn,
    _initialise,
    _train_cnn,
    checked_classes,
    encode_array_labels,
    scaled_pixels,
)
from dpforge.evaluation.utility import MetricResult

__all__ = ["ReferenceClassifier", "frechet_distance", "inception_score", "label_fidelity"]


def label_fidelity(
    predicted: np.ndarray, requested: np.ndarray, classes: Sequence[str]
) -> MetricResult:
    """Share of samples whose predicted class index equals the requested one, per class too."""
    predicted, requested = np.asarray(predicted), np.asarray(requested)
    per_class = {}
    for index, name in enumerate(classes):
        chosen = requested == index
        per_class[name] = float((predicted[chosen] == index).mean()) if chosen.any() else None
    value = float((predicted == requested).mean())
    details = {"per_class": per_class, "chance": 1.0 / len(classes), "n": int(len(requested))}
    return MetricResult("label_fidelity", value, details)


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Fréchet distance between Gaussians fitted to feature rows ``a`` and ``b``."""
    mu_a, mu_b = a.mean(axis=0), b.mean(axis=0)
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    root = np.real(linalg.sqrtm(cov_a @ cov_b))
    return float(((mu_a - mu_b) ** 2).sum() + np.trace(cov_a + cov_b - 2.0 * root))


def inception_score(proba: np.ndarray) -> float:
    """exp of the mean KL divergence between each row of class probabilities and their mean."""
    p = np.clip(np.asarray(proba, dtype=np.float64), 1e-12, 1.0)
    p = p / p.sum(axis=1, keepdims=True)
    marginal = p.mean(axis=0, keepdims=True)
    return float(np.exp((p * (np.log(p) - np.log(marginal))).sum(axis=1).mean()))


class ReferenceClassifier:
    """The evaluation CNN of :mod:`dpforge.evaluation.images`, trained on real images."""

    def __init__(
        self,
        classes: Sequence[str],
        epochs: int = 3,
        seed: int = 0,
        pixel_range: tuple[float, float] = (0.0, 255.0),
        device: str = "cpu",
    ) -> None:
        self.classes = checked_classes(classes)
        self.epochs = epochs
        self.seed = seed
        self.pixel_range = pixel_range
        self.device = torch.device(device)

    def fit(self, real_train: ArrayData) -> ReferenceClassifier:
        x = scaled_pixels(real_train, self.pixel_range, "real training")
        y = encode_array_labels(real_train, self.classes, "real training")
        generator = torch.Generator().manual_seed(self.seed)
        net = _initialise(_cnn(*x.shape[1:], len(self.classes)), generator)
        self.net_ = net.to(self.device)
        tensor = _as_tensor(x, self.device)
        labels = torch.from_numpy(y).to(self.device)
        _train_cnn(self.net_, tensor, labels, self.epochs, 64, generator)
        self.net_.eval()
        return self

    def _run(self, data: ArrayData, role: str, upto: int | None) -> np.ndarray:
        x = _as_tensor(scaled_pixels(data, self.pixel_range, role), self.device)
        layers = self.net_ if upto is None else self.net_[:upto]
        with torch.inference_mode():
            parts = [layers(x[s : s + 1000]) for s in range(0, len(x), 1000)]
        return torch.cat(parts).double().cpu().numpy()

    def predict(self, data: ArrayData, role: str = "synthetic") -> np.ndarray:
        return self._run(data, role, None).argmax(axis=1)

    def proba(self, data: ArrayData, role: str = "synthetic") -> np.ndarray:
        """Class probabilities (softmax of the logits), one row per image."""
        logits = self._run(data, role, None)
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)

    def accuracy(self, data: ArrayData, role: str = "real test") -> float:
        """Share of labelled images classified as their label (how far its labels can be
        trusted when it judges synthetic images)."""
        truth = encode_array_labels(data, self.classes, role)
        return float((self.predict(data, role) == truth).mean())

    def inception_score(self, data: ArrayData, role: str = "synthetic") -> float:
        return inception_score(self.proba(data, role))

    def features(self, data: ArrayData, role: str = "synthetic") -> np.ndarray:
        """The penultimate layer (after the 128-unit ReLU)."""
        return self._run(data, role, len(self.net_) - 1)

    def label_fidelity(self, synthetic: ArrayData) -> MetricResult:
        requested = encode_array_labels(synthetic, self.classes, "synthetic")
        return label_fidelity(self.predict(synthetic), requested, self.classes)

    def frechet(self, synthetic: ArrayData, real: ArrayData) -> float:
        return frechet_distance(self.features(synthetic), self.features(real, "real"))
