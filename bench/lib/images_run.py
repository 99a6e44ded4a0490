"""A method on MNIST or Fashion-MNIST: train on synthetic images, test on real ones.

Fits ``Synthesizer(method=..., epsilon=...)`` on the training images (all 60,000, or the first
``--n-train``), samples ``--samples`` images with labels from the uniform prior and scores on
the 10,000 real test images: logistic regression and MLP one-vs-rest macro AuROC (the DP-CGAN
paper's measure) and a small CNN's accuracy (GS-WGAN's and Bie et al.'s). The same classifiers
trained on as many real training images give the real-data reference. Privacy figures come
from the run's ledger; the pixel range 0..255 and the classes are public, the label prior is
uniform, so the metadata cost nothing.

Label fidelity (the share of samples a CNN trained on the real training images assigns to the
class they were generated for, per class too) and a Fréchet distance on that CNN's features
(synthetic vs real test images) come from :mod:`dpforge.evaluation.reference`.

``--anchor auto`` (the default) is the Synthesizer's default for images: two DP releases, a
principal subspace and per-class means and covariances in it, and a class-conditional Gaussian
generator built from them (:mod:`dpforge.statistics.moments`); ``--anchor-statistic embedding``
anchors on per-class mean embeddings in public random Fourier features instead
(:mod:`dpforge.statistics.features`); ``--anchor none`` trains the GAN alone. For the issue-11
figures::

    nice -n 10 python bench/lib/images_run.py --dataset mnist --epsilon 10 \
        --out bench/results/images/mnist_anchor_eps10.json

The DP-CGAN paper's MNIST setting (batch 600, sigma for eps 9.6, m = B, its "vanilla" MLP
networks)::

    python bench/lib/images_run.py --method dpcgan --epsilon 9.6 --batch-size 600 \
        --generator mlp --discriminator mlp --anchor none \
        --out bench/results/images/mnist_dpcgan.json
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, replace
from typing import Any

import torch

from dpforge import Synthesizer
from dpforge.data.arrays import ArrayData
from dpforge.data.export import write_images
from dpforge.datasets.images import load_idx_dataset
from dpforge.evaluation.images import tstr_auroc, tstr_cnn_accuracy
from dpforge.evaluation.reference import ReferenceClassifier
from dpforge.kinds.feature_defaults import feature_anchor_defaults
from dpforge.methods import METHODS
from dpforge.statistics.features import FeatureAnchorConfig
from lib import harness
from lib.harness import floats, widths, with_overrides

PUBLISHED = {
    "mnist": [
        "DP-CGAN paper, eps 9.6: LR 0.8642 / MLP 0.8858 AuROC (real 0.9217 / 0.9760)",
        "GS-WGAN paper, eps 10: MLP 0.79, CNN 0.80",
        "Bie et al. 2023 (DP-SGD GAN revisited), eps 10: CNN 0.950",
    ],
    "fashion-mnist": ["GS-WGAN paper, eps 10: MLP 0.65, CNN 0.65"],
}


def anchor_option(args: argparse.Namespace) -> FeatureAnchorConfig | None:
    """The Synthesizer's ``anchor``: None for the GAN alone, else the defaults with overrides."""
    if args.anchor == "none":
        return None
    given = {
        "share": args.anchor_share,
        "steps": args.anchor_steps,
        "n_features": args.anchor_features,
        "batch_size": args.anchor_batch,
        "lr": args.anchor_lr,
        "bandwidths": args.anchor_bandwidths,
        "statistic": args.anchor_statistic,
        "rank": args.anchor_rank,
    }
    return with_overrides(feature_anchor_defaults("image", args.public != "none"), given)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="mnist", choices=("mnist", "fashion-mnist"))
    harness.add_data_dir(p)
    p.add_argument("--method", default="dpcgan", choices=sorted(METHODS))
    p.add_argument("--epsilon", type=float, default=9.6)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--noise-multiplier", type=float, default=None)
    p.add_argument("--epochs", type=float, default=None)
    p.add_argument("--n-train", type=int, default=None, help="first N training images only")
    p.add_argument("--samples", type=int, default=10000, help="synthetic images to score")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--cnn-epochs", type=int, default=5)
    harness.add_threads(p)
    p.add_argument("--anchor", default="auto", choices=("auto", "none"))
    p.add_argument("--anchor-share", type=float, default=None)
    p.add_argument("--anchor-steps", type=int, default=None)
    p.add_argument("--anchor-features", type=int, default=None)
    p.add_argument("--anchor-batch", type=int, default=None)
    p.add_argument("--anchor-lr", type=float, default=None)
    p.add_argument("--anchor-bandwidths", type=floats, default=None)
    p.add_argument(
        "--anchor-statistic", default=None,
        choices=("auto", "moments", "embedding", "perceptual"),
    )  # fmt: skip
    p.add_argument(
        "--public", default="none", choices=("none", "mnist", "fashion-mnist"),
        help="a declared public set (its training images) for perceptual anchoring",
    )  # fmt: skip
    p.add_argument("--public-n", type=int, default=None, help="first N public images only")
    p.add_argument("--public-unlabelled", action="store_true", help="drop the public labels")
    p.add_argument("--anchor-rank", type=int, default=None)
    p.add_argument("--reference-epochs", type=int, default=3)
    p.add_argument("--no-real", action="store_true", help="skip the real-data reference")
    p.add_argument("--no-auroc", action="store_true", help="skip the LR / MLP AuROC")
    p.add_argument("--option", action="append", default=[], help="config field=value")
    p.add_argument("--generator", default="auto")
    p.add_argument("--discriminator", default="auto")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--generator-hidden", type=widths, default=None)
    p.add_argument("--discriminator-hidden", type=widths, default=None)
    harness.add_out(p)
    return p.parse_args(argv)


def method_options(args: argparse.Namespace) -> Any:
    """The method's config with the options given; None (the Synthesizer's defaults, which
    for an anchored run include the anchored generator) when none was given."""
    config = METHODS[args.method][1]()
    given: dict[str, Any] = {}
    if args.generator != "auto":
        given["generator_net"] = args.generator
    if args.discriminator != "auto":
        given["discriminator_net"] = args.discriminator
    if args.batch_size is not None:
        given["batch_size"] = args.batch_size
    if args.generator_hidden is not None:
        given["generator_hidden"] = args.generator_hidden
    if args.discriminator_hidden is not None:
        given["discriminator_hidden"] = args.discriminator_hidden
    for item in args.option:
        name, _, text = item.partition("=")
        current = getattr(config, name)
        given[name] = _parse_like(current, text)
    return replace(config, **given) if given else None


def _parse_like(current: Any, text: str) -> Any:
    if isinstance(current, bool):
        return text.lower() in ("1", "true", "yes")
    if isinstance(current, tuple):
        return widths(text)
    if current is None:
        return int(text) if text.lstrip("-").isdigit() else float(text)
    return type(current)(text)


def public_set(args: argparse.Namespace, data_dir) -> ArrayData | None:
    """The declared public set: the TRAINING images of another data set (labels dropped with
    --public-unlabelled); never the private data set itself."""
    if args.public == "none":
        return None
    if args.public == args.dataset:
        raise SystemExit("--public must name another data set than --dataset")
    public, _, _ = load_idx_dataset(args.public, data_dir, args.public_n)
    return ArrayData(public.values, None if args.public_unlabelled else public.labels)


def evaluate(
    synthetic: ArrayData, test: ArrayData, classes, args, reference: ReferenceClassifier
) -> dict[str, Any]:
    """Label fidelity, LR / MLP AuROC, CNN accuracy and Fréchet distance of ``synthetic``."""
    with harness.Timer() as timer:
        fidelity = reference.label_fidelity(synthetic)
        auroc = {} if args.no_auroc else tstr_auroc(synthetic, test, classes, seed=args.seed)
        cnn = tstr_cnn_accuracy(synthetic, test, classes, epochs=args.cnn_epochs, seed=args.seed)
        frechet = reference.frechet(synthetic, test)
    return {
        **_auroc(auroc),
        "cnn_accuracy": cnn.value,
        "label_fidelity": fidelity.value,
        "label_fidelity_per_class": fidelity.details["per_class"],
        "frechet_distance": frechet,
        "eval_seconds": round(timer.seconds, 1),
    }


def _auroc(auroc: dict[str, Any]) -> dict[str, Any]:
    """The AuROC figures (NaN when skipped)."""
    nan = float("nan")
    lr, mlp = auroc.get("logistic"), auroc.get("mlp")
    return {
        "lr_auroc_macro": nan if lr is None else lr.value,
        "mlp_auroc_macro": nan if mlp is None else mlp.value,
        "lr_auroc_micro": None if lr is None else lr.details.get("micro"),
        "mlp_auroc_micro": None if mlp is None else mlp.details.get("micro"),
    }


def run(args: argparse.Namespace, argv: list[str] | None = None) -> dict[str, Any]:
    """Fit, sample, score the synthetic images and as many real ones; the results record."""
    torch.set_num_threads(args.threads)
    data_dir = harness.data_dir(args.data_dir)
    train, test, schema = load_idx_dataset(args.dataset, data_dir, args.n_train)
    config = method_options(args)
    stamp = harness.provenance(__file__, argv)
    timer = harness.Timer()
    anchor = anchor_option(args)
    synth = Synthesizer(
        schema,
        method=None if anchor is not None and anchor.share >= 1 else args.method,
        epsilon=args.epsilon,
        delta=args.delta,
        noise_multiplier=args.noise_multiplier,
        epochs=args.epochs,
        method_options=config,
        seed=args.seed,
        device=args.device,
        anchor=anchor,
        progress=False,
        public_data=public_set(args, data_dir),
    ).fit(train)
    fit_seconds = timer.elapsed
    synthetic = synth.sample(args.samples, seed=args.seed + 1)
    real = ArrayData(train.values[: args.samples], train.labels[: args.samples])
    report = synth.privacy_spent()
    reference = ReferenceClassifier(schema.classes, args.reference_epochs, args.seed).fit(train)
    return {
        **stamp,
        "dataset": args.dataset,
        "public": args.public,
        "public_n": args.public_n,
        "public_labelled": args.public != "none" and not args.public_unlabelled,
        "n_train": len(train),
        "method": args.method,
        "config": asdict(synth.config_),
        "plan": asdict(synth.plan_),
        "anchor": None if synth.anchor_ is None else asdict(synth.anchor_),
        "ledger": [entry.name for entry in synth.ledger_.entries],
        "epsilon_pld": report.epsilon_pld,
        "epsilon_rdp": report.epsilon_rdp,
        "delta": args.delta,
        "fit_seconds": round(fit_seconds, 1),
        "synthetic": evaluate(synthetic, test, schema.classes, args, reference),
        "real": None if args.no_real else evaluate(real, test, schema.classes, args, reference),
        "published": PUBLISHED[args.dataset],
        "_grid": synthetic,
    }


def _epsilon_text(result: dict[str, Any]) -> str:
    """PLD (reported) and RDP; GS-WGAN's event has an RDP bound only (see its accounting)."""
    if result["epsilon_pld"] is None:
        return f"eps = {result['epsilon_rdp']:.2f} (RDP; no PLD bound for this event)"
    return f"eps = {result['epsilon_pld']:.2f} (PLD; RDP {result['epsilon_rdp']:.2f})"


def _row(name: str, m: dict[str, Any]) -> str:
    return (
        f"| {name} | {m['lr_auroc_macro']:.4f} | {m['mlp_auroc_macro']:.4f} | "
        f"{m['cnn_accuracy']:.4f} | {m['label_fidelity']:.4f} | {m['frechet_distance']:.2f} |"
    )


def title(result: dict[str, Any]) -> str:
    """The report's title: data set, method and privacy."""
    return (
        f"{result['dataset']}: {result['method']} at {_epsilon_text(result)}, "
        f"delta = {result['delta']:g}"
    )


def markdown(result: dict[str, Any]) -> list[str]:
    """The Markdown body under the harness header."""
    s, r = result["synthetic"], result["real"]
    return [
        f"{result['n_train']} training images, {result['plan']['steps']} private steps, "
        f"sigma = {result['plan']['noise_multiplier']:.4g}, q = "
        f"{result['plan']['sample_rate']:.4g}, fit {result['fit_seconds']} s.",
        "",
        "Ledger: " + "; ".join(result["ledger"]),
        "",
        "| trained on | LR AuROC (macro) | MLP AuROC (macro) | CNN accuracy | label fidelity "
        "| Fréchet (ref. CNN features, vs real test) |",
        "|---|---|---|---|---|---|",
        _row("synthetic", s),
        *([] if r is None else [_row("real (same count)", r)]),
        "",
        "Label fidelity per class (synthetic): "
        + ", ".join(f"{k}: {v:.2f}" for k, v in s["label_fidelity_per_class"].items()),
        "",
        "Published: " + "; ".join(result["published"]),
    ]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    result = run(args, argv)
    grid = result.pop("_grid")
    shown = {k: v for k, v in result.items() if k not in ("config", "machine", "versions")}
    print(json.dumps(harness.jsonable(shown), indent=2))
    if args.out is not None:
        harness.write_results(args.out, result, title(result), markdown(result))
        write_images(
            grid,
            args.out.with_name(args.out.stem + "_samples"),
            png=False,
            npz=False,
            grid=True,
            overwrite=True,
        )


if __name__ == "__main__":
    main()
