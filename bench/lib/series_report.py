"""The report of series.py: console table and the Markdown body."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dpforge.evaluation.series import SERIES_MODELS
from dpforge.methods import METHODS
from dpforge.nets.families import SERIES_NETWORKS
from lib import harness, stats
from lib.series_runs import METRICS


def fmt(stat: dict[str, float] | None, digits: int = 4) -> str:
    """:func:`stats.fmt` as this report prints it: 4 decimals, infinity as ∞."""
    return stats.fmt(stat, digits, inf="∞")


def print_table(result: dict[str, Any]) -> None:
    """The results on the console."""
    s = result["summary"]
    print(f"\nTSTR on {result['evaluation_set']} (mean ± std over seeds)")
    print(f"{'classifier':<14} {'metric':<18} {'DP synthetic':>18} {'non-private':>18} "
          f"{'real':>18}")  # fmt: skip
    for model in SERIES_MODELS:
        for metric in METRICS:
            key = f"{model}_{metric}"
            print(
                f"{model:<14} {metric:<18} {fmt(s['private'].get(key)):>18} "
                f"{fmt(s['baseline'].get(key)):>18} {fmt(s['real'].get(key)):>18}"
            )
    p = s["private"]
    print(
        f"epsilon PLD {fmt(p['epsilon_pld'], 3)}, RDP {fmt(p['epsilon_rdp'], 3)}; "
        f"fit {fmt(p['fit_seconds'], 1)} s"
    )


def title(result: dict[str, Any]) -> str:
    """The report's title: method and networks (the critic only where one ran) and data set."""
    g_net, d_net = resolved_nets(result["config"])
    if result["runs"][0].get("steps", 0) == 0:  # the anchor alone: no critic step ran
        what = f"feature anchoring ({g_net} generator, no critic)"
    else:
        what = f"{result['method']} ({g_net} generator, {d_net} critic)"
    return f"{what} on UCR ItalyPowerDemand: train on synthetic, test on real"


def src_changes(git: dict[str, Any]) -> list[str]:
    """The files under src/ that differed from the commit (older results: "src_modified")."""
    if "src_modified" in git:
        return list(git["src_modified"])
    return [f for f in git.get("changed", []) if f.startswith("src/")]


def critic_line(run0: dict, cfg: dict, n_train: int) -> str:
    """The discriminator's steps, or that the anchoring was the whole run (its config is the
    generator's alone: no batch, clip norm or critic)."""
    if not run0["steps"]:
        return "- No discriminator steps: the anchoring's release is the whole run (share 1)."
    return (
        f"- Critic steps {run0['steps']} ({run0['epochs']:.1f} epochs), Poisson sampling rate "
        f"q = {run0['sample_rate']:.5f} (batch {cfg['batch_size']} / {n_train}), "
        f"noise multiplier σ = {run0['noise_multiplier']:.4f}, clip norm C = "
        f"{cfg['clip_norm']}, n_critic = {cfg['d_steps']}."
    )


def markdown(result: dict[str, Any], tuning: list[dict], notes: str) -> list[str]:
    """The Markdown body under the harness header."""
    s, cfg = result["summary"], result["config"]
    p, b, r = s["private"], s["baseline"], s["real"]
    run0 = result["runs"][0]
    base0 = result["baseline_runs"][0] if result["baseline_runs"] else None
    files = result.get("plots", {})
    changed = src_changes(result["git"])
    lines = [
        f"Code: dpforge at commit {(result['git']['commit'] or '?')[:7]}"
        + (f" with uncommitted changes in {', '.join(changed)}" if changed else "")
        + ".",
        "",
        f"Data: the 1,096 UCR curves (24 hourly values, 2 classes) pooled and split 70/30 "
        f"(stratified, split seed {result['split_seed']}): {result['n_train']} training series, "
        f"evaluation on the {result['evaluation_set']}. Seeds: {result['seeds']}. Synthetic "
        f"series per seed: {result['n_train']} (as many as the training set), labels drawn from "
        "the uniform prior.",
        "",
        "## Privacy",
        "",
        f"- Target (ε, δ) = ({result['epsilon']:g}, {result['delta']:g}), metadata included; "
        f"δ = {result['delta']:g} is below 1/N = {1 / result['n_train']:.2e} (N = "
        f"{result['n_train']}). {result['metadata_share']:.0%} of ε and δ pays for the "
        "channel's value range, which is NOT public: estimated under DP (one noisy histogram "
        "each of the per-series minima and maxima on a public quarter-octave grid, Gaussian "
        "noise, charged to the ledger: dpforge.statistics.metadata.channel_bound). "
        f"Estimated range per seed: {', '.join(str(x['channel_range']) for x in result['runs'])} "
        f"(the true range of the training series is [{result['train_range'][0]:.3f}, "
        f"{result['train_range'][1]:.3f}]). The length 24 and the two classes are public "
        "(UCR documentation); the label prior is uniform (free).",
        f"- Spent (ledger, metadata + training): ε = {fmt(p['epsilon_pld'], 3)} (PLD, "
        f"reported), {fmt(p['epsilon_rdp'], 3)} (RDP) at δ = {result['delta']:g}.",
        anchor_line(run0),
        critic_line(run0, cfg, result["n_train"]),
        f"- Fit wall time: {fmt(p['fit_seconds'], 1)} s per seed (DP), "
        f"{fmt(b.get('fit_seconds'), 1)} s (non-private).",
        "- Non-private baseline: the same code path with ε = ∞ (σ = 0, C = ∞; the channel "
        "range from the same histograms without noise: "
        + (f"{base0['channel_range']}" if base0 else "-")
        + "), the same config and the same number of steps"
        + (f" ({base0['steps']})" if base0 else "")
        + "; its ledger holds NonPrivateDpEvents, so PLD and RDP both give ε = "
        f"{fmt(b.get('epsilon_pld'), 3)} / {fmt(b.get('epsilon_rdp'), 3)}.",
        "- Hyperparameters were selected on a validation split of the TRAINING part (see "
        "Tuning); the test split was never read for it. This selection is NOT privacy-accounted: "
        "the ε above covers one training run with the chosen hyperparameters.",
        "",
        "## Results (mean ± std over seeds)",
        "",
        "Classifiers trained on the series in the column, scored on the real series of the "
        f"{result['evaluation_set']}. "
        "Random forest: 200 trees on the 24 raw values; 1-NN DTW: nearest training series by "
        "dynamic time warping (unconstrained window).",
        "",
        "| classifier | metric | DP synthetic (ε = 3) | non-private synthetic (ε = ∞) | real "
        "training series |",
        "|---|---|---|---|---|",
    ]
    for model in SERIES_MODELS:
        for metric in METRICS:
            key = f"{model}_{metric}"
            lines.append(
                f"| {model} | {metric.replace('_', ' ')} | {fmt(p.get(key))} | "
                f"{fmt(b.get(key))} | {fmt(r.get(key))} |"
            )
    lines += ["", "Per seed (DP): " + "; ".join(per_seed(x) for x in result["runs"]) + "."]
    if result["baseline_runs"]:
        lines.append(
            "Per seed (non-private): "
            + "; ".join(per_seed(x) for x in result["baseline_runs"])
            + "."
        )
    lines += moved_markdown(result)
    if "synthetic_to_train_median" in p:
        lines += [
            "",
            "## Closeness to training records (DTW, squared distances)",
            "",
            "| series | median distance to nearest training series | 5 % quantile | minimum |",
            "|---|---|---|---|",
            f"| DP synthetic | {fmt(p['synthetic_to_train_median'], 3)} | "
            f"{fmt(p['synthetic_to_train_p05'], 3)} | {fmt(p['synthetic_to_train_min'], 3)} |",
        ]
        if "synthetic_to_train_median" in b:
            lines.append(
                f"| non-private synthetic | {fmt(b['synthetic_to_train_median'], 3)} | "
                f"{fmt(b['synthetic_to_train_p05'], 3)} | {fmt(b['synthetic_to_train_min'], 3)} |"
            )
        lines.append(
            f"| real test series (held out) | {fmt(p['heldout_to_train_median'], 3)} | "
            f"{fmt(p['heldout_to_train_p05'], 3)} | {fmt(p['heldout_to_train_min'], 3)} |"
        )
    if files:
        lines += ["", "## Plots (seed " + str(result["seeds"][0]) + ")", ""]
        for key, what in (("private", "DP (ε = 3)"), ("baseline", "non-private")):
            if key in files:
                lines.append(
                    f"- {what}: `{files[key]['nearest']}` (3 generated series per class, solid, "
                    f"over their nearest training series by DTW, dashed), "
                    f"`{files[key]['per_class']}` (10 generated series per class above 10 real "
                    "ones)."
                )
    lines += ["", "## Configuration", "", "```json", json.dumps(cfg, indent=2), "```"]
    if tuning:
        lines += ["", *tuning_markdown(tuning)]
    if notes.strip():
        lines += ["", notes.strip()]
    return lines


def anchor_line(run: dict) -> str:
    """What the feature anchoring of a run released and trained (or that it had none)."""
    anchor = run.get("anchor")
    if not anchor:
        return "- No feature anchoring (the GAN alone)."
    fid = run["label_fidelity"]
    return (
        f"- Feature anchoring (share {anchor['share']:g}): one Gaussian release of per-class "
        f"sums of {anchor['n_features']} random Fourier frequencies per view (values, first "
        f"differences; bandwidths {anchor['bandwidths']}) and class counts, noise multiplier "
        f"{run['anchor_noise_multiplier']:.4f}; generator {run['generator'][0]} "
        f"{run['generator'][1]} trained {anchor['steps']} steps to match it. Label fidelity "
        f"(random forest trained on the real training series labels the synthetic ones as "
        f"requested): {fid['overall']:.3f} (per class {fid['per_class']}). Ledger: "
        + "; ".join(run["ledger"])
        + "."
    )


def resolved_nets(cfg: dict[str, Any]) -> tuple[str, str]:
    """The network families a config gets on time series ("auto": the first listed)."""
    g, d = cfg["generator_net"], cfg.get("discriminator_net", "auto")  # none: the anchor alone
    return (
        next(iter(SERIES_NETWORKS.generators)) if g == "auto" else g,
        next(iter(SERIES_NETWORKS.discriminators)) if d == "auto" else d,
    )


def per_seed(run: dict) -> str:
    """One seed's accuracies, for the per-seed lines."""
    t = run["tstr"]
    return (
        f"seed {run['seed']}: RF {t['random_forest']['accuracy']:.3f}, "
        f"1-NN DTW {t['knn_dtw']['accuracy']:.3f}"
    )


def tuning_markdown(rows: list[dict]) -> list[str]:
    """The tuning log as a table."""
    out = [
        "## Tuning (validation split of the training part; the test split never read)",
        "",
        "Fit on 80 % of the training part (613 series), scored on the other 20 % (154 series); "
        "mean ± std over the seeds given. NOT privacy-accounted.",
        "",
        "DTW: median over synthetic series of the DTW distance to the nearest series of the fit "
        "part (for real held-out series it is about 0.2); a large value means the generated "
        "curves are far from any real one. Commit: the library version the row ran with (+: "
        "with uncommitted changes in src/); the library changed while tuning, see the notes.",
        "",
        "| # | settings (changes from DPWGANConfig defaults) | seeds | steps | σ | RF acc | 1-NN "
        "DTW acc | DTW | fit s | commit | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows, start=1):
        seeds = ",".join(str(s) for s in r.get("seeds", []))
        out.append(
            f"| {i} | {r['change']} | {seeds} | {r['steps']} | {r['sigma']} | {r['rf']} | "
            f"{r['knn']} | {r.get('dtw', '-')} | {r['fit_seconds']} | {r.get('commit', '-')} | "
            f"{r.get('note', '')} |"
        )
    return out


def moved_markdown(result: dict[str, Any]) -> list[str]:
    """Moved samples next to the same draws unmoved (same fits, same sampling seed)."""
    runs = [("DP", r) for r in result["runs"]] + [("non-private", r) for r in
                                                   result["baseline_runs"]]  # fmt: skip
    if not runs or "unmoved" not in runs[0][1]:
        return []
    lines = [
        "",
        "Moved samples (the library's sampling: the generator's draws moved to match the "
        "released embedding, `dpforge.statistics.particles`) next to the SAME draws unmoved "
        "(`sample(..., move=False)`, same fit, same sampling seed):",
        "",
        "| run | seed | 1-NN DTW moved | 1-NN DTW unmoved | RF moved | RF unmoved | "
        "embedding gap moved / unmoved | median DTW to nearest train moved / unmoved |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in runs:
        m, u = r["tstr"], r["unmoved"]["tstr"]
        g = r["embedding_gap"]
        c, cu = r["closeness"], r["unmoved"]["closeness"]
        lines.append(
            f"| {name} | {r['seed']} | {m['knn_dtw']['accuracy']:.3f} | "
            f"{u['knn_dtw']['accuracy']:.3f} | {m['random_forest']['accuracy']:.3f} | "
            f"{u['random_forest']['accuracy']:.3f} | {g['moved']:.5f} / {g['unmoved']:.5f} | "
            f"{c['synthetic_to_train_median']:.3f} / {cu['synthetic_to_train_median']:.3f} |"
        )
    return lines


def append_tuning(
    result: dict[str, Any], chosen: dict[str, Any], args, path: Path, run_keys: tuple[str, ...]
) -> None:
    """One line for this validation run, appended to the tuning log."""
    p = result["summary"]["private"]
    defaults = asdict(METHODS[args.method][1]())
    change = ", ".join(
        [f"{k}={v}" for k, v in chosen.items() if k in run_keys or defaults.get(k) != v]
        + [f"{k}={v}" for k, v in vars(args).items() if k.startswith("anchor_") and v is not None]
    )
    row = {
        "change": change or "defaults",
        "steps": int(p["steps"]["mean"]),
        "sigma": round(p["noise_multiplier"]["mean"], 3),
        "rf": fmt(p["random_forest_accuracy"], 3),
        "knn": fmt(p["knn_dtw_accuracy"], 3),
        "fit_seconds": round(p["fit_seconds"]["mean"]),
        "dtw": fmt(p["synthetic_to_train_median"], 2),
        "heldout_dtw": round(p["heldout_to_train_median"]["mean"], 3),
        "seeds": result["seeds"],
        "commit": result["git"]["commit"][:7] + ("+" if src_changes(result["git"]) else ""),
        "epsilon": args.epsilon,
        "note": args.note,
    }
    b = result["summary"]["baseline"]
    if b:  # the non-private run of the same settings, when it was run too
        row["note"] = (
            f"{args.note} (non-private, same steps: RF {fmt(b['random_forest_accuracy'], 3)}, "
            f"1-NN DTW {fmt(b['knn_dtw_accuracy'], 3)})"
        ).strip()
    harness.append_jsonl(path, row)
    print(f"appended to {path}")
