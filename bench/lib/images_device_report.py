"""The constants, grids and Markdown summary of bench/images_device.py (kept apart so the suite
stays short): the modes a run can ask for and how each row is labelled."""

from __future__ import annotations

import argparse

import numpy as np

OTHER = {"mnist": "fashion-mnist", "fashion-mnist": "mnist"}
REFINE_MODES = (
    "refine", "refine-reg", "refine-public", "refine-public-warm", "refine-public-reg",
    "refine-public-both", "refine-public-both-nn",
)  # fmt: skip
MODES = ("none", "public", "public-nn", *REFINE_MODES, "real", "long")
LONG_STEPS = 1000
REFINE_STEPS = 300  # discriminator steps of the refinement rows (the default, 50 epochs, is
# about 47,000 steps at 60,000 images: far past the device call)
REFINE_SHARE = 0.7  # the anchor's share of epsilon in the refinement rows; the rest: DP-SGD
# "-reg" rows keep the generator near the released statistics during refinement with
# --refine-weight (FeatureAnchorConfig.refine_weight); the others refine with the adversarial
# loss alone (refine_weight 0). "-warm" rows first train the discriminator --warm-steps steps
# on the public set (DPCGANConfig.public_warm_start_steps); "-both": the two together.
# "-nn" rows: the perceptual generator with nearest-neighbour upsampling + 3x3 convolutions
# (generator_net="upconv") instead of transposed convolutions.


def uses_public(mode: str) -> bool:
    return mode not in ("none", "refine", "refine-reg")


def stack_grids(args: argparse.Namespace) -> None:
    """One PNG per data set (few files come back from a device run): the first seed's grids,
    epsilon by epsilon in the order of --epsilons, modes in the order of MODES, top to bottom
    (each grid: one row per class), then the single grids removed."""
    from PIL import Image

    for dataset in args.datasets.split(","):
        names = [f"{dataset}_eps{e}_{m}.png" for e in ["-", *args.epsilons.split(",")]
                 for m in MODES]  # fmt: skip
        paths = [args.grids / n for n in names if (args.grids / n).exists()]
        if not paths:
            continue
        images = [Image.open(path).convert("RGB") for path in paths]
        width = max(i.width for i in images)
        canvas = Image.new("RGB", (width, sum(i.height + 12 for i in images)), (255, 255, 255))
        top = 0
        for image in images:
            canvas.paste(image, (0, top))
            top += image.height + 12
        canvas.save(args.grids / f"{dataset}_grids.png")
        (args.grids / f"{dataset}_grids.txt").write_text("\n".join(p.name for p in paths) + "\n")
        for path in paths:
            path.unlink()


TITLE = "Images (issue 24): with and without a public set, generator pre-training, 3 seeds"
COLUMNS = ("cnn_accuracy", "label_fidelity", "frechet_distance")


def _refine_label(mode: str, dataset: str) -> str:
    """The public-set cell of a refinement row: what anchors, what refines."""
    public = OTHER[dataset] if uses_public(mode) else "none; moments"
    parts = [f"{public} + DP-SGD discriminator (anchor share {REFINE_SHARE})"]
    if mode.endswith(("-warm", "-both", "-both-nn")):
        parts.append("discriminator warm-started on the public set")
    if mode.endswith(("-reg", "-both", "-both-nn")):
        parts.append("anchor loss kept (refine_weight)")
    if mode.endswith("-nn"):
        parts.append("nearest-neighbour upsampling generator")
    return ", ".join(parts)


def _cell(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{np.mean(values):.3f} ± {np.std(values, ddof=1):.3f}"


def summary(rows: list[dict]) -> list[str]:
    """One line per data set, epsilon and mode: mean ± std over the seeds done."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if "error" not in row:
            groups.setdefault((row["dataset"], row["epsilon"], row["mode"]), []).append(row)
    lines = [
        "| data | epsilon | public set | seeds | CNN accuracy | label fidelity | Fréchet | fit s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, epsilon, mode), group in sorted(groups.items()):
        cells = [_cell([r[c] for r in group]) for c in COLUMNS]
        fit = _cell([r["fit_seconds"] for r in group]) if mode != "real" else "-"
        public = {
            "none": "none",
            "public": OTHER[dataset],
            "public-nn": f"{OTHER[dataset]}; nearest-neighbour upsampling generator",
            "real": "(real data)",
            **{m: _refine_label(m, dataset) for m in REFINE_MODES},
            "long": f"{OTHER[dataset]} + pre-training, {LONG_STEPS} + {LONG_STEPS} steps",
        }.get(mode, f"{OTHER[dataset]} + pre-training")
        lines.append(
            f"| {dataset} | {epsilon} | {public} | {len(group)} | "
            + " | ".join(cells)
            + f" | {fit} |"
        )
    errors = [r for r in rows if "error" in r]
    return lines + [""] + [f"- error: {r}" for r in errors]
