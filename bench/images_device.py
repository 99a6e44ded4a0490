"""The issue-24 image table in one call on an accelerator: MNIST and Fashion-MNIST, epsilon 1
and 10, three seeds, without a public set, with one (the other data set's training images,
labelled) and with generator pre-training on it, next to real-data training; the refinement
rows (issue 24 part 3): the anchor with share ``REFINE_SHARE`` of epsilon, then a private
discriminator (DP-SGD, the dpcgan default) with the rest ("refine": moments, no public set;
"refine-public": perceptual + moments on the public set), refining with the adversarial loss
alone; "-reg": the anchor loss on the released statistics kept in the generator's loss
(``--refine-weight``); "refine-public-warm": the discriminator first trained without privacy
on the public set against the anchored generator (``--warm-steps``); "-both": the two.

Every fit is ``Synthesizer(schema, epsilon=..., public_data=..., device=...)`` with the defaults
(the anchor's settings as the Synthesizer picks them). Each fit is scored as in lib/images_run.py:
a CNN trained on ``--samples`` synthetic images and tested on the 10,000 real test images; label
fidelity and Fréchet distance from ONE reference CNN per data set (seed 0, trained on all real
training images), so that every row is judged by the same network. Jobs run seed by seed over
``--workers`` processes; after ``--budget-s`` seconds no new job starts, and the JSON and Markdown
are rewritten after every job, so a stopped run keeps what it measured::

    cd bench && OMP_NUM_THREADS=4 python images_device.py --data-dir ../data \\
        --device cuda --modes none,public,refine,refine-public,real --workers 3 --threads 4 \\
        --budget-s 200 --grids $OUT --out $OUT/images_device/full_scale.json

The refinement variants (part 3) in one call, stopping new jobs after 290 s::

    cd bench && OMP_NUM_THREADS=3 PYTHONPATH=../src python images_device.py \\
        --data-dir ../data --device cuda --workers 5 --threads 3 --budget-s 290 \\
        --modes none,public,refine,refine-reg,refine-public,refine-public-warm,\\
refine-public-reg,refine-public-both --grids $OUT --out $OUT/images_device/full_scale.json

Tiny CPU check (minutes): ``--device cpu --datasets mnist --epsilons 10 --seeds 1
--n-train 1000 --public-n 1000 --samples 500 --cnn-epochs 1 --reference-epochs 1
--anchor-steps 20 --workers 1 --threads 1`` (the refinement modes: add ``--modes
refine,refine-reg,refine-public,refine-public-warm,refine-public-reg,refine-public-both
--refine-steps 100 --warm-steps 20``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from dpforge import Synthesizer
from dpforge.data.arrays import ArrayData
from dpforge.data.export import image_grid
from dpforge.datasets.images import load_idx_dataset
from dpforge.evaluation.images import tstr_cnn_accuracy
from dpforge.evaluation.reference import ReferenceClassifier
from dpforge.kinds.feature_defaults import feature_anchor_defaults
from dpforge.methods.dpcgan import DPCGANConfig
from lib import harness
from lib.images_device_report import (
    LONG_STEPS,
    MODES,
    OTHER,
    REFINE_MODES,
    REFINE_SHARE,
    REFINE_STEPS,
    TITLE,
    stack_grids,
    summary,
    uses_public,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_data_dir(p)
    p.add_argument("--datasets", default="mnist,fashion-mnist")
    p.add_argument("--epsilons", default="10,1")
    p.add_argument("--modes", default=",".join(MODES))
    harness.add_seeds(p, "3")
    p.add_argument("--n-train", type=int, default=None, help="first N training images only")
    p.add_argument("--public-n", type=int, default=None, help="first N public images only")
    p.add_argument("--samples", type=int, default=10000)
    p.add_argument("--cnn-epochs", type=int, default=5)
    p.add_argument("--reference-epochs", type=int, default=3)
    p.add_argument("--anchor-steps", type=int, default=None, help="(tiny checks only)")
    p.add_argument("--refine-weight", type=float, default=1.0, help="lambda of the -reg rows")
    p.add_argument("--warm-steps", type=int, default=300, help="public steps of -warm rows")
    p.add_argument("--refine-steps", type=int, default=REFINE_STEPS, help="DP-SGD steps")
    p.add_argument("--device", default="cuda")
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--threads", type=int, default=4, help="torch threads per worker")
    p.add_argument("--budget-s", type=float, default=420.0, help="no job starts after this")
    p.add_argument("--grids", type=Path, default=None, help="folder for the sample grids")
    harness.add_out(p, harness.results("images_device", "full_scale.json"))
    return p.parse_args(argv)


def _anchor(args: argparse.Namespace, mode: str):
    if mode == "none":
        return "auto" if args.anchor_steps is None else replace(
            feature_anchor_defaults("image"), steps=args.anchor_steps)  # fmt: skip
    config = feature_anchor_defaults("image", public=uses_public(mode))
    if mode in REFINE_MODES:  # the anchor, then a private discriminator with the rest
        weight = args.refine_weight if mode.endswith(("-reg", "-both", "-both-nn")) else 0.0
        config = replace(config, share=REFINE_SHARE, refine_weight=weight)
    if args.anchor_steps is not None:
        config = replace(config, steps=args.anchor_steps)
    if mode == "long":  # the same with LONG_STEPS of anchoring (epsilon 10, after the others)
        config = replace(config, steps=LONG_STEPS)
    return config


def _refine_epochs(args: argparse.Namespace, n: int) -> float:
    """Epochs giving about --refine-steps discriminator steps (q = batch / n; the benchmark
    knows its data set's size, a user sets epochs)."""
    return args.refine_steps * DPCGANConfig().batch_size / n


def _method_options(args: argparse.Namespace, mode: str) -> DPCGANConfig | None:
    """The warm-started discriminator of the "-warm" and "-both" rows, the upsampling
    generator of the "-nn" rows; else the defaults (None)."""
    options = {}
    if mode.endswith(("-warm", "-both", "-both-nn")):
        options["public_warm_start_steps"] = args.warm_steps
    if mode.endswith("-nn"):
        options["generator_net"] = "upconv"
    return DPCGANConfig(**options) if options else None


_CACHE: dict[str, tuple] = {}


def _data(args: argparse.Namespace, dataset: str) -> tuple:
    """(train, test, schema, public, reference) of a data set, once per worker."""
    if dataset not in _CACHE:
        root = harness.data_dir(args.data_dir)
        train, test, schema = load_idx_dataset(dataset, root, args.n_train)
        public, _, _ = load_idx_dataset(OTHER[dataset], root, args.public_n)
        reference = ReferenceClassifier(
            schema.classes, args.reference_epochs, 0, device=args.device
        ).fit(train)
        _CACHE[dataset] = (train, test, schema, public, reference)
    return _CACHE[dataset]


def job(args: argparse.Namespace, dataset: str, epsilon: str, mode: str, seed: int) -> dict:
    """One fit (or the real-data reference) and its scores."""
    torch.set_num_threads(args.threads)
    train, test, schema, public, reference = _data(args, dataset)
    row = {"dataset": dataset, "epsilon": epsilon, "mode": mode, "seed": seed}
    started = time.perf_counter()
    if mode == "real":
        images = ArrayData(train.values[: args.samples], train.labels[: args.samples])
    else:
        synth = Synthesizer(
            schema, epsilon=float(epsilon), delta=1e-5, seed=seed, progress=False,
            device=args.device, anchor=_anchor(args, mode),
            public_data=public if uses_public(mode) else None,
            epochs=_refine_epochs(args, len(train)) if mode in REFINE_MODES else None,
            method_options=_method_options(args, mode),
        ).fit(train)  # fmt: skip
        row["fit_seconds"] = time.perf_counter() - started
        row["epsilon_spent"] = synth.privacy_spent().epsilon
        row["ledger"] = [entry.name for entry in synth.ledger_.entries]
        images = synth.sample(args.samples, seed=seed + 1)
    cnn = tstr_cnn_accuracy(
        images, test, schema.classes, epochs=args.cnn_epochs, seed=seed, device=args.device
    )
    row["cnn_accuracy"] = cnn.value
    row["label_fidelity"] = reference.label_fidelity(images).value
    row["frechet_distance"] = reference.frechet(images, test)
    row["reference_test_accuracy"] = reference.accuracy(test)
    row["seconds"] = time.perf_counter() - started
    if seed == harness.seeds(args)[0] and args.grids is not None:
        save_grid(images, args.grids / f"{dataset}_eps{epsilon}_{mode}.png")
    return row


def save_grid(images: ArrayData, path: Path) -> None:
    """The first 200 images as one labelled grid (PNG)."""
    pixels = np.rint(np.clip(images.values[:200], 0, 255)).astype(np.uint8)
    image_grid(pixels, np.asarray([str(v) for v in images.labels[:200]])).save(path)


def guarded(job_of, args: argparse.Namespace, spec: tuple) -> dict:
    """``job_of(args, *spec)``, or the spec (data set, epsilon, mode, seed) with the error:
    reported in the results, while the other jobs go on."""
    try:
        return job_of(args, *spec)
    except Exception as exc:
        return dict(zip(("dataset", "epsilon", "mode", "seed"), spec, strict=True),
                    error=f"{type(exc).__name__}: {exc}")  # fmt: skip


def _work(payload: tuple) -> dict:
    args, spec = payload
    return guarded(job, args, spec)


def jobs(args: argparse.Namespace) -> list[tuple]:
    """Seed by seed (a stopped run has whole seeds); epsilon 10 before 1; one real row per
    data set and seed."""
    out = []
    for seed in harness.seeds(args):
        for dataset in args.datasets.split(","):
            modes = args.modes.split(",")
            if "real" in modes:
                out.append((dataset, "-", "real", seed))
            for epsilon in args.epsilons.split(","):
                out += [(dataset, epsilon, m, seed) for m in modes if m not in ("real", "long")]
    if "long" in args.modes.split(","):
        first = args.epsilons.split(",")[0]
        for seed in harness.seeds(args):
            out += [(dataset, first, "long", seed) for dataset in args.datasets.split(",")]
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.grids is not None:
        args.grids.mkdir(parents=True, exist_ok=True)
    record = {**harness.provenance(__file__, argv), "rows": []}
    record["device_name"] = (
        torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    )
    started = time.perf_counter()
    context = mp.get_context("spawn")
    with context.Pool(args.workers) as pool:
        pending = [(args, spec) for spec in jobs(args)]
        running = []
        while pending or running:
            while pending and len(running) < args.workers:
                if time.perf_counter() - started > args.budget_s:
                    pending.clear()
                    break
                running.append(pool.apply_async(_work, (pending.pop(0),)))
            done = [r for r in running if r.ready()]
            for result in done:
                running.remove(result)
                record["rows"].append(result.get())
                record["elapsed_seconds"] = time.perf_counter() - started
                harness.write_results(args.out, record, TITLE, summary(record["rows"]))
            time.sleep(0.5)
    if args.grids is not None:
        stack_grids(args)
    print(json.dumps({"rows": len(record["rows"]), "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
