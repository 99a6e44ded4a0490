"""Issue 24 trial: images from a decoder trained with DP-SGD, sampled from DP per-class Gaussians
of its latent codes (P3GM's idea with the roles swapped: the nonlinear map is learned
privately, the distribution in its code space is released as moments).

Why: the library's image default is a per-class Gaussian in a DP principal subspace, and even
its exact, non-private ceiling (a 10-component mixture in 80 PCA directions) stops at CNN 0.943
and Fréchet 56 on MNIST (``images_moment_ceiling.md``), short of the goal's 0.96 and 50: a
linear map cannot draw sharp strokes. A decoder can.

Each private fit, at a total (ε, δ) from the accountant:

1. **DP-SGD on a conditional autoencoder** (conv encoder -> ``tanh`` code in [-1, 1]^L; conv
   decoder of the code and the one-hot class): Poisson sampling at rate q, each example's
   gradient clipped to ``--clip``, Gaussian noise once on the sum (the library's
   ``PoissonSampler`` and ``clipped_sum_of_example_gradients``), σ calibrated by the library
   for the rest of ε after step 2's release.
2. **Per-class moments of the codes** (the library's ``class_moments`` in the identity
   subspace; the code is tanh(x / 2) of a layer-normalised x, so its norm is at most
   sqrt(L) / 2 whatever the record, and twice the code scaled by 1/sqrt(L) has norm at most 1:
   sensitivity sqrt(2 + c^2)), one Gaussian release with noise multiplier σ_m fixed by the
   moment share ``--moment-share`` of ε.
3. Sampling (post-processing): a class from the noisy counts, a code from the class's Gaussian
   (``gaussian_parameters``; ``--pooled-covariance``: the class's mean and one within-class
   covariance pooled over the classes), clipped to [-1, 1], decoded.

``--mode np`` runs the same code without clipping or noise (the non-private ceiling); ``real``
scores real training images. Scored as ``bench_images_device.py`` scores: a CNN trained on
``--samples`` images and tested on the real test set; label fidelity and Fréchet distance of
one reference CNN per data set. A trial: nothing here is in the library yet.

    cd bench && python images_latent.py --data-dir ../../shared/datasets --device cuda \\
        --modes dp,np,real --epsilons 10,1 --seeds 3 --out results/images_latent.json

Tiny CPU check: ``--device cpu --datasets mnist --n-train 2000 --steps 30 --samples 500
--cnn-epochs 1 --reference-epochs 1 --seeds 0, --epsilons 10 --modes dp,np``.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import time
from pathlib import Path

import dp_accounting
import numpy as np
import torch

import harness
import images_latent_nets as nets
from bench_images_device import guarded, save_grid
from dpforge.data.arrays import ArrayData
from dpforge.datasets.images import load_idx_dataset
from dpforge.evaluation.images import tstr_cnn_accuracy
from dpforge.evaluation.reference import ReferenceClassifier
from dpforge.privacy.accounting import dpsgd_event, epsilon
from dpforge.privacy.calibration import noise_for_epsilon, noise_for_target
from dpforge.privacy.noise import add_gaussian_noise, make_generator
from dpforge.privacy.sampling import PoissonSampler
from dpforge.statistics.moments import Subspace, class_moments, gaussian_parameters

COUNT_WEIGHT = 0.5  # FeatureAnchorConfig's default weight of the class counts
DELTA = 1e-5
CODE_SCALE = nets.CODE_SCALE


def packed_rows(data: ArrayData, classes: list[str]) -> tuple[torch.Tensor, np.ndarray]:
    """Images scaled to [-1, 1], flattened, with their one-hot class; and the class indices."""
    index = {name: i for i, name in enumerate(classes)}
    labels = np.asarray([index[str(v)] for v in data.labels], dtype=np.int64)
    pixels = torch.as_tensor(np.asarray(data.values, dtype=np.float32) / 127.5 - 1.0)
    onehot = torch.nn.functional.one_hot(torch.as_tensor(labels), len(classes)).float()
    return torch.cat([pixels.reshape(len(pixels), -1), onehot], dim=1), labels


def budget(args: argparse.Namespace, eps: float, n: int) -> tuple[float, float, float]:
    """(σ of DP-SGD, σ_m of the moments, total ε from the accountant) for ``eps``."""
    q = args.batch / n
    moments_sigma = noise_for_target(dp_accounting.GaussianDpEvent, args.moment_share * eps, DELTA)
    base = dp_accounting.GaussianDpEvent(moments_sigma)
    sigma = noise_for_epsilon(eps, DELTA, q, args.steps, base_event=base)
    spent = epsilon(dp_accounting.ComposedDpEvent([base, dpsgd_event(q, sigma, args.steps)]), DELTA)
    return sigma, moments_sigma, spent


def moments_only(eps: float) -> tuple[float, float]:
    """(σ_m, ε from the accountant) when the moments are the only release."""
    moments_sigma = noise_for_target(dp_accounting.GaussianDpEvent, eps, DELTA)
    return moments_sigma, epsilon(dp_accounting.GaussianDpEvent(moments_sigma), DELTA)


def train(model, rows: torch.Tensor, args, sigma: float | None, gen) -> None:
    """DP-SGD (``sigma`` not None) or plain minibatch training for ``args.steps`` steps."""
    n = len(rows)
    q = args.batch / n
    sampler = PoissonSampler(n, q)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    for _ in range(args.steps):
        batch = rows[sampler.sample(gen)]
        opt.zero_grad(set_to_none=False)
        if sigma is None:
            nets.plain_loss(model, batch).backward()
        else:
            sums = nets.clipped_sum(model, batch, args.clip, args.chunk)
            noisy = add_gaussian_noise(sums, sigma * args.clip, gen)
            for p, g in zip(model.parameters(), noisy, strict=True):
                p.grad = g / (q * n)
        opt.step()


def codes(model, rows: torch.Tensor) -> np.ndarray:
    """The private records' codes in [-1, 1]^L (input of the moments release)."""
    with torch.inference_mode():
        parts = [
            model.encoder(model.split(rows[s : s + 2048])[0]) for s in range(0, len(rows), 2048)
        ]
    return torch.cat(parts).double().cpu().numpy()


def pooled_parameters(moments, floor: float = 1e-6, min_count: float = 10.0):
    """Per-class means and ONE within-class covariance pooled over the classes, as Cholesky
    factors (K, r, r): post-processing of the per-class release. Each class's noisy second
    moment carries the same noise, so the pooled one has K times its class's records for
    sqrt(K) times the noise; the conditional decoder draws what differs between classes."""
    counts = np.maximum(moments.counts, min_count)
    means = moments.sums / counts[:, None]
    within = moments.second.sum(0) - np.einsum("k,ki,kj->ij", counts, means, means)
    values, vectors = np.linalg.eigh(within / counts.sum())
    factor = np.linalg.cholesky((vectors * np.maximum(values, floor)) @ vectors.T)
    return means, np.broadcast_to(factor, (len(means), *factor.shape))


def sample(model, moments, n: int, classes: list[str], seed: int, device, pooled: bool):
    """Post-processing: classes from the noisy counts, codes from each class's Gaussian."""
    rng = np.random.default_rng(seed)
    latent = moments.sums.shape[1]
    means, factors = (pooled_parameters if pooled else gaussian_parameters)(moments)
    share = np.maximum(moments.counts, 0.0)
    y = rng.choice(len(classes), size=n, p=share / share.sum())
    u = means[y] + np.einsum("nij,nj->ni", factors[y], rng.standard_normal((n, latent)))
    z = torch.as_tensor(np.clip(u * CODE_SCALE * math.sqrt(latent), -1, 1), dtype=torch.float32)
    onehot = torch.nn.functional.one_hot(torch.as_tensor(y), len(classes)).float()
    with torch.inference_mode():
        out = [
            model.decode(z[s : s + 2048].to(device), onehot[s : s + 2048].to(device))
            for s in range(0, n, 2048)
        ]
    pixels = (torch.cat(out).cpu().numpy() + 1.0) * 127.5
    return ArrayData(pixels, np.asarray([classes[k] for k in y]))


def fit(args, data: tuple, mode: str, eps: float, seed: int):
    """One fit of ``mode`` ("dp", "np" or "public") at ``eps``: (samples, details)."""
    train_data, classes, public = data
    if mode == "public" and args.arch != "sequential":
        raise ValueError("mode public needs --arch sequential (its decoder takes no class)")
    device = torch.device(args.device)
    rows, labels = packed_rows(train_data, classes)
    rows = rows.to(device)
    shape = tuple(np.shape(train_data.values)[1:])
    with torch.random.fork_rng(devices=[]):  # the initial weights, without touching the caller's
        torch.manual_seed(seed)
        model = nets.autoencoder(args.arch, shape, args.latent, len(classes), args.width)
        model = model.to(device)
    gen = make_generator(seed, device)
    if mode == "public":  # the public set trains the autoencoder; all of ε goes to the moments
        sigma, (moments_sigma, spent) = None, moments_only(eps)
        public_rows = packed_rows(public, list(np.unique(public.labels).astype(str)))[0]
        train(model, public_rows.to(device), args, None, gen)
    else:
        sigma, moments_sigma, spent = (
            (None, 0.0, math.inf) if mode == "np" else budget(args, eps, len(rows))
        )
        train(model, rows, args, sigma, gen)
    model.eval()
    z = codes(model, rows) / CODE_SCALE  # norm <= sqrt(L): class_moments' bound after 1/sqrt(L)
    if np.linalg.norm(z, axis=1).max() > math.sqrt(z.shape[1]) * (1 + 1e-5):
        raise RuntimeError("a code exceeds the norm bound the moments' sensitivity assumes")
    rng = np.random.default_rng(seed + 7)
    identity = Subspace(np.eye(z.shape[1]), np.zeros(z.shape[1]))
    moments = class_moments(z, labels, len(classes), identity, moments_sigma, COUNT_WEIGHT, rng)
    images = sample(model, moments, args.samples, classes, seed + 1, device, args.pooled)
    return images, {"sigma": sigma, "moments_sigma": moments_sigma, "epsilon_spent": spent}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_data_dir(p)
    harness.add_seeds(p)
    harness.add_out(p, Path("results/images_latent.json"))
    p.add_argument("--datasets", default="mnist,fashion-mnist")
    p.add_argument("--epsilons", default="10,1")
    p.add_argument("--modes", default="dp,np,real")
    p.add_argument("--device", default="cpu")
    p.add_argument("--n-train", type=int, default=None)
    p.add_argument(
        "--public-n",
        type=int,
        default=None,
        help="mode public: the other data set's first N training images (all)",
    )
    p.add_argument("--arch", choices=sorted(nets.ARCHITECTURES), default="conditional")
    p.add_argument(
        "--time-steps",
        type=int,
        default=0,
        help="only time this many DP-SGD steps on --n-train MNIST images, print",
    )
    p.add_argument("--latent", type=int, default=32)
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch", type=int, default=512, help="expected Poisson batch size")
    p.add_argument("--chunk", type=int, default=512, help="examples per per-example pass")
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--moment-share", type=float, default=0.1)
    p.add_argument("--samples", type=int, default=10000)
    p.add_argument(
        "--pooled-covariance",
        dest="pooled",
        action="store_true",
        help="one within-class covariance pooled over the classes (default: each class its "
        "own; pooled measured worse, images_latent.md)",
    )
    p.add_argument(
        "--join",
        nargs="+",
        type=Path,
        default=None,
        help="only join these result files' rows (each tagged with its variant) into --out",
    )
    p.add_argument("--cnn-epochs", type=int, default=5)
    p.add_argument("--reference-epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--budget-s", type=float, default=math.inf, help="start no job after this")
    p.add_argument("--grids", type=Path, default=None)
    return p.parse_args(argv)


def variant(settings) -> str:
    """The fit's settings that differ between the trial's rows, as one label."""
    cov = "pooled" if settings.get("pooled", True) else "per-class"
    return (f"batch {settings['batch']}, {settings['steps']} steps, code {settings['latent']}, "
            f"{cov} covariance")  # fmt: skip


def join(args: argparse.Namespace) -> None:
    """Rows of several result files, each tagged with its file's variant, in one record."""
    rows = []
    for path in args.join:
        record = harness.read_results(path)
        label = variant(record["settings"])
        rows += [{**r, "file": f"{path.parent.name}/{path.name}",
                  "variant": "real training images" if r["mode"] == "real" else label}
                 for r in record["rows"]]  # fmt: skip
    write(args, {**harness.provenance("images_latent.py"), "rows": rows})


_CACHE: dict[str, tuple] = {}
OTHER = {"mnist": "fashion-mnist", "fashion-mnist": "mnist"}


def _data(args: argparse.Namespace, dataset: str) -> tuple:
    """(train, test, classes, reference, public) of a data set, once per worker; public: the
    other data set's first ``--public-n`` training images, when a mode needs them."""
    if dataset not in _CACHE:
        root = harness.data_dir(args.data_dir)
        train_data, test, schema = load_idx_dataset(dataset, root, args.n_train)
        public = None
        if "public" in args.modes.split(","):
            public = load_idx_dataset(OTHER[dataset], root, args.public_n)[0]
        reference = ReferenceClassifier(schema.classes, args.reference_epochs, 0,
                                        device=args.device).fit(train_data)  # fmt: skip
        _CACHE[dataset] = (train_data, test, list(schema.classes), reference, public)
    return _CACHE[dataset]


def job(args: argparse.Namespace, dataset: str, eps: str, mode: str, seed: int) -> dict:
    """One fit (or the real-data reference) and its scores."""
    torch.set_num_threads(args.threads)
    train_data, test, classes, reference, public = _data(args, dataset)
    row = {
        "dataset": dataset,
        "epsilon": eps,
        "mode": mode,
        "seed": seed,
        "variant": variant(vars(args)),
    }
    started = time.perf_counter()
    if mode == "real":
        images = ArrayData(train_data.values[: args.samples], train_data.labels[: args.samples])
    else:
        level = math.inf if eps == "-" else float(eps)
        images, details = fit(args, (train_data, classes, public), mode, level, seed)
        row.update(details, fit_seconds=time.perf_counter() - started)
    if mode == "real":
        row["variant"] = "real training images"
    row["cnn_accuracy"] = tstr_cnn_accuracy(images, test, classes, epochs=args.cnn_epochs,
                                            seed=seed, device=args.device).value  # fmt: skip
    row["label_fidelity"] = reference.label_fidelity(images).value
    row["frechet_distance"] = reference.frechet(images, test)
    row["seconds"] = time.perf_counter() - started
    if args.grids is not None and seed == harness.seeds(args)[0]:
        save_grid(images, args.grids / f"latent_{dataset}_eps{eps}_{mode}.png")
    return row


def _work(payload: tuple) -> dict:
    args, spec = payload
    return guarded(job, args, spec)


def jobs(args: argparse.Namespace) -> list[tuple]:
    """Seed by seed, so a stopped run has whole seeds; real data once per data set and seed."""
    out = []
    for seed in harness.seeds(args):
        for dataset in args.datasets.split(","):
            for mode in args.modes.split(","):
                for eps in ["-"] if mode in ("real", "np") else args.epsilons.split(","):
                    out.append((dataset, eps, mode, seed))
    return out


METRICS = ("cnn_accuracy", "label_fidelity", "frechet_distance", "fit_seconds")


def summary(rows: list[dict]) -> list[str]:
    """One line per data set, ε, mode and variant: mean ± sd over its seeds."""
    head = "| data | ε | mode | variant | seeds | CNN accuracy | label fidelity | Fréchet | fit s |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    ok = [r for r in rows if "error" not in r]
    keys = sorted({_key(r) for r in ok})
    for key in keys:
        group = [r for r in ok if _key(r) == key]
        cells = [_cell([r.get(m) for r in group]) for m in METRICS]
        lines.append(f"| {' | '.join(key)} | {len(group)} | " + " | ".join(cells) + " |")
    lines += [f"- error: {r['dataset']} {r['epsilon']} {r['mode']} seed {r['seed']}: {r['error']}"
              for r in rows if "error" in r]  # fmt: skip
    return lines


def _key(row: dict) -> tuple[str, str, str, str]:
    return row["dataset"], row["epsilon"], row["mode"], row.get("variant", "")


def _cell(values: list) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return (
        f"{np.mean(values):.3f} ± {np.std(values):.3f}" if len(values) > 1 else f"{values[0]:.3f}"
    )


def time_steps(args: argparse.Namespace) -> None:
    """Seconds (wall and CPU) per DP-SGD step of ``--arch`` on the first ``--n-train`` MNIST
    images at σ = 1, appended to ``--out`` as JSON lines."""
    torch.set_num_threads(args.threads)
    train_data, _, schema = load_idx_dataset("mnist", harness.data_dir(args.data_dir), args.n_train)
    rows, _ = packed_rows(train_data, list(schema.classes))
    shape = tuple(np.shape(train_data.values)[1:])
    model = nets.autoencoder(args.arch, shape, args.latent, len(schema.classes), args.width)
    args.steps = args.time_steps
    with harness.Timer() as timer:
        train(model, rows, args, 1.0, make_generator(0))
    steps = args.time_steps
    row = {"arch": args.arch, "records": len(rows), "expected_batch": args.batch,
           "chunk": args.chunk, "threads": args.threads, "steps": steps,
           "wall_s_per_step": timer.seconds / steps, "cpu_s_per_step": timer.cpu_seconds / steps,
           "command": harness.command_line("images_latent.py"),
           "machine": harness.machine()}  # fmt: skip
    print(row, flush=True)
    harness.append_jsonl(args.out, row)


def write(args: argparse.Namespace, record: dict) -> None:
    title = "Images from a DP-SGD decoder and DP latent moments (issue 24 trial)"
    harness.write_results(args.out, record, title, summary(record["rows"]))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.join:
        return join(args)
    if args.time_steps:
        return time_steps(args)
    if args.grids is not None:
        args.grids.mkdir(parents=True, exist_ok=True)
    record = {**harness.provenance("images_latent.py", argv), "settings": vars(args)}
    rows: list[dict] = []
    started = time.perf_counter()
    todo = jobs(args)
    ctx = mp.get_context("spawn")
    with ctx.Pool(args.workers) as pool:
        pending = [pool.apply_async(_work, ((args, spec),)) for spec in todo[: args.workers]]
        queue = todo[args.workers :]
        while pending:
            rows.append(pending.pop(0).get())
            print(rows[-1], flush=True)
            if queue and time.perf_counter() - started < args.budget_s:
                pending.append(pool.apply_async(_work, ((args, queue.pop(0)),)))
            record["rows"] = rows
            write(args, record)


if __name__ == "__main__":
    main()
