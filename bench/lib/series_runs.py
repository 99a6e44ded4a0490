"""The runs of series.py: the data, one fit-sample-score per seed, and the summaries."""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

import dpforge
from dpforge import Synthesizer
from dpforge.data.arrays import ArrayData
from dpforge.datasets.series import load_italy_power_demand
from dpforge.evaluation.reference import label_fidelity
from dpforge.evaluation.series import SERIES_MODELS, nearest_by_dtw, tstr_accuracy
from dpforge.kinds.feature_defaults import feature_anchor_defaults
from dpforge.schema.array import ArraySchema
from dpforge.statistics.features import FeatureAnchorConfig
from dpforge.statistics.particles import MoveSettings, embedding_gap
from lib import harness
from lib.stats import mean_std

METRICS = ("accuracy", "balanced_accuracy")
VALIDATION_SEED = 12345  # the split of the training part used by --validation


def anchor_option(args: argparse.Namespace) -> FeatureAnchorConfig | None:
    """The Synthesizer's ``anchor``: None for the GAN alone, else the defaults with overrides."""
    if args.anchor == "none":
        return None
    given = {
        "share": args.anchor_share,
        "steps": args.anchor_steps,
        "n_features": args.anchor_features,
        "bandwidths": args.anchor_bandwidths,
        "generator_net": args.anchor_generator,
    }
    defaults = feature_anchor_defaults("timeseries")  # what the Synthesizer's "auto" gives series
    return harness.with_overrides(defaults, given)


def load_data(args: argparse.Namespace) -> tuple[ArrayData, ArrayData, ArraySchema, str]:
    """(training series, evaluation series, schema, name of the evaluation set)."""
    train, test, schema = load_italy_power_demand(seed=args.split_seed, test_size=0.3)
    if not args.validation:
        return train, test, schema, "test split (30 %, 329 series)"
    fit_x, val_x, fit_y, val_y = train_test_split(
        train.values, train.labels, test_size=0.2, stratify=train.labels,
        random_state=VALIDATION_SEED,
    )  # fmt: skip
    name = f"validation split (20 %, {len(val_x)} series) of the training part"
    return ArrayData(fit_x, fit_y), ArrayData(val_x, val_y), schema, name


def scores(train: ArrayData, test: ArrayData, schema: ArraySchema, seed: int, window) -> dict:
    """Accuracy and balanced accuracy of each classifier trained on ``train``."""
    results = tstr_accuracy(train, test, schema.classes, SERIES_MODELS, seed=seed, window=window)
    return {
        model: {
            "accuracy": r.value,
            "balanced_accuracy": r.details["balanced_accuracy"],
            "missing_classes": r.details["classes_missing_from_train"],
        }
        for model, r in results.items()
    }


def closeness(synthetic: ArrayData, train: ArrayData, test: ArrayData, window) -> dict:
    """DTW distance from each synthetic series to its nearest training series, next to the
    same distance for the real evaluation series (a series the model never saw)."""
    _, syn = nearest_by_dtw(synthetic, train, window)
    _, real = nearest_by_dtw(test, train, window)
    return {
        "synthetic_to_train_median": float(np.median(syn)),
        "synthetic_to_train_min": float(np.min(syn)),
        "synthetic_to_train_p05": float(np.quantile(syn, 0.05)),
        "heldout_to_train_median": float(np.median(real)),
        "heldout_to_train_min": float(np.min(real)),
        "heldout_to_train_p05": float(np.quantile(real, 0.05)),
    }


def fit_one(args, chosen, config, train, schema, seed: int, private: bool) -> tuple:
    """A fitted Synthesizer and its fit seconds: DP, or the non-private baseline of the same
    code path (epsilon inf) with the private run's epochs."""
    epsilon = args.epsilon if private else math.inf
    sigma = chosen.get("noise_multiplier") if private else None
    epochs = chosen.get("epochs")
    anchor = anchor_option(args)
    alone = anchor is not None and anchor.share >= 1.0
    if not private and epochs is None and not alone:
        epochs = args.private_epochs[seed]  # the private run's, when it calibrated the steps
    synth = Synthesizer(
        schema, method=None if alone else args.method, epsilon=epsilon, delta=args.delta,
        noise_multiplier=sigma, epochs=epochs if sigma is None else None,
        metadata_share=chosen.get("metadata_share", 0.1), method_options=config, seed=seed,
        progress=False, anchor=anchor,
    )  # fmt: skip
    with harness.Timer() as fit:
        synth.fit(train)
    return synth, fit.seconds


def run_seed(args, chosen, config, train, test, schema, seed: int, private: bool) -> dict:
    """Fit, sample len(train) series from the label prior, score; privacy from the ledger."""
    if args.from_models:  # the folders an earlier run saved: sampling settings compared
        synth = dpforge.load(model_path(args.from_models, seed, private))
        synth.anchor_, fit_seconds = anchor_option(args), math.nan
    else:
        synth, fit_seconds = fit_one(args, chosen, config, train, schema, seed, private)
    if args.save_models:
        synth.save(model_path(args.save_models, seed, private), overwrite=True)
    synthetic = synth.sample(len(train), seed=10_000 + seed, move=move_option(args))
    report = synth.privacy_spent()
    channel = synth.schema_.channels[0]
    labels, counts = np.unique(synthetic.labels.astype(str), return_counts=True)
    plan = synth.plan_
    run = {
        "seed": seed,
        "private": private,
        "fit_seconds": fit_seconds,
        "epsilon_pld": math.nan if report.epsilon_pld is None else report.epsilon_pld,
        "epsilon_rdp": report.epsilon_rdp,
        "accountant": report.accountant,
        "steps": plan.steps,
        "epochs": plan.steps * plan.sample_rate,
        "sample_rate": plan.sample_rate,
        "noise_multiplier": plan.noise_multiplier,
        "channel_range": [channel.lower, channel.upper],
        "synthetic_label_counts": dict(zip(labels.tolist(), counts.tolist(), strict=True)),
        "synthetic_value_range": [float(synthetic.values.min()), float(synthetic.values.max())],
        "tstr": scores(synthetic, test, schema, seed, args.window),
        "label_fidelity": label_fidelity_rf(train, synthetic, schema, seed),
        "ledger": [entry.name for entry in synth.ledger_.entries],
        "anchor": None if synth.anchor_ is None else asdict(synth.anchor_),
        "anchor_noise_multiplier": anchor_noise(synth),
        "generator": [synth.config_.generator_net, list(synth.config_.generator_hidden)],
        "method_config": asdict(synth.config_),
    }
    run["closeness"] = closeness(synthetic, train, test, args.window)
    run["move"] = args.move
    if args.move == "both":  # the same draws unmoved: the same-run baseline of moving
        run["unmoved"] = unmoved(synth, train, test, schema, seed, args.window)
        run["embedding_gap"] = {"moved": gap(synth, synthetic), **run["unmoved"].pop("gap")}
    if args.move == "both" and getattr(args, "pool", None) is not None:
        run["pool"] = args.pool  # the library's default moving of the same seed, side by side
        default = synth.sample(len(train), seed=10_000 + seed, move=MoveSettings())
        run["default_moved"] = {"tstr": scores(default, test, schema, seed, args.window),
                                "gap": gap(synth, default)}  # fmt: skip
    return run, synth, synthetic


def model_path(folder: str, seed: int, private: bool) -> str:
    return f"{folder}/{'dp' if private else 'np'}_seed{seed}"


MOVE = {"both": True, "yes": True, "no": False, "default": None}


def move_option(args) -> bool | MoveSettings | None:
    """``sample``'s ``move``: ``--move``, with ``--pool`` (herded selection) when given."""
    pool = getattr(args, "pool", None)
    if pool is None or not MOVE[args.move]:
        return MOVE[args.move]
    return MoveSettings(pool=pool)


def unmoved(synth, train, test, schema, seed: int, window) -> dict:
    """The same draws (same sampling seed) scored without moving."""
    plain = synth.sample(len(train), seed=10_000 + seed, move=False)
    return {
        "tstr": scores(plain, test, schema, seed, window),
        "label_fidelity": label_fidelity_rf(train, plain, schema, seed),
        "closeness": closeness(plain, train, test, window),
        "gap": {"unmoved": gap(synth, plain)},
    }


def gap(synth, synthetic: ArrayData) -> float:
    """Squared distance of the samples' per-class mean embedding to the released one."""
    x, labels = synth.encoder_.transform(synthetic)
    loss = synth.sample_release_.loss()
    return embedding_gap(torch.as_tensor(x), torch.as_tensor(labels), loss)


def anchor_noise(synth) -> float | None:
    """The noise multiplier of the feature anchoring's release (from its ledger event)."""
    for entry in synth.ledger_.entries:
        if entry.name.startswith("anchor"):
            return getattr(entry.event, "noise_multiplier", 0.0)
    return None


def label_fidelity_rf(train: ArrayData, synthetic: ArrayData, schema, seed: int) -> dict:
    """Share of synthetic series that a random forest trained on the REAL training series
    assigns to the class they were generated for (overall and per class)."""
    classes = list(schema.classes)
    forest = RandomForestClassifier(n_estimators=200, random_state=seed)
    forest.fit(train.values.reshape(len(train), -1), [classes.index(c) for c in train.labels])
    predicted = forest.predict(synthetic.values.reshape(len(synthetic), -1))
    requested = np.array([classes.index(c) for c in synthetic.labels])
    result = label_fidelity(predicted, requested, classes)
    return {"overall": result.value, "per_class": result.details["per_class"]}


def describe(run: dict) -> str:
    """One run on one console line."""
    t = run["tstr"]
    return (
        f"seed {run['seed']} ({'DP' if run['private'] else 'non-private'}): RF acc "
        f"{t['random_forest']['accuracy']:.4f}, 1-NN DTW acc {t['knn_dtw']['accuracy']:.4f}; "
        f"eps PLD {run['epsilon_pld']:.3f} / RDP {run['epsilon_rdp']:.3f}, {run['steps']} steps, "
        f"sigma {run['noise_multiplier']:.3f}, range {run['channel_range']}, "
        f"{run['fit_seconds']:.0f} s"
        + (
            f"; unmoved 1-NN DTW {run['unmoved']['tstr']['knn_dtw']['accuracy']:.4f}, "
            f"embedding gap {run['embedding_gap']}"
            if "unmoved" in run
            else ""
        )
        + (
            f"; default moved (pool 1) 1-NN DTW "
            f"{run['default_moved']['tstr']['knn_dtw']['accuracy']:.4f}"
            if "default_moved" in run
            else ""
        )
    )


def summarise(runs: list[dict]) -> dict[str, Any]:
    """Mean ± std over seeds of every figure of the runs."""
    out: dict[str, Any] = {}
    if not runs:
        return out
    for model in SERIES_MODELS:
        for metric in METRICS:
            out[f"{model}_{metric}"] = mean_std([r["tstr"][model][metric] for r in runs])
    for key in ("fit_seconds", "epsilon_pld", "epsilon_rdp", "noise_multiplier", "steps"):
        out[key] = mean_std([float(r[key]) for r in runs])
    if "closeness" in runs[0]:
        for key in runs[0]["closeness"]:
            out[key] = mean_std([r["closeness"][key] for r in runs])
    if "unmoved" in runs[0]:
        for model in SERIES_MODELS:
            out[f"unmoved_{model}_accuracy"] = mean_std(
                [r["unmoved"]["tstr"][model]["accuracy"] for r in runs]
            )
    if "default_moved" in runs[0]:
        for model in SERIES_MODELS:
            out[f"default_moved_{model}_accuracy"] = mean_std(
                [r["default_moved"]["tstr"][model]["accuracy"] for r in runs]
            )
    return out


def summarise_real(real: list[dict]) -> dict[str, Any]:
    """Mean ± std over seeds of the real-data reference."""
    out: dict[str, Any] = {}
    for model in SERIES_MODELS:
        for metric in METRICS:
            if real:
                out[f"{model}_{metric}"] = mean_std([r["tstr"][model][metric] for r in real])
    return out
