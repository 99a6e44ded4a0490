"""Anchoring trials of issue 22: one fit per (table, epsilon, seed, settings), scored as
``bench_tables.py`` scores (``tables_runs.score``), one JSON line each in ``--out``.

Settings are fields of :class:`dpforge.statistics.anchor.AnchorConfig` given as ``key=value``
(``--set steps=300 --set loss=chi2``); ``--hidden 128,128`` sets the generator's widths. The
tables are those of ``bench_tables.py`` (public ones and Adult/Thyroid); the test rows only
score. Prints 1-way / 2-way TVD, RF / LR AUC and balanced accuracy, fit seconds.

    python bench/quality_trials.py fair,nmes --epsilons 1 --seeds 1 --set steps=300 --tag s300
    python bench/quality_trials.py report      # the trials so far, as a markdown table
    python bench/quality_trials.py means --out F   # their means over seeds per table, ε, tag
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import fields, replace
from pathlib import Path

import torch

import harness
from dpforge.statistics.anchor import AnchorConfig
from tables_runs import SAMPLE_SEED, load_dataset, score, timed_fit, unmatched_scores


def _value(field_type: str, text: str):
    if text in ("true", "false"):
        return text == "true"
    if "tuple" in str(field_type):
        return tuple(int(v) for v in text.split(","))
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


def anchor_config(settings: list[str]) -> AnchorConfig:
    """AnchorConfig() with the ``key=value`` settings."""
    types = {f.name: f.type for f in fields(AnchorConfig)}
    changes = {}
    for item in settings:
        key, _, text = item.partition("=")
        if key not in types:
            raise SystemExit(f"--set {item}: AnchorConfig has no field {key!r}")
        changes[key] = _value(types[key], text)
    return replace(AnchorConfig(), **changes)


def one_run(data, epsilon: float, seed: int, config: AnchorConfig) -> dict:
    synth, fit_seconds, cpu_seconds = timed_fit(data, epsilon, seed, config)
    cpu = time.process_time()
    rows = synth.sample(len(data.train), seed=SAMPLE_SEED + seed)
    sample_cpu = time.process_time() - cpu
    out = score(rows, data, seed, None) | unmatched_scores(synth, data, seed)
    out.pop("classifier_info", None)
    out["sample_cpu_seconds"] = round(sample_cpu, 1)
    out["fit_seconds"] = round(fit_seconds, 1)
    out["fit_cpu_seconds"] = round(cpu_seconds, 1)  # the machine is shared: CPU time too
    out["epsilon_spent"] = round(synth.privacy_spent().epsilon, 4)
    return out


def report(path) -> str:
    """The JSON lines of ``path`` as one markdown table (the order they were run in)."""
    head = "| table | ε | seed | settings | 1-way | 2-way | RF AUC | LR AUC | fit s (CPU) |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        cpu = r.get("fit_cpu_seconds")
        lines.append(
            f"| {r['table']} | {r['epsilon']:g} | {r['seed']} | {r['tag']}: "
            f"{' '.join(r['settings']) or 'defaults'} | {r['tvd_1way']:.4f} | "
            f"{r['tvd_2way']:.4f} | {r['rf_auc']:.3f} | {r['lr_auc']:.3f} | "
            f"{r['fit_seconds']} ({'-' if cpu is None else cpu}) |"
        )
    return "\n".join(lines)


MEAN_KEYS = ("tvd_1way", "tvd_2way", "rf_auc", "lr_auc", "rf_bal_acc", "lr_bal_acc",
             "fit_cpu_seconds")  # fmt: skip


def means(path) -> str:
    """The JSON lines of ``path`` averaged over seeds per (table, epsilon, tag), as markdown."""
    groups: dict[tuple, list[dict]] = {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        groups.setdefault((r["table"], r["epsilon"], r["tag"]), []).append(r)
    head = (
        "| table | ε | tag | seeds | 1-way | 2-way | RF AUC | LR AUC | RF bal. acc. "
        "| LR bal. acc. | fit CPU s |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (table, epsilon, tag), rows in sorted(groups.items()):
        avg = [sum(r[k] for r in rows) / len(rows) for k in MEAN_KEYS]
        cells = [f"{v:.4f}" for v in avg[:2]] + [f"{v:.3f}" for v in avg[2:6]] + [f"{avg[6]:.1f}"]
        lines.append(f"| {table} | {epsilon:g} | {tag} | {len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "tables", help="comma list of tables (bench_tables.py's names), 'report' or 'means'"
    )
    p.add_argument("--epsilons", type=harness.floats, default=(1.0,))
    harness.add_seeds(p, "1")
    p.add_argument("--set", action="append", default=[], help="AnchorConfig key=value")
    p.add_argument("--tag", default="", help="a name for these settings in the output")
    harness.add_data_dir(p)
    harness.add_out(p, harness.RESULTS / "quality_trials.jsonl")
    args = p.parse_args(argv)
    if args.tables in ("report", "means"):  # the trials so far as markdown
        print(report(args.out) if args.tables == "report" else means(args.out))
        return
    torch.set_num_threads(1)
    config = anchor_config(args.set)
    for name in args.tables.split(","):
        data = load_dataset(name, harness.data_dir(args.data_dir))
        for epsilon in args.epsilons:
            for seed in harness.seeds(args):
                out = one_run(data, epsilon, seed, config)
                record = {"table": name, "epsilon": epsilon, "seed": seed, "tag": args.tag,
                          "settings": args.set, **out}  # fmt: skip
                with open(args.out, "a") as f:
                    f.write(json.dumps(record) + "\n")
                print(
                    f"{name} eps={epsilon:g} seed={seed} [{args.tag}] 1w {out['tvd_1way']:.4f} "
                    f"2w {out['tvd_2way']:.4f} rf {out['rf_auc']:.3f}/{out['rf_bal_acc']:.3f} "
                    f"lr {out['lr_auc']:.3f}/{out['lr_bal_acc']:.3f} fit {out['fit_seconds']} s "
                    f"(cpu {out['fit_cpu_seconds']} s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
