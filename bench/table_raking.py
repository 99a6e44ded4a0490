"""Trial (issue 22): match a pool of synthetic rows to the released marginals, then draw n.

One fit per (table, epsilon, seed) at the default settings. Its measured marginals (the noisy
counts, projected: exactly what the anchor loss reads) are captured during the fit. Then:

* ``plain``: ``n`` rows sampled as ``quality_trials.py`` samples them;
* ``w-kK-tT-klL``: ``K * n`` rows sampled with the same seed, weighted (Adam on log-weights)
  so that the weighted pool's histogram on every measured marginal comes within T times the
  TVD the noise alone gives of it (T = 0: as close as it can), plus L times the KL divergence
  from equal weights; ``n`` rows drawn from the pool by systematic resampling.

Both are scored as ``bench_tables.py`` scores. The weights read only the release:
post-processing. The library's version is :mod:`dpforge.statistics.reweight` (the same
objective at T = 0); this script is the trial's record (``results/table_matching.md``).

    python bench/table_raking.py wage,fair --epsilons 1,3 --seeds 0, --pools 4,8 \
        --tolerances 0,1 --kls 0.01 --out results/table_raking.jsonl
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import torch

import harness
from dpforge import Synthesizer
from dpforge.kinds import table as table_kind
from dpforge.statistics.marginals import encoded_cells
from tables_runs import SAMPLE_SEED, load_dataset, log_scored, score

CAPTURED: list = []
_fit = table_kind.MarginalAnchoring.fit


def _capturing_fit(self, run, setup, method, resumed):
    CAPTURED.append(setup.measured.marginals)
    return _fit(self, run, setup, method, resumed)


table_kind.MarginalAnchoring.fit = _capturing_fit


def cell_index(marginal, cells: dict) -> np.ndarray:
    """Each row's flat cell of ``marginal`` (merged cells where the marginal merged them)."""
    parts = []
    for i, name in enumerate(marginal.columns):
        index = cells[name].index
        groups = marginal.groups[i] if marginal.groups else ()
        parts.append(np.asarray(groups)[index] if len(groups) else index)
    return np.ravel_multi_index(parts, marginal.shape)


def fit_weights(
    indices: list[np.ndarray],
    targets: list[np.ndarray],
    tolerances: list[float],
    kl: float,
    steps: int = 300,
) -> np.ndarray:
    """Weights (summing to 1) of the pool's rows: each marginal's weighted histogram within its
    tolerance of its target in TVD (a hinge: noise is not fitted), plus ``kl`` times the KL
    divergence from uniform weights (keeps the weights spread). Adam on log-weights."""
    size = len(indices[0])
    theta = torch.zeros(size, dtype=torch.float64, requires_grad=True)
    index_t = [torch.as_tensor(i) for i in indices]
    target_t = [torch.as_tensor(t, dtype=torch.float64) for t in targets]
    opt = torch.optim.Adam([theta], lr=0.05)
    for _ in range(steps):
        w = torch.softmax(theta, 0)
        loss = kl * (w * torch.log(w * size)).sum()
        for index, target, tol in zip(index_t, target_t, tolerances, strict=True):
            hist = torch.zeros_like(target).index_add_(0, index, w)
            loss = loss + torch.relu(0.5 * (hist - target).abs().sum() - tol)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return torch.softmax(theta, 0).detach().numpy()


def systematic(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` rows drawn with replacement, row i about n * w_i times (low-variance resampling)."""
    edges = np.cumsum(weights / weights.sum())
    picks = np.searchsorted(edges, (rng.uniform() + np.arange(n)) / n)
    return np.minimum(picks, len(weights) - 1)


def tolerance(marginal, plan, first: int, pairs: int, factor: float) -> float:
    """``factor`` times about the TVD the noise alone puts between a target and the truth."""
    if plan is None or factor == 0:
        return 0.0
    pair = len(marginal.columns) == 2 and marginal.columns[0] != marginal.columns[1]
    std = (
        plan.pair_noise * math.sqrt(pairs)
        if pair and plan.pair_noise
        else (plan.round_one_noise * math.sqrt(first))
    )
    return (
        factor
        * 0.5
        * int(np.prod(marginal.shape))
        * std
        * math.sqrt(2 / math.pi)
        / (marginal.total)
    )


def raked_rows(synth, marginals, n: int, pool: int, seed: int, setting: tuple):
    rows = synth.sample(pool * n, seed=seed)
    label = synth.schema_.label
    cells = encoded_cells(synth.encoder_, rows, label)
    indices = [cell_index(m, cells) for m in marginals]
    targets = [m.distribution().ravel() for m in marginals]
    plan, factor, kl = synth.anchor_plan_, setting[0], setting[1]
    first = sum(1 for m in marginals if len(m.columns) == 1 or m.columns[0] == synth.schema_.label)
    tols = [tolerance(m, plan, first, len(marginals) - first, factor) for m in marginals]
    w = fit_weights(indices, targets, tols, kl, setting[2])
    picked = systematic(w, n, np.random.default_rng(seed))
    ess = 1.0 / (w**2).sum() / len(w)
    return rows.iloc[np.sort(picked)].reset_index(drop=True), float(ess)


def one_table(name: str, args) -> None:
    data = load_dataset(name, harness.data_dir(args.data_dir))
    for epsilon in args.epsilons:
        for seed in harness.seeds(args):
            CAPTURED.clear()
            synth = Synthesizer(data.schema, epsilon=epsilon, seed=seed, progress=False)
            cpu = time.process_time()
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="values outside the bounds")
                synth.fit(data.train)
            fit_cpu = time.process_time() - cpu
            marginals = CAPTURED[-1]
            n, sample_seed = len(data.train), SAMPLE_SEED + seed
            variants = {"plain": (synth.sample(n, seed=sample_seed), None, 0.0)}
            for pool in args.pools:
                for factor in args.tolerances:
                    for kl in args.kls:
                        cpu = time.process_time()
                        rows, ess = raked_rows(
                            synth, marginals, n, pool, sample_seed, (factor, kl, args.steps)
                        )
                        variants[f"w-k{pool}-t{factor:g}-kl{kl:g}"] = (
                            rows,
                            ess,
                            time.process_time() - cpu,
                        )
            for tag, (rows, ess, seconds) in variants.items():
                out = score(rows, data, seed, None)
                out.pop("classifier_info", None)
                record = {"table": name, "epsilon": epsilon, "seed": seed, "tag": tag,
                          "marginals": len(marginals), "ess": ess,
                          "rake_cpu_seconds": round(seconds, 1),
                          "fit_cpu_seconds": round(fit_cpu, 1), **out}  # fmt: skip
                log_scored(args.out, record, f"ess {ess}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tables", help="comma list of bench_tables.py's table names")
    p.add_argument("--epsilons", type=harness.floats, default=(1.0,))
    harness.add_seeds(p, "1")
    p.add_argument("--pools", type=lambda s: [int(v) for v in s.split(",")], default=[4])
    p.add_argument("--tolerances", type=harness.floats, default=(0.0, 1.0))
    p.add_argument("--kls", type=harness.floats, default=(0.01,))
    p.add_argument("--steps", type=int, default=300, help="Adam steps of the weights")
    harness.add_data_dir(p)
    harness.add_out(p, harness.RESULTS / "table_raking.jsonl")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for name in args.tables.split(","):
        one_table(name, args)


if __name__ == "__main__":
    main()
