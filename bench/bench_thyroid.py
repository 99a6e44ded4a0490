"""A method (DP-CGAN by default) on UCI Thyroid ("ann"): train on synthetic, test on real.

For each seed: fit ``Synthesizer(method="dpcgan", epsilon=...)`` on ann-train (3,772 rows),
sample as many rows as the training set, train a classifier (MLP and logistic regression) on
the synthetic rows and score one-vs-rest MACRO AuROC on ann-test (3,428 rows); the same
classifiers trained on the real ann-train give the real baseline. The privacy figures are the
ledger's: metadata included (the label prior is estimated from DP noisy class counts, charged to
the same budget; the bounds [0, 1] and the binary categories are public, see
``dpforge.datasets.thyroid.thyroid_schema``).

``--validation`` is for tuning: it splits ann-train 80/20 (stratified, seeded), fits on the 80 %
and scores on the 20 %; ann-test is not read. Hyperparameters for the reported run are chosen
that way, never on ann-test. ``--tuning-log`` lists such validation results in the markdown.

Example::

    python bench/bench_thyroid.py --seeds 3 --out bench/results/thyroid_dpcgan.json
"""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from sklearn.model_selection import train_test_split

import harness
from dpforge import Schema, Synthesizer
from dpforge.datasets.thyroid import load_thyroid
from dpforge.evaluation.utility import tstr_auroc
from dpforge.methods import METHODS
from thyroid_report import CLASSIFIERS, PUBLISHED, markdown, print_table, summarise, title


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_data_dir(p)
    p.add_argument("--method", default="dpcgan", choices=sorted(METHODS))
    p.add_argument("--epsilon", type=float, default=3.7)
    p.add_argument("--delta", type=float, default=1e-5)
    harness.add_seeds(p, "3", first=True)
    harness.add_out(p)
    p.add_argument("--validation", action="store_true", help="score on a split of ann-train")
    p.add_argument("--tuning-log", default=None, help="JSON lines of validation runs to list")
    p.add_argument("--notes", default=None, help="markdown file appended to the report")
    p.add_argument("--no-real", action="store_true", help="skip the real-data baseline")
    harness.add_threads(p)
    g = p.add_argument_group("training (defaults: DPCGANConfig's, sigma calibrated by epochs)")
    g.add_argument("--noise-multiplier", type=float, default=None)
    g.add_argument("--epochs", type=float, default=None)
    g.add_argument("--batch-size", type=int, default=None)
    g.add_argument("--ema-decay", type=float, default=None, help="release a weight average")
    p.add_argument(
        "--balanced-sample",
        action="store_true",
        help="sample every class equally (conditional sampling; free)",
    )
    g.add_argument("--clip-decay", type=float, default=None, help="dpwgan")
    g.add_argument("--clip-decay-every", type=int, default=None, help="dpwgan")
    g.add_argument("--num-discriminators", type=int, default=None, help="gswgan")
    g.add_argument("--clip-norm", type=float, default=None)
    g.add_argument("--d-steps", type=int, default=None, help="D steps per G step")
    g.add_argument("--latent-dim", type=int, default=None)
    g.add_argument("--generator-hidden", type=harness.widths, default=None, help="e.g. 256,256")
    g.add_argument("--discriminator-hidden", type=harness.widths, default=None)
    g.add_argument("--d-lr-start", type=float, default=None)
    g.add_argument("--d-lr-end", type=float, default=None)
    g.add_argument("--d-lr-decay-steps", type=int, default=None)
    g.add_argument("--g-lr", type=float, default=None)
    g.add_argument("--metadata-share", type=float, default=0.1)
    g.add_argument(
        "--private-bounds", action="store_true",
        help="treat the continuous bounds as unknown: estimated under DP (charged) in fit",
    )  # fmt: skip
    g.add_argument(
        "--label-prior", choices=("dp", "uniform"), default="dp",
        help="dp: noisy class counts (charged); uniform: free, balanced synthetic classes",
    )  # fmt: skip
    return p.parse_args(argv)


def make_config(args: argparse.Namespace):
    """The method's config defaults, overridden by the options given that apply to it."""
    config_cls = METHODS[args.method][1]
    fields = config_cls.__dataclass_fields__
    given = {k: v for k, v in vars(args).items() if k in fields and v is not None}
    return config_cls(**given)


def load_data(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame, Schema, str]:
    """(training table, evaluation table, schema, name of the evaluation table)."""
    train, test, schema = load_thyroid(harness.data_dir(args.data_dir))
    schema = schema.with_label_prior(args.label_prior)
    if args.private_bounds:
        schema = schema.with_columns(
            tuple(replace(c, lower=None, upper=None) if c.is_numeric else c for c in schema.columns)
        )
    if not args.validation:
        return train, test, schema, "ann-test"
    fit_part, val_part = train_test_split(
        train, test_size=0.2, stratify=train[schema.label], random_state=12345
    )
    return fit_part, val_part, schema, "validation split (20 %) of ann-train"


def scores(train: pd.DataFrame, test: pd.DataFrame, schema: Schema, seed: int) -> dict:
    """Macro AuROC (value) plus micro, balanced accuracy per classifier."""
    out = {}
    for kind in CLASSIFIERS:
        r = tstr_auroc(train, test, schema, classifier=kind, average="macro", seed=seed)
        out[kind] = {
            "macro": r.value,
            "micro": r.details["micro"],
            "balanced_accuracy": r.details["balanced_accuracy"],
            "per_class": r.details["per_class"],
            "missing_classes": r.details["classes_missing_from_train"],
        }
    return out


def draw_synthetic(synth, schema: Schema, n: int, seed: int, balanced: bool) -> pd.DataFrame:
    """``n`` rows from the label prior, or (``balanced``) n / classes rows of every class:
    conditional sampling is post-processing, so oversampling rare classes costs nothing."""
    if not balanced:
        return synth.sample(n, seed=seed)
    classes = synth.schema_.label_column.categories
    parts = [
        synth.sample(n // len(classes), conditions={schema.label: c}, seed=seed + i)
        for i, c in enumerate(classes)
    ]
    return pd.concat(parts, ignore_index=True)


def run_seed(args, config, train, test, schema, seed: int) -> dict[str, Any]:
    """Fit, sample len(train) rows, score; privacy and time from the fitted synthesizer."""
    synth = Synthesizer(
        schema, method=args.method, epsilon=args.epsilon, delta=args.delta,
        noise_multiplier=args.noise_multiplier, epochs=args.epochs,
        metadata_share=args.metadata_share, method_options=config, seed=seed, progress=False,
        anchor=None,  # the method alone, as benchmarked (tables anchor by default)
    )  # fmt: skip
    with harness.Timer() as fit:
        synth.fit(train)
    synthetic = draw_synthetic(synth, schema, len(train), 10_000 + seed, args.balanced_sample)
    report = synth.privacy_spent()
    return {
        "seed": seed,
        "fit_seconds": fit.seconds,
        # PLD cannot analyse GS-WGAN's partition choice: NaN there, and RDP is the reported one.
        "epsilon_pld": math.nan if report.epsilon_pld is None else report.epsilon_pld,
        "accountant": report.accountant,
        "epsilon_rdp": report.epsilon_rdp,
        "steps": synth.plan_.steps,
        "sample_rate": synth.plan_.sample_rate,
        "noise_multiplier": synth.plan_.noise_multiplier,
        "synthetic_label_counts": synthetic[schema.label].value_counts().to_dict(),
        "tstr": scores(synthetic, test, schema, seed),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    config = make_config(args)
    train, test, schema, eval_name = load_data(args)
    seeds = harness.seeds(args)
    runs = []
    for seed in seeds:
        run = run_seed(args, config, train, test, schema, seed)
        runs.append(run)
        print(
            f"seed {seed}: MLP macro {run['tstr']['mlp']['macro']:.4f}, LR macro "
            f"{run['tstr']['lr']['macro']:.4f}, eps PLD {run['epsilon_pld']:.3f}, "
            f"{run['steps']} steps, sigma {run['noise_multiplier']:.3f}, "
            f"{run['fit_seconds']:.0f} s",
            flush=True,
        )
    real: dict[str, list[dict]] = {}
    if not args.no_real:
        real = {k: [scores(train, test, schema, s)[k] for s in seeds] for k in CLASSIFIERS}
    summary = summarise(runs, real)
    print_table(summary, eval_name)
    result = {
        **harness.provenance(__file__, argv),
        "evaluation_set": eval_name,
        "method": args.method,
        "n_train": len(train),
        "epsilon": args.epsilon,
        "delta": args.delta,
        "metadata_share": args.metadata_share,
        "label_prior": args.label_prior,
        "private_bounds": args.private_bounds,
        "balanced_sample": args.balanced_sample,
        "seeds": seeds,
        "config": {**asdict(config), "noise_multiplier": args.noise_multiplier,
                   "epochs": args.epochs},
        "summary": summary,
        "runs": runs,
        "real": real,
        "published": PUBLISHED,
    }  # fmt: skip
    if args.out:
        notes = Path(args.notes).read_text() if args.notes else ""
        tuning = harness.read_jsonl(args.tuning_log)
        harness.write_results(args.out, result, title(result), markdown(result, tuning, notes))
        print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return result


if __name__ == "__main__":
    main()
