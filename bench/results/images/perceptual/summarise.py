"""Rewrite ../images_perceptual.md from the JSONs in this folder (no training).

python bench/results/images/perceptual/summarise.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
MOMENTS = "moments (default, no public set)"
WITH_FASHION = "perceptual + moments, public Fashion-MNIST (labelled)"
WITH_MNIST = "perceptual + moments, public MNIST (labelled)"
RUNS = [
    ("MNIST", MOMENTS, "mnist_moments_eps10"),
    ("MNIST", WITH_FASHION, "mnist_public-fashion_eps10_steps300"),
    ("Fashion-MNIST", MOMENTS, "fashion_moments_eps10"),
    ("Fashion-MNIST", WITH_MNIST, "fashion_public-mnist_eps10_steps300"),
    (
        "MNIST",
        "perceptual alone (moment weight 0), public Fashion-MNIST",
        "mnist_public-fashion_eps10_steps300_momentweight0",
    ),
    (
        "MNIST",
        "perceptual + moments (moment weight 1), public Fashion-MNIST",
        "mnist_public-fashion_eps10_steps300_momentweight1",
    ),
    (
        "Fashion-MNIST",
        "perceptual + moments (moment weight 1), public MNIST",
        "fashion_public-mnist_eps10_steps300_momentweight1",
    ),
    ("MNIST, eps 1", MOMENTS, "mnist_moments_eps1"),
    ("MNIST, eps 1", WITH_FASHION, "mnist_public-fashion_eps1_steps300"),
]


def row(data: str, setting: str, stem: str) -> str:
    path = HERE / f"{stem}.json"
    if not path.exists():
        return f"| {data} | {setting} | (not run) | | | |"
    r = json.loads(path.read_text())
    s = r["synthetic"]
    return (
        f"| {data} | {setting} | {s['cnn_accuracy']:.3f} | {s['label_fidelity']:.3f} | "
        f"{s['frechet_distance']:.1f} | {r['fit_seconds']:.0f} s |"
    )


def real_row() -> str:
    """The same classifiers trained on 2,000 real MNIST training images (the MNIST run)."""
    r = json.loads((HERE / "mnist_public-fashion_eps10_steps300.json").read_text())["real"]
    return (
        f"| MNIST | real images (2,000, same evaluation) | {r['cnn_accuracy']:.3f} | "
        f"{r['label_fidelity']:.3f} | {r['frechet_distance']:.1f} | |"
    )


lines = [
    "# Images at epsilon = 10 with a declared public set (issue 24), reduced scale",
    "",
    "Each row is ONE run (seed 0), epsilon = 10 (two rows at 1), delta = 1e-5, at the scale",
    "the shared 2-core CPU allowed (load average 18-20 while these ran, each run getting",
    "about a tenth of a core):",
    "10,000 private training images (the first of the 60,000), 20,000 public images (the first",
    "of the other data set's training part), 300 anchor steps (the default), 2,000",
    "synthetic images scored; a CNN trained on them for 2 epochs, tested on the 10,000 real",
    "test images; label fidelity and Fréchet distance from a reference CNN trained 1 epoch on",
    "the 10,000 private training images (Fréchet values depend on that reference network: they",
    "compare only within this table, not with images/moments.md, whose reference trained 3",
    "epochs on 60,000).",
    "",
    "| data | anchoring | CNN accuracy | label fidelity | Fréchet | fit (wall, loaded) |",
    "|---|---|---|---|---|---|",
    *[row(*run) for run in RUNS],
    real_row(),
    "",
    "Commands (from bench/, OMP_NUM_THREADS=1, nice -n 10; outputs written to /tmp and copied",
    "here under the stems above; COMMON = --data-dir /work/shared/datasets --epsilon 10",
    "--n-train 10000 --samples 2000 --reference-epochs 1 --cnn-epochs 2):",
    "",
    "```",
    "python lib/images_run.py --dataset mnist --public fashion-mnist --public-n 20000 "
    "--anchor-steps 300 COMMON   # the MNIST row also scored AuROC and real images",
    "python lib/images_run.py --dataset fashion-mnist --public mnist --public-n 20000 "
    "--anchor-steps 300 COMMON --no-real --no-auroc",
    "python lib/images_run.py --dataset mnist COMMON --no-real --no-auroc",
    "python lib/images_run.py --dataset fashion-mnist COMMON --no-real --no-auroc",
    "# epsilon 1: the same two MNIST commands with --epsilon 1 (and --no-real --no-auroc)",
    "```",
    "",
    "Moment weight: the weight of the relative moment loss next to the embedding loss",
    "(``dpforge.statistics.perceptual.MOMENT_WEIGHT``; 0.1 in the rows that do not say). The",
    "weight-0 and weight-1 rows ran a throw-away wrapper that sets it before calling",
    "bench_images.main with the same arguments (/tmp/arrays/img/mw.py WEIGHT ARGS...).",
    "",
    "Sample grids (one row per class): `*_grid.png` next to the JSONs.",
    "",
    "The two epsilon-10 perceptual runs ran before commit 'perceptual: the public extractor",
    "initialised from the run's generator': their extractor's initial weights came from",
    "torch's global generator (so they are not reproducible from the seed alone); the",
    "epsilon-1 runs ran after it.",
]
(HERE.parent / "images/perceptual.md").write_text("\n".join(lines) + "\n")
