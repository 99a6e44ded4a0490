"""Variance components of ItalyPowerDemand's 1-NN DTW from ``series_spread.py``'s crossed runs.

Model (balanced, random effects, all three crossed): ``y[r, t, s]`` with
r the release seed (DP range, count, feature map, embedding noise), t the training seed
(generator init and latent batches), s the sampling seed (labels, latents, moving). The
sampling seeds of a cell are ``--sample-seeds``, the same in every cell (the default's own
10,000 + seed is left out: it is the check). Expected mean squares give the components
(negative estimates shown as they come, read as 0 in the sums). "Training given the release"
is ``t + rt`` (what a selection among generators fitted to the same release can act on).

Example (from bench/)::

    python series_spread_report.py --log results/series_spread.jsonl
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

ONE_SERIES = 1 / 329


def load(path: str, name: str, epsilon: float) -> dict:
    """The crossed cells of set ``name`` (Italy: at ``epsilon``), by (release, train)."""
    cells: dict = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if row.get("map_seed") is not None or row.get("set", "italy") != name:
                continue
            if name == "italy" and row["epsilon"] != epsilon:
                continue
            cells[(row["release"], row["train"])] = row
    return cells


def components(y: np.ndarray) -> dict:
    """Three-way crossed random-effects ANOVA, one run per cell: ``y`` shape (R, T, S) for
    release, training and sampling seeds (the sampling seeds are the same in every cell, so
    sampling is crossed with the others). Variance components from the expected mean
    squares; ``one_at_a_time``: the mean variance over one factor with the other two held
    (what varying that seed alone shows)."""
    a, b, c = y.shape
    g = y.mean()
    m_a, m_b, m_c = y.mean(axis=(1, 2)), y.mean(axis=(0, 2)), y.mean(axis=(0, 1))
    m_ab, m_ac, m_bc = y.mean(axis=2), y.mean(axis=1), y.mean(axis=0)
    ms = {
        "r": (b * c * ((m_a - g) ** 2).sum() / (a - 1), a - 1),
        "t": (a * c * ((m_b - g) ** 2).sum() / (b - 1), b - 1),
        "s": (a * b * ((m_c - g) ** 2).sum() / (c - 1), c - 1),
    }
    ab = m_ab - m_a[:, None] - m_b[None, :] + g
    ac = m_ac - m_a[:, None] - m_c[None, :] + g
    bc = m_bc - m_b[:, None] - m_c[None, :] + g
    ms["rt"] = (c * (ab**2).sum() / ((a - 1) * (b - 1)), (a - 1) * (b - 1))
    ms["rs"] = (b * (ac**2).sum() / ((a - 1) * (c - 1)), (a - 1) * (c - 1))
    ms["ts"] = (a * (bc**2).sum() / ((b - 1) * (c - 1)), (b - 1) * (c - 1))
    rest = (y - m_ab[:, :, None] - m_ac[:, None, :] - m_bc[None, :, :]
            + m_a[:, None, None] + m_b[None, :, None] + m_c[None, None, :] - g)  # fmt: skip
    ms["rts"] = ((rest**2).sum() / ((a - 1) * (b - 1) * (c - 1)), (a - 1) * (b - 1) * (c - 1))
    v = {k: m for k, (m, _) in ms.items()}
    comp = {
        "rts": v["rts"],
        "rt": (v["rt"] - v["rts"]) / c,
        "rs": (v["rs"] - v["rts"]) / b,
        "ts": (v["ts"] - v["rts"]) / a,
    }
    comp["r"] = (v["r"] - v["rt"] - v["rs"] + v["rts"]) / (b * c)
    comp["t"] = (v["t"] - v["rt"] - v["ts"] + v["rts"]) / (a * c)
    comp["s"] = (v["s"] - v["rs"] - v["ts"] + v["rts"]) / (a * b)
    pos = {k: max(0.0, x) for k, x in comp.items()}
    var = {
        "release (r)": comp["r"],
        "training given the release (t + rt)": pos["t"] + pos["rt"],
        "sampling given the fit (s + rs + ts + rts)": pos["s"] + pos["rs"] + pos["ts"] + pos["rts"],
    }
    var["total (one run)"] = sum(pos.values())
    one = {
        "release alone": y.var(axis=0, ddof=1).mean(),
        "training alone": y.var(axis=1, ddof=1).mean(),
        "sampling alone": y.var(axis=2, ddof=1).mean(),
    }
    return {"var": var, "ms": ms, "comp": comp, "one": one, "mean": g, "shape": y.shape}


def sd(v: float) -> str:
    return f"{math.sqrt(v):.4f}" if v > 0 else f"0 (estimate {v:+.1e})"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--log", default="results/series_spread.jsonl")
    p.add_argument("--sample-seeds", default="20000,20001")
    p.add_argument("--epsilon", type=float, default=3.0)
    p.add_argument("--set", default="italy")
    p.add_argument("--sampling", default=None, help="series_spread_sampling.py's log instead")
    a = p.parse_args()
    if a.sampling:
        sampling_round(a.sampling)
        return
    samples = a.sample_seeds.split(",")
    cells = load(a.log, a.set, a.epsilon)
    releases = sorted({r for r, _ in cells})
    trains = sorted({t for _, t in cells})
    full = [r for r in releases if all((r, t) in cells for t in trains)]
    y = np.array([[[cells[(r, t)]["knn"][s] for s in samples] for t in trains] for r in full])
    print(f"releases {full}, trains {trains}, sampling seeds {samples}")
    print("| release \\ train | " + " | ".join(f"t = {t}" for t in trains) + " | mean |")
    print("|---|" + "---|" * (len(trains) + 1))
    for ri, r in enumerate(full):
        vals = [" / ".join(f"{v:.3f}" for v in y[ri, ti]) for ti in range(len(trains))]
        print(f"| r = {r} | " + " | ".join(vals) + f" | {y[ri].mean():.4f} |")
    print("| mean | " + " | ".join(f"{y[:, ti].mean():.4f}" for ti in range(len(trains)))
          + f" | {y.mean():.4f} |")  # fmt: skip
    c = components(y)
    print(f"\nmean {c['mean']:.4f}; shape {c['shape']}")
    for k, (ms, df) in c["ms"].items():
        print(f"MS {k}: {ms:.3e} (df {df}); component {c['comp'][k]:+.2e}")
    print("\n| source | variance | sd | sd in test series |")
    print("|---|---|---|---|")
    for k, v in c["var"].items():
        series = f"{math.sqrt(v) / ONE_SERIES:.1f}" if v > 0 else "0"
        print(f"| {k} | {v:.2e} | {sd(v)} | {series} |")
    print("\n| one seed varied, the others held | mean variance | sd | sd in test series |")
    print("|---|---|---|---|")
    for k, v in c["one"].items():
        print(f"| {k} | {v:.2e} | {sd(v)} | {math.sqrt(v) / ONE_SERIES:.1f} |")
    diag = [cells[(r, r)]["knn"].get(str(10_000 + r)) for r in full if (r, r) in cells]
    print(f"\ncheck (release = train = seed, sampling 10,000 + seed): {diag}")
    loss = np.array([[cells[(r, t)]["generator_loss"] for t in trains] for r in full])
    gaps = np.array([[np.mean([cells[(r, t)]["moved_gap"][s] for s in samples])
                      for t in trains] for r in full])  # fmt: skip
    print("generator loss (rows release, columns train):\n", np.round(loss, 4))
    print("moved gap (mean over sampling seeds):\n", np.round(gaps, 4))


def sampling_round(path: str) -> None:
    """Remedy round 1 (``series_spread_sampling.py``): per run the mean over its sampling
    seeds, then over runs the mean, runs worse than the default, pooled sampling sd."""
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    names = ("default", "best4", "balanced")
    print("| candidate | " + " | ".join(f"{r['set']} s{r['seed']}" for r in rows)
          + " | mean | worse than default | pooled sampling sd | best4 picks set 0 |")  # fmt: skip
    print("|---|" + "---|" * (len(rows) + 4))
    for name in names:
        means = [np.mean([s[name] for s in r["runs"].values()]) for r in rows]
        base = [np.mean([s["default"] for s in r["runs"].values()]) for r in rows]
        var = [np.var([s[name] for s in r["runs"].values()], ddof=1) if len(r["runs"]) > 1
               else np.nan for r in rows]  # fmt: skip
        worse = sum(m < b - 1e-9 for m, b in zip(means, base, strict=True))
        picks = sum(s["best4_chosen"] == 0 for r in rows for s in r["runs"].values())
        total = sum(len(r["runs"]) for r in rows)
        print(f"| {name} | " + " | ".join(f"{m:.4f}" for m in means)
              + f" | {np.mean(means):.4f} | {'' if name == 'default' else worse} | "
              f"{math.sqrt(np.nanmean(var)) if not np.isnan(np.nanmean(var)) else float('nan'):.4f}"
              f" | {picks} of {total} |")  # fmt: skip


if __name__ == "__main__":
    main()
