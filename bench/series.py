"""A method (DP-WGAN with the LSTM generator by default) on UCR ItalyPowerDemand: train on
synthetic series, test on real ones.

Data: the 1,096 daily curves of 24 hourly values (2 classes: 1 = October-March, 2 = April-
September) pooled from the UCR train/test files and split 70/30, stratified and seeded
(``dpforge.datasets.series.load_italy_power_demand``): 767 training, 329 test series. Public:
the length 24 and the two classes; the channel's value range is NOT public, ``fit`` estimates it
under DP and charges it to the same (epsilon, delta) as training; the label prior is uniform
(free).

For each seed: fit ``Synthesizer(method=..., epsilon=...)`` on the training series, sample as
many series as the training set, and score on the real test series a random forest and 1-NN by
DTW trained on the synthetic series (``dpforge.evaluation.series.tstr_accuracy``), next to the
same classifiers trained on the real series and (unless ``--no-baseline``) the same code without
noise. Privacy figures come from each run's ledger; the DTW distance of synthetic series to the
nearest training series and two PNGs (``_nearest.png``, ``_per_class.png``) are recorded too.

``--validation`` is for tuning: it splits the TRAINING part 80/20 (stratified, seeded), fits on
the 80 % and scores on the 20 %; the test split is not read. Each validation run appends a line
to ``--tuning-log``; the reported run lists that log in its markdown. The selection is not
privacy-accounted (the reported epsilon covers one training run with the chosen settings).

The README's ItalyPowerDemand figures (the default: the feature anchor; about 3 CPU minutes a
seed), then the DP-WGAN row (``--anchor none``; tuning log ``results/series/italy_dpwgan_*``)::

    cd bench && OMP_NUM_THREADS=1 python series.py --seeds 3 --out results/series/italy.json
    cd bench && python series.py --anchor none --seeds 3 --out results/series/italy_dpwgan.json

``--render JSON`` rewrites the Markdown of an earlier run; ``--merge`` joins per-seed runs.
"""

from __future__ import annotations

import argparse
import shutil
from dataclasses import fields
from pathlib import Path
from typing import Any

import torch

from dpforge.methods import METHODS
from lib import harness
from lib.harness import floats, widths
from lib.series_plots import write_plots
from lib.series_report import append_tuning, markdown, print_table, title
from lib.series_runs import (
    anchor_option,
    describe,
    load_data,
    run_seed,
    scores,
    summarise,
    summarise_real,
)

# The settings chosen on the validation split (tuning log in the markdown). Options given on
# the command line override them; --defaults runs the config's own defaults instead.
# Picked on validation with the library as of commit 0a721bc (tuning rows 16-21): the MLP
# critic (the default) and 300 epochs; the conv critic's generated curves left the data (median
# DTW to the nearest real series 91 vs 5), 100-150 epochs learnt nothing class-specific.
TUNED: dict[str, Any] = {"generator_net": "lstm", "discriminator_net": "mlp", "epochs": 300.0}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--method", default="dpwgan", choices=sorted(METHODS))
    p.add_argument("--epsilon", type=float, default=3.0)
    p.add_argument("--delta", type=float, default=1e-4, help="below 1/N = 1/767")
    harness.add_seeds(p, "3", first=True)
    p.add_argument("--split-seed", type=int, default=0, help="seed of the 70/30 train/test split")
    harness.add_out(p)
    p.add_argument("--validation", action="store_true", help="score on a split of the train part")
    p.add_argument("--tuning-log", default=None, help="JSON lines: appended to (--validation), "
                   "listed in the markdown (reported run)")  # fmt: skip
    p.add_argument("--note", default="", help="what this validation run tries (tuning log)")
    p.add_argument("--notes", default=None, help="markdown file appended to the report")
    p.add_argument(
        "--render", default=None, metavar="JSON",
        help="no training: rewrite the markdown of this results JSON (with --tuning-log, --notes)",
    )  # fmt: skip
    p.add_argument(
        "--merge", nargs="+", default=None, metavar="JSON",
        help="no training: join per-seed results JSONs (run in parallel) into --out",
    )  # fmt: skip
    p.add_argument("--no-real", action="store_true", help="skip the real-data reference")
    p.add_argument("--no-baseline", action="store_true", help="skip the non-private baseline")
    p.add_argument("--defaults", action="store_true", help="ignore TUNED: the config's defaults")
    harness.add_threads(p)
    p.add_argument(
        "--move", default="both", choices=("both", "yes", "no", "default"),
        help="sampling: moved to the release (yes), not (no), the library default, or both "
        "(moved reported, the same draws unmoved next to them)",
    )  # fmt: skip
    p.add_argument(
        "--pool", type=int, default=None,
        help="moved samples herded from POOL times as many draws (MoveSettings.pool); with "
        "--move both the library's default moving of the same seed is scored next to them",
    )  # fmt: skip
    p.add_argument("--save-models", default=None, help="write each fitted model folder here")
    p.add_argument("--from-models", default=None,
                   help="no training: load the folders --save-models wrote there")  # fmt: skip
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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """DP runs, the non-private baseline and the real reference over the seeds; the files."""
    args = parse_args(argv)
    if args.render:
        return render(args)
    if args.merge:
        return merge(args)
    stamp = harness.provenance(__file__, argv)  # at the start: others may commit meanwhile
    torch.set_num_threads(args.threads)
    chosen = settings(args)
    config = make_config(args, chosen)
    train, test, schema, eval_name = load_data(args)
    seeds = harness.seeds(args)
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
        **stamp,
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
        append_tuning(result, chosen, args, Path(args.tuning_log), RUN_KEYS)
    if args.out:
        if not args.validation:
            result["plots"] = write_plots(args.out, synthetic, train, schema.classes)
        result["tuning"] = [] if args.validation else harness.read_jsonl(args.tuning_log)
        write(result, args.out, args.notes)
    return result


def write(result: dict[str, Any], out: Path, notes_file: str | None) -> None:
    """The JSON and Markdown, by the harness's writer (``--notes`` appended to the Markdown)."""
    notes = Path(notes_file).read_text() if notes_file else ""
    body = markdown(result, result["tuning"], notes)
    harness.write_results(out, result, title(result), body)
    print(f"wrote {out} and {out.with_suffix('.md')}")


def render(args: argparse.Namespace) -> dict[str, Any]:
    """Rewrite the markdown next to an earlier results JSON; the command it shows gains the
    ``--notes`` given (running that command gives the same files)."""
    out = Path(args.render)
    result = harness.read_results(out)
    if args.notes and "--notes" not in result["command"]:
        result["command"] += f" --notes {args.notes}"
    if args.tuning_log:
        result["tuning"] = harness.read_jsonl(args.tuning_log)
    result.setdefault("tuning", [])
    write(result, out, args.notes)
    return result


def merge(args: argparse.Namespace) -> dict[str, Any]:
    """One result from per-seed results JSONs of the same settings (e.g. one process per seed,
    run side by side): runs, baselines and real references joined, the summaries recomputed;
    provenance and plots are the first file's (copied next to ``--out`` under its name)."""
    parts = [harness.read_results(Path(p)) for p in args.merge]
    result = dict(parts[0])
    result["plots"] = copy_plots(Path(args.merge[0]), parts[0].get("plots", {}), Path(args.out))
    for key in ("seeds", "runs", "baseline_runs", "real"):
        result[key] = [item for part in parts for item in part[key]]
    result["summary"] = {
        "private": summarise(result["runs"]),
        "baseline": summarise(result["baseline_runs"]),
        "real": summarise_real(result["real"]),
    }
    joined = harness.provenance(__file__, None)["command"]
    result["command"] = " ; ".join([*(p["command"] for p in parts), joined])
    result["tuning"] = harness.read_jsonl(args.tuning_log)
    print_table(result)
    write(result, Path(args.out), args.notes)
    return result


def copy_plots(first: Path, plots: dict[str, dict[str, str]], out: Path) -> dict:
    """The PNGs of the results JSON ``first`` copied to the names ``write_plots`` gives
    ``out``, so that the merged Markdown names files that sit next to it."""
    copied: dict[str, dict[str, str]] = {}
    for key, names in plots.items():
        suffix = "" if key == "private" else "_nonprivate"
        copied[key] = {}
        for kind, name in names.items():
            target = Path(f"{out.with_suffix('')}{suffix}_{kind}.png")
            shutil.copyfile(first.parent / name, target)
            copied[key][kind] = target.name
    return copied


if __name__ == "__main__":
    main()
