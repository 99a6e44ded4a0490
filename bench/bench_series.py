"""A method (DP-WGAN with the LSTM generator by default) on UCR ItalyPowerDemand: train on
synthetic series, test on real ones.

Data: the 1,096 daily curves of 24 hourly values (2 classes: 1 = October-March, 2 = April-
September) pooled from the UCR train/test files and split 70/30, stratified and seeded
(``dpforge.datasets.series.load_italy_power_demand``): 767 training, 329 test series. Public:
the length 24 and the two classes; the channel's value range is NOT public, ``fit`` estimates it
under DP and charges it to the same (epsilon, delta) as training; the label prior is uniform
(free).

For each seed: fit ``Synthesizer(method=..., epsilon=...)`` on the training series, sample as
many series as the training set (labels from the prior), and score on the real test series two
classifiers trained on the synthetic series (``dpforge.evaluation.series.tstr_accuracy``: a
random forest on the raw values and 1-nearest-neighbour by DTW): accuracy and balanced accuracy.
The same classifiers trained on the real training series give the real-data reference. The
non-private baseline of the same code path (epsilon = inf, sigma = 0, C = inf, the same number
of epochs as the private run) is run for the same seeds unless ``--no-baseline``. Privacy
figures (PLD and RDP) come from each run's ledger. Also recorded: how close the synthetic series
are to training records (DTW distance to the nearest training series, next to the same distance
for real test series), and two PNGs (``--out``'s stem + ``_nearest.png``: generated series over
their nearest training series by DTW; ``_per_class.png``: generated series per class next to
real ones).

``--validation`` is for tuning: it splits the TRAINING part 80/20 (stratified, seeded), fits on
the 80 % and scores on the 20 %; the test split is not read. Each validation run appends a line
to ``--tuning-log``; the reported run lists that log in its markdown. The selection is not
privacy-accounted (the reported epsilon covers one training run with the chosen settings).

Reported run (from bench/; about 6 minutes on 2 shared cores, 1 torch thread)::

    cd bench && python bench_series.py --seeds 3 --tuning-log results/italy_dpwgan_tuning.jsonl \\
        --out results/italy_dpwgan.json --notes results/italy_dpwgan_notes.md

``--render results/italy_dpwgan.json`` (with ``--tuning-log`` and ``--notes``) rewrites the
markdown of an earlier run without training.

A validation run::

    cd bench && python bench_series.py --validation --seeds 2 --no-baseline --batch-size 64 \\
        --tuning-log results/italy_dpwgan_tuning.jsonl --note "B=64"
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

from bench_common import floats, machine, widths, with_overrides  # noqa: E402 (bench/ is on sys.path when run)
from dpforge import Synthesizer
from dpforge.data.arrays import ArrayData
from dpforge.datasets.series import load_italy_power_demand
from dpforge.evaluation.reference import label_fidelity
from dpforge.evaluation.series import SERIES_MODELS, nearest_by_dtw, plot_nearest, tstr_accuracy
from dpforge.methods import METHODS
from dpforge.nets.families import DISCRIMINATORS, GENERATORS, TIMESERIES
from dpforge.schema.array import ArraySchema
from dpforge.statistics.features import FeatureAnchorConfig, feature_anchor_defaults

METRICS = ("accuracy", "balanced_accuracy")
VALIDATION_SEED = 12345  # the split of the training part used by --validation
# The settings chosen on the validation split (tuning log in the markdown). Options given on
# the command line override them; --defaults runs the config's own defaults instead.
# Picked on validation with the library as of commit 0a721bc (tuning rows 16-21): the MLP
# critic (the default) and 300 epochs; the conv critic's generated curves left the data (median
# DTW to the nearest real series 91 vs 5), 100-150 epochs learnt nothing class-specific.
TUNED: dict[str, Any] = {"generator_net": "lstm", "discriminator_net": "mlp", "epochs": 300.0}


# -- arguments -----------------------------------------------------------------------------------
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
    return with_overrides(defaults, given)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--method", default="dpwgan", choices=sorted(METHODS))
    p.add_argument("--epsilon", type=float, default=3.0)
    p.add_argument("--delta", type=float, default=1e-4, help="below 1/N = 1/767")
    p.add_argument("--seeds", type=int, default=3, help="number of seeds (first-seed, ...)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--split-seed", type=int, default=0, help="seed of the 70/30 train/test split")
    p.add_argument("--out", default=None, help="results JSON (markdown, PNGs next to it)")
    p.add_argument("--validation", action="store_true", help="score on a split of the train part")
    p.add_argument("--tuning-log", default=None, help="JSON lines: appended to (--validation), "
                   "listed in the markdown (reported run)")  # fmt: skip
    p.add_argument("--note", default="", help="what this validation run tries (tuning log)")
    p.add_argument("--notes", default=None, help="markdown file appended to the report")
    p.add_argument(
        "--render", default=None, metavar="JSON",
        help="no training: rewrite the markdown of this results JSON (with --tuning-log, --notes)",
    )  # fmt: skip
    p.add_argument("--no-real", action="store_true", help="skip the real-data reference")
    p.add_argument("--no-baseline", action="store_true", help="skip the non-private baseline")
    p.add_argument("--defaults", action="store_true", help="ignore TUNED: the config's defaults")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: shared 2-core box)")
    p.add_argument("--window", type=int, default=None, help="Sakoe-Chiba radius of 1-NN DTW")
    p.add_argument(
        "--anchor", default="auto", choices=("auto", "none"),
        help="auto: the Synthesizer's default feature anchoring; none: the GAN alone",
    )  # fmt: skip
    p.add_argument("--anchor-share", type=float, default=None)
    p.add_argument("--anchor-steps", type=int, default=None)
    p.add_argument("--anchor-features", type=int, default=None)
    p.add_argument("--anchor-bandwidths", type=floats, default=None)
    p.add_argument("--anchor-generator", default=None, help="the anchored generator: conv, mlp")
    g = p.add_argument_group("training (unset: TUNED, then the method config's defaults)")
    g.add_argument("--noise-multiplier", type=float, default=None)
    g.add_argument("--epochs", type=float, default=None)
    g.add_argument("--metadata-share", type=float, default=None, help="default 0.1")
    g.add_argument("--generator", dest="generator_net", default=None, help="lstm or mlp")
    g.add_argument("--discriminator", dest="discriminator_net", default=None, help="mlp or conv")
    g.add_argument("--batch-size", type=int, default=None)
    g.add_argument("--d-steps", type=int, default=None, help="critic steps per G step")
    g.add_argument("--clip-norm", type=float, default=None)
    g.add_argument("--latent-dim", type=int, default=None)
    g.add_argument("--generator-hidden", type=widths, default=None, help="LSTM: first = hidden")
    g.add_argument("--discriminator-hidden", type=widths, default=None, help="e.g. 128,128")
    g.add_argument("--discriminator-channels", type=widths, default=None, help="conv critic")
    g.add_argument("--d-lr", type=float, default=None)
    g.add_argument("--d-beta1", type=float, default=None, help="critic Adam beta1")
    g.add_argument("--g-lr", type=float, default=None)
    g.add_argument("--optimizer", default=None, help="adam or sgd (critic)")
    g.add_argument("--gp-weight", type=float, default=None)
    g.add_argument("--ema-decay", type=float, default=None)
    g.add_argument("--clip-decay", type=float, default=None)
    g.add_argument("--clip-decay-every", type=int, default=None)
    return p.parse_args(argv)


RUN_KEYS = ("noise_multiplier", "epochs", "metadata_share")


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Config fields and run options: TUNED (unless --defaults), overridden by the options given."""
    config_fields = {f.name for f in fields(METHODS[args.method][1])}
    anchor = anchor_option(args)
    # TUNED is the GAN's; anchored runs start from the Synthesizer's defaults
    chosen = {} if args.defaults or anchor is not None else dict(TUNED)
    for key, value in vars(args).items():
        if value is not None and (key in config_fields or key in RUN_KEYS):
            chosen[key] = value
    if chosen.get("noise_multiplier") is not None:
        chosen.pop("epochs", None)  # sigma given: steps calibrated (unless epsilon is inf)
    return chosen


def make_config(args: argparse.Namespace, chosen: dict[str, Any]):
    """The method's config from the chosen fields; None (the Synthesizer's defaults, e.g. the
    anchored generator) when none was chosen."""
    if not any(k not in RUN_KEYS for k in chosen):
        return None
    config_cls = METHODS[args.method][1]
    return config_cls(**{k: v for k, v in chosen.items() if k not in RUN_KEYS})


# -- data ------------------------------------------------------------------------------------------
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


# -- one run -------------------------------------------------------------------------------------
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
    epsilon = args.epsilon if private else math.inf
    sigma = chosen.get("noise_multiplier") if private else None
    epochs = chosen.get("epochs")
    anchor = anchor_option(args)
    alone = anchor is not None and anchor.share >= 1.0
    if not private and epochs is None and not alone:
        epochs = args.private_epochs[seed]  # the private run's, when it calibrated the steps
    synth = Synthesizer(
        schema, method=args.method, epsilon=epsilon, delta=args.delta,
        noise_multiplier=sigma, epochs=epochs if sigma is None else None,
        metadata_share=chosen.get("metadata_share", 0.1), method_options=config, seed=seed,
        progress=False, anchor=anchor,
    )  # fmt: skip
    start = time.perf_counter()
    synth.fit(train)
    return synth, time.perf_counter() - start


def run_seed(args, chosen, config, train, test, schema, seed: int, private: bool) -> dict:
    """Fit, sample len(train) series from the label prior, score; privacy from the ledger."""
    synth, fit_seconds = fit_one(args, chosen, config, train, schema, seed, private)
    synthetic = synth.sample(len(train), seed=10_000 + seed)
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
    return run, synth, synthetic


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
    t = run["tstr"]
    return (
        f"seed {run['seed']} ({'DP' if run['private'] else 'non-private'}): RF acc "
        f"{t['random_forest']['accuracy']:.4f}, 1-NN DTW acc {t['knn_dtw']['accuracy']:.4f}; "
        f"eps PLD {run['epsilon_pld']:.3f} / RDP {run['epsilon_rdp']:.3f}, {run['steps']} steps, "
        f"sigma {run['noise_multiplier']:.3f}, range {run['channel_range']}, "
        f"{run['fit_seconds']:.0f} s"
    )


# -- plots ---------------------------------------------------------------------------------------
def by_class(data: ArrayData, classes, per_class: int) -> ArrayData:
    """The first ``per_class`` series of each class, class after class."""
    index = np.concatenate(
        [np.flatnonzero(data.labels.astype(str) == c)[:per_class] for c in classes]
    )
    return ArrayData(data.values[index], data.labels[index])


def plot_per_class(synthetic: ArrayData, real: ArrayData, classes, path: Path, n: int = 10):
    """A 2 x K grid: ``n`` generated series per class (top), ``n`` real training series of the
    same class (bottom), on common axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4.2 * len(classes), 5.6), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(2, len(classes), sharex=True, sharey=True, squeeze=False)
    for col, name in enumerate(classes):
        for row, (data, what) in enumerate(((synthetic, "generated"), (real, "real (train)"))):
            values = by_class(data, [name], n).values[:, 0]
            ax = axes[row, col]
            for k, series in enumerate(values):
                ax.plot(series, color=f"C{k % 10}", linewidth=1.0, alpha=0.8)
            ax.set_title(f"{what}, class {name} ({len(values)} series)", fontsize=9)
            ax.tick_params(labelsize=7)
            ax.set_xlabel("hour", fontsize=8)
    figure.suptitle("ItalyPowerDemand: generated vs real daily curves per class", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=100)
    return path


def write_plots(out: Path, synthetic: dict[str, ArrayData], train: ArrayData, classes) -> dict:
    """PNGs next to ``out``: nearest-by-DTW pairs and generated series per class."""
    stem = out.with_suffix("")
    files = {}
    for key, data in synthetic.items():
        suffix = "" if key == "private" else "_nonprivate"
        nearest = Path(f"{stem}{suffix}_nearest.png")
        plot_nearest(by_class(data, classes, 3), train, nearest, n=6, overwrite=True)
        per_class = plot_per_class(data, train, classes, Path(f"{stem}{suffix}_per_class.png"))
        files[key] = {"nearest": nearest.name, "per_class": per_class.name}
    return files


def command_line(argv: list[str] | None) -> str:
    """The command as typed, prefixed with ``cd <dir> &&`` when not run from the repository
    root (the relative paths in it are then relative to that folder)."""
    if argv is not None:
        return " ".join(argv)
    root = Path(__file__).resolve().parent.parent
    here = Path.cwd().resolve()
    text = " ".join(["python", *sys.argv])
    if here != root and here.is_relative_to(root):
        text = f"cd {here.relative_to(root)} && {text}"
    return text


def git_state() -> dict[str, Any]:
    """The commit the library ran from and the files of src/ that differed from it."""
    import subprocess

    root = Path(__file__).resolve().parent.parent

    def git(*a: str) -> str:
        done = subprocess.run(["git", *a], cwd=root, capture_output=True, text=True)
        return done.stdout.rstrip() if done.returncode == 0 else ""

    dirty = git("status", "--porcelain", "--", "src")
    return {
        "commit": git("rev-parse", "--short", "HEAD") or None,
        "src_modified": [line[3:] for line in dirty.splitlines()],
    }


# -- summary ---------------------------------------------------------------------------------------
def mean_std(values: list[float]) -> dict[str, float]:
    if not all(math.isfinite(v) for v in values):  # a non-private baseline: epsilon = inf
        return {"mean": math.inf, "std": 0.0, "n": len(values)}
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.fmean(values), "std": std, "n": len(values)}


def summarise(runs: list[dict]) -> dict[str, Any]:
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
    return out


def fmt(stat: dict[str, float] | None, digits: int = 4) -> str:
    if not stat:
        return "-"
    if not math.isfinite(stat["mean"]):
        return "∞"
    return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"


def print_table(result: dict[str, Any]) -> None:
    s = result["summary"]
    print(f"\nTSTR on {result['evaluation_set']} (mean ± std over seeds)")
    print(f"{'classifier':<14} {'metric':<18} {'DP synthetic':>18} {'non-private':>18} "
          f"{'real':>18}")  # fmt: skip
    for model in SERIES_MODELS:
        for metric in METRICS:
            key = f"{model}_{metric}"
            print(
                f"{model:<14} {metric:<18} {fmt(s['private'].get(key)):>18} "
                f"{fmt(s['baseline'].get(key)):>18} {fmt(s['real'].get(key)):>18}"
            )
    p = s["private"]
    print(
        f"epsilon PLD {fmt(p['epsilon_pld'], 3)}, RDP {fmt(p['epsilon_rdp'], 3)}; "
        f"fit {fmt(p['fit_seconds'], 1)} s"
    )


# -- markdown ------------------------------------------------------------------------------------
def markdown(result: dict[str, Any], tuning: list[dict], notes: str) -> str:
    s, m, cfg = result["summary"], result["machine"], result["config"]
    p, b, r = s["private"], s["baseline"], s["real"]
    run0 = result["runs"][0]
    base0 = result["baseline_runs"][0] if result["baseline_runs"] else None
    files = result.get("plots", {})
    g_net, d_net = resolved_nets(cfg)
    lines = [
        f"# {result['method']} ({g_net} generator, {d_net} "
        "critic) on UCR ItalyPowerDemand: train on synthetic, test on real",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Machine: {m['cpu_count']} CPU cores ({m['processor']}), {m['platform']}, Python "
        f"{m['python']}, torch {m['torch']} ({m['torch_threads']} thread(s)); shared with "
        "another benchmark running at the same time, so wall times are pessimistic.",
        "",
        f"Code: dpforge at commit {result['git']['commit']}"
        + (
            f" with uncommitted changes in {', '.join(result['git']['src_modified'])}"
            if result["git"]["src_modified"]
            else ""
        )
        + ".",
        "",
        f"Data: the 1,096 UCR curves (24 hourly values, 2 classes) pooled and split 70/30 "
        f"(stratified, split seed {result['split_seed']}): {result['n_train']} training series, "
        f"evaluation on the {result['evaluation_set']}. Seeds: {result['seeds']}. Synthetic "
        f"series per seed: {result['n_train']} (as many as the training set), labels drawn from "
        "the uniform prior.",
        "",
        "## Privacy",
        "",
        f"- Target (ε, δ) = ({result['epsilon']:g}, {result['delta']:g}), metadata included; "
        f"δ = {result['delta']:g} is below 1/N = {1 / result['n_train']:.2e} (N = "
        f"{result['n_train']}). {result['metadata_share']:.0%} of ε and δ pays for the "
        "channel's value range, which is NOT public: estimated under DP (one noisy histogram "
        "each of the per-series minima and maxima on a public quarter-octave grid, Gaussian "
        "noise, charged to the ledger: dpforge.data.metadata.channel_bound). "
        f"Estimated range per seed: {', '.join(str(x['channel_range']) for x in result['runs'])} "
        f"(the true range of the training series is [{result['train_range'][0]:.3f}, "
        f"{result['train_range'][1]:.3f}]). The length 24 and the two classes are public "
        "(UCR documentation); the label prior is uniform (free).",
        f"- Spent (ledger, metadata + training): ε = {fmt(p['epsilon_pld'], 3)} (PLD, "
        f"reported), {fmt(p['epsilon_rdp'], 3)} (RDP) at δ = {result['delta']:g}.",
        anchor_line(run0),
        f"- Critic steps {run0['steps']} ({run0['epochs']:.1f} epochs), Poisson sampling rate "
        f"q = {run0['sample_rate']:.5f} (batch {cfg['batch_size']} / {result['n_train']}), "
        f"noise multiplier σ = {run0['noise_multiplier']:.4f}, clip norm C = "
        f"{cfg['clip_norm']}, n_critic = {cfg['d_steps']}.",
        f"- Fit wall time: {fmt(p['fit_seconds'], 1)} s per seed (DP), "
        f"{fmt(b.get('fit_seconds'), 1)} s (non-private).",
        "- Non-private baseline: the same code path with ε = ∞ (σ = 0, C = ∞; the channel "
        "range from the same histograms without noise: "
        + (f"{base0['channel_range']}" if base0 else "-")
        + "), the same config and the same number of steps"
        + (f" ({base0['steps']})" if base0 else "")
        + "; its ledger holds NonPrivateDpEvents, so PLD and RDP both give ε = "
        f"{fmt(b.get('epsilon_pld'), 3)} / {fmt(b.get('epsilon_rdp'), 3)}.",
        "- Hyperparameters were selected on a validation split of the TRAINING part (see "
        "Tuning); the test split was never read for it. This selection is NOT privacy-accounted: "
        "the ε above covers one training run with the chosen hyperparameters.",
        "",
        "## Results (mean ± std over seeds)",
        "",
        "Classifiers trained on the series in the column, scored on the real series of the "
        f"{result['evaluation_set']}. "
        "Random forest: 200 trees on the 24 raw values; 1-NN DTW: nearest training series by "
        "dynamic time warping (unconstrained window).",
        "",
        "| classifier | metric | DP synthetic (ε = 3) | non-private synthetic (ε = ∞) | real "
        "training series |",
        "|---|---|---|---|---|",
    ]
    for model in SERIES_MODELS:
        for metric in METRICS:
            key = f"{model}_{metric}"
            lines.append(
                f"| {model} | {metric.replace('_', ' ')} | {fmt(p.get(key))} | "
                f"{fmt(b.get(key))} | {fmt(r.get(key))} |"
            )
    lines += ["", "Per seed (DP): " + "; ".join(per_seed(x) for x in result["runs"]) + "."]
    if result["baseline_runs"]:
        lines.append(
            "Per seed (non-private): "
            + "; ".join(per_seed(x) for x in result["baseline_runs"])
            + "."
        )
    if "synthetic_to_train_median" in p:
        lines += [
            "",
            "## Closeness to training records (DTW, squared distances)",
            "",
            "| series | median distance to nearest training series | 5 % quantile | minimum |",
            "|---|---|---|---|",
            f"| DP synthetic | {fmt(p['synthetic_to_train_median'], 3)} | "
            f"{fmt(p['synthetic_to_train_p05'], 3)} | {fmt(p['synthetic_to_train_min'], 3)} |",
        ]
        if "synthetic_to_train_median" in b:
            lines.append(
                f"| non-private synthetic | {fmt(b['synthetic_to_train_median'], 3)} | "
                f"{fmt(b['synthetic_to_train_p05'], 3)} | {fmt(b['synthetic_to_train_min'], 3)} |"
            )
        lines.append(
            f"| real test series (held out) | {fmt(p['heldout_to_train_median'], 3)} | "
            f"{fmt(p['heldout_to_train_p05'], 3)} | {fmt(p['heldout_to_train_min'], 3)} |"
        )
    if files:
        lines += ["", "## Plots (seed " + str(result["seeds"][0]) + ")", ""]
        for key, what in (("private", "DP (ε = 3)"), ("baseline", "non-private")):
            if key in files:
                lines.append(
                    f"- {what}: `{files[key]['nearest']}` (3 generated series per class, solid, "
                    f"over their nearest training series by DTW, dashed), "
                    f"`{files[key]['per_class']}` (10 generated series per class above 10 real "
                    "ones)."
                )
    lines += ["", "## Configuration", "", "```json", json.dumps(cfg, indent=2), "```"]
    if tuning:
        lines += ["", *tuning_markdown(tuning)]
    if notes.strip():
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"


def anchor_line(run: dict) -> str:
    """What the feature anchoring of a run released and trained (or that it had none)."""
    anchor = run.get("anchor")
    if not anchor:
        return "- No feature anchoring (the GAN alone)."
    fid = run["label_fidelity"]
    return (
        f"- Feature anchoring (share {anchor['share']:g}): one Gaussian release of per-class "
        f"sums of {anchor['n_features']} random Fourier frequencies per view (values, first "
        f"differences; bandwidths {anchor['bandwidths']}) and class counts, noise multiplier "
        f"{run['anchor_noise_multiplier']:.4f}; generator {run['generator'][0]} "
        f"{run['generator'][1]} trained {anchor['steps']} steps to match it. Label fidelity "
        f"(random forest trained on the real training series labels the synthetic ones as "
        f"requested): {fid['overall']:.3f} (per class {fid['per_class']}). Ledger: "
        + "; ".join(run["ledger"])
        + "."
    )


def resolved_nets(cfg: dict[str, Any]) -> tuple[str, str]:
    """The network families a config gets on time series ("auto": the first listed)."""
    g, d = cfg["generator_net"], cfg["discriminator_net"]
    return (
        GENERATORS[TIMESERIES][0] if g == "auto" else g,
        DISCRIMINATORS[TIMESERIES][0] if d == "auto" else d,
    )


def per_seed(run: dict) -> str:
    t = run["tstr"]
    return (
        f"seed {run['seed']}: RF {t['random_forest']['accuracy']:.3f}, "
        f"1-NN DTW {t['knn_dtw']['accuracy']:.3f}"
    )


def tuning_markdown(rows: list[dict]) -> list[str]:
    out = [
        "## Tuning (validation split of the training part; the test split never read)",
        "",
        "Fit on 80 % of the training part (613 series), scored on the other 20 % (154 series); "
        "mean ± std over the seeds given. NOT privacy-accounted.",
        "",
        "DTW: median over synthetic series of the DTW distance to the nearest series of the fit "
        "part (for real held-out series it is about 0.2); a large value means the generated "
        "curves are far from any real one. Commit: the library version the row ran with (+: "
        "with uncommitted changes in src/); the library changed while tuning, see the notes.",
        "",
        "| # | settings (changes from DPWGANConfig defaults) | seeds | steps | σ | RF acc | 1-NN "
        "DTW acc | DTW | fit s | commit | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows, start=1):
        seeds = ",".join(str(s) for s in r.get("seeds", []))
        out.append(
            f"| {i} | {r['change']} | {seeds} | {r['steps']} | {r['sigma']} | {r['rf']} | "
            f"{r['knn']} | {r.get('dtw', '-')} | {r['fit_seconds']} | {r.get('commit', '-')} | "
            f"{r.get('note', '')} |"
        )
    return out


def read_tuning_log(path: str | None) -> list[dict]:
    if path is None or not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def append_tuning(result: dict[str, Any], chosen: dict[str, Any], args, path: Path) -> None:
    p = result["summary"]["private"]
    defaults = asdict(METHODS[args.method][1]())
    change = ", ".join(
        [f"{k}={v}" for k, v in chosen.items() if k in RUN_KEYS or defaults.get(k) != v]
        + [f"{k}={v}" for k, v in vars(args).items() if k.startswith("anchor_") and v is not None]
    )
    row = {
        "change": change or "defaults",
        "steps": int(p["steps"]["mean"]),
        "sigma": round(p["noise_multiplier"]["mean"], 3),
        "rf": fmt(p["random_forest_accuracy"], 3),
        "knn": fmt(p["knn_dtw_accuracy"], 3),
        "fit_seconds": round(p["fit_seconds"]["mean"]),
        "dtw": fmt(p["synthetic_to_train_median"], 2),
        "heldout_dtw": round(p["heldout_to_train_median"]["mean"], 3),
        "seeds": result["seeds"],
        "commit": result["git"]["commit"] + ("+" if result["git"]["src_modified"] else ""),
        "epsilon": args.epsilon,
        "note": args.note,
    }
    b = result["summary"]["baseline"]
    if b:  # the non-private run of the same settings, when it was run too
        row["note"] = (
            f"{args.note} (non-private, same steps: RF {fmt(b['random_forest_accuracy'], 3)}, "
            f"1-NN DTW {fmt(b['knn_dtw_accuracy'], 3)})"
        ).strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"appended to {path}")


# -- main ------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.render:
        return render(args)
    code = git_state()  # at the start: other people may commit while this runs
    torch.set_num_threads(args.threads)
    chosen = settings(args)
    config = make_config(args, chosen)
    train, test, schema, eval_name = load_data(args)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    runs, baseline_runs, synthetic, args.private_epochs = [], [], {}, {}
    for seed in seeds:
        run, synth, data = run_seed(args, chosen, config, train, test, schema, seed, True)
        runs.append(run)
        args.private_epochs[seed] = run["epochs"]
        synthetic.setdefault("private", data)
        print(describe(run), flush=True)
    if not args.no_baseline:
        for seed in seeds:
            run, synth, data = run_seed(args, chosen, config, train, test, schema, seed, False)
            baseline_runs.append(run)
            synthetic.setdefault("baseline", data)
            print(describe(run), flush=True)
    real = [] if args.no_real else [{"tstr": scores(train, test, schema, s, args.window)}
                                     for s in seeds]  # fmt: skip
    result = {
        "command": command_line(argv),
        "machine": machine(),
        "git": code,
        "evaluation_set": eval_name,
        "method": args.method,
        "n_train": len(train),
        "n_eval": len(test),
        "train_range": [float(train.values.min()), float(train.values.max())],
        "split_seed": args.split_seed,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "metadata_share": chosen.get("metadata_share", 0.1),
        "seeds": seeds,
        "config": {
            **runs[0]["method_config"],
            "noise_multiplier": chosen.get("noise_multiplier"),
            "epochs": chosen.get("epochs"),
        },  # fmt: skip
        "summary": {
            "private": summarise(runs),
            "baseline": summarise(baseline_runs),
            "real": summarise_real(real),
        },
        "runs": runs,
        "baseline_runs": baseline_runs,
        "real": real,
    }
    print_table(result)
    if args.validation and args.tuning_log:
        append_tuning(result, chosen, args, Path(args.tuning_log))
    if args.out:
        out = Path(args.out)
        if not args.validation:
            result["plots"] = write_plots(out, synthetic, train, schema.classes)
        tuning = [] if args.validation else read_tuning_log(args.tuning_log)
        result["tuning"] = tuning
        notes = Path(args.notes).read_text() if args.notes else ""
        write_results(result, out, tuning, notes)
    return result


def render(args: argparse.Namespace) -> dict[str, Any]:
    """Rewrite the markdown next to an earlier results JSON; the command it shows gains the
    ``--notes`` given (running that command gives the same files)."""
    out = Path(args.render)
    result = _restore(json.loads(out.read_text()))
    if args.notes and "--notes" not in result["command"]:
        result["command"] += f" --notes {args.notes}"
    tuning = read_tuning_log(args.tuning_log) if args.tuning_log else result.get("tuning", [])
    result["tuning"] = tuning
    notes = Path(args.notes).read_text() if args.notes else ""
    write_results(result, out, tuning, notes)
    return result


def summarise_real(real: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model in SERIES_MODELS:
        for metric in METRICS:
            if real:
                out[f"{model}_{metric}"] = mean_std([r["tstr"][model][metric] for r in real])
    return out


def write_results(result: dict[str, Any], out: Path, tuning: list[dict], notes: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(_finite(result), indent=2, default=_json_default) + "\n")
    out.with_suffix(".md").write_text(markdown(result, tuning, notes))
    print(f"wrote {out} and {out.with_suffix('.md')}")


def _finite(value: Any) -> Any:
    """``value`` with infinite and NaN floats as strings ("inf", "nan"): plain JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _restore(value: Any) -> Any:
    """Undo :func:`_finite`: the strings "inf", "-inf" and "nan" become floats again."""
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, dict):
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, tuple | np.ndarray):
        return list(value)
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


if __name__ == "__main__":
    main()
