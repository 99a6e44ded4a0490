"""The issue-11 image table: lib/images_run.py over data sets x epsilons x seeds, summarised.

Each run writes its JSON (and grid) under ``--work``; after every run the summary table
(mean +- std over the seeds done so far, next to real-data training in the same runs) is
rewritten to ``--results``, so a stopped run keeps what it measured. ``--resume`` skips runs
whose JSON exists. Example (the committed figures)::

    nice -n 10 python bench/images.py --data-dir ../shared/datasets \\
        --work bench/results/images/moments --results bench/results/images/moments.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from lib import harness, images_run

COLUMNS = ("cnn_accuracy", "label_fidelity", "frechet_distance", "lr_auroc_macro")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="mnist,fashion-mnist")
    p.add_argument("--epsilons", default="10,1,inf")
    harness.add_seeds(p, "3")
    harness.add_data_dir(p)
    p.add_argument("--work", type=Path, default=harness.results("images", "moments"))
    p.add_argument(
        "--results",
        type=Path,
        default=harness.results("images", "moments.md"),
        help="summary .md (.json next to it)",
    )
    p.add_argument("--resume", action="store_true")
    p.add_argument("--extra", default="", help="more lib/images_run.py arguments, space-separated")
    return p.parse_args(argv)


def _name(dataset: str, epsilon: str, seed: int) -> str:
    return f"{dataset}_eps{epsilon}_seed{seed}"


def _mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{np.mean(values):.3f} ± {np.std(values, ddof=1):.3f}"


TITLE = "Images: moment anchoring (issue 11), train on synthetic, test on real"


def summary(runs: dict[tuple[str, str], list[dict]]) -> list[str]:
    """The Markdown body: one row per data set x epsilon, synthetic and real."""
    lines = [
        "One row per data set and epsilon (delta = 1e-5, metadata included; mean ± std over",
        "seeds). CNN: accuracy of a small CNN trained on 10,000 synthetic images, on the 10,000",
        "real test images. Label fidelity and Fréchet distance: a reference CNN trained on the",
        "real training images (features of its last hidden layer, vs the real test images).",
        "'real' rows: the same classifiers trained on 10,000 real training images, same runs.",
        "",
        "| data | epsilon | seeds | CNN accuracy | label fidelity | Fréchet | LR AuROC | fit s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, epsilon), results in runs.items():
        for role in ("synthetic", "real"):
            cells = [_mean_std([r[role][c] for r in results]) for c in COLUMNS]
            fit = _mean_std([r["fit_seconds"] for r in results]) if role == "synthetic" else "-"
            label = epsilon if role == "synthetic" else f"{epsilon} (real data)"
            lines.append(
                f"| {dataset} | {label} | {len(results)} | " + " | ".join(cells) + f" | {fit} |"
            )
    return lines


def main(argv: list[str] | None = None) -> None:
    """Run (or, with --resume, reuse) every data set x epsilon x seed; rewrite the summary."""
    args = parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    record = {**harness.provenance(__file__, argv), "runs": {}}
    runs: dict[tuple[str, str], list[dict]] = {}
    for dataset in args.datasets.split(","):
        for epsilon in args.epsilons.split(","):
            for seed in harness.seeds(args):
                out = args.work / f"{_name(dataset, epsilon, seed)}.json"
                if not (args.resume and out.exists()):
                    images_run.main(
                        ["--dataset", dataset, "--data-dir", str(harness.data_dir(args.data_dir)),
                         "--epsilon", epsilon, "--seed", str(seed), "--out", str(out),
                         *args.extra.split()]
                    )  # fmt: skip
                runs.setdefault((dataset, epsilon), []).append(json.loads(out.read_text()))
                record["runs"].setdefault(f"{dataset} eps {epsilon}", []).append(str(out))
                out_json = args.results.with_suffix(".json")
                harness.write_results(out_json, record, TITLE, summary(runs))


if __name__ == "__main__":
    main()
