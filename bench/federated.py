"""Federated tables: utility of the two trust models against the central run (issue 23.2).

Adult (balanced training rows, public schema) is split into ``--sites`` sites twice: at random,
and by a column (``--by``: each value's rows to one site). For each split, trust model (local:
each site adds the full noise; secagg: Flower SecAgg+ shares, t = ``--tolerate``) and epsilon,
the federation runs in this process (Flower messages, :mod:`dpforge.engines.federated_sim`); the
central run fits the whole table in memory with the same settings. Each fit samples as many rows
as the training table; 1-way / 2-way TVD to the real training rows and a random forest trained on
the synthetic rows, tested on the real test rows (AUC of ">50K"). Rows are appended to
``<out>.jsonl`` as they finish; the .json/.md are rewritten after each.

    nice -n 10 python bench/federated.py --seeds 1 --epsilons 1,3 --anchor-steps 300
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from dpforge import Synthesizer  # noqa: E402
from dpforge.datasets.adult import ADULT_LABEL, load_adult  # noqa: E402
from dpforge.engines.federated_sim import simulated_engine, split_table  # noqa: E402
from dpforge.engines.federated_trust import Trust  # noqa: E402
from dpforge.evaluation.fidelity import marginal_fidelity  # noqa: E402
from dpforge.evaluation.utility import auroc_scores, predict_test  # noqa: E402
from dpforge.statistics.anchor import AnchorConfig  # noqa: E402
from lib.harness import (  # noqa: E402
    Timer,
    add_data_dir,
    add_out,
    append_jsonl,
    data_dir,
    floats,
    provenance,
    read_jsonl,
    results,
    seed_list,
    write_results,
)  # fmt: skip
from peers.cells import ADULT_DECLARED_BOUNDS, declare_bounds  # noqa: E402

RESULTS = results("federated", "tables.json")


def score(synthetic, train, test, schema, seed: int) -> dict:
    """TVD on public cells (the bounds the fits estimate under DP declared for scoring only,
    as the tables benchmark declares them) and the RF trained on synthetic, tested on real."""
    fid = marginal_fidelity(train, synthetic, declare_bounds(schema, ADULT_DECLARED_BOUNDS))
    pred = predict_test(synthetic, test, schema, classifier="rf", seed=seed)
    return {
        "tvd_1way": fid.mean_one_way,
        "tvd_2way": fid.mean_two_way,
        "rf_auc": auroc_scores(pred)["per_class"][">50K"],
    }


def run(setting: dict, train, test, schema, args) -> dict:
    """One fit (central or federated), sampled and scored."""
    anchor = AnchorConfig(steps=args.anchor_steps)  # the same for the central and the sites' runs
    synth = Synthesizer(
        schema, epsilon=setting["epsilon"], seed=setting["seed"], progress=False, anchor=anchor
    )
    data, sites = train, None
    with Timer() as fit, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if setting["trust"] != "central":
            parts = split_table(
                train, args.sites, setting["by"], np.random.default_rng(setting["seed"])
            )
            trust = Trust(
                setting["trust"], args.sites, args.tolerate if setting["trust"] == "secagg" else 0
            )
            data, sites = simulated_engine(parts, schema, trust, seed=1000 + setting["seed"])
            sites = sites.site_ledgers
        synth.fit(data)
    synthetic = synth.sample(len(train), seed=7 + setting["seed"])
    row = {**setting, **score(synthetic, train, test, schema, setting["seed"])}
    row["fit_seconds"] = fit.seconds
    row["epsilon_ledger"] = synth.ledger_.epsilon(synth.delta)
    if sites is not None:
        row["site_epsilon"] = [ledger.epsilon(synth.delta) for ledger in sites()]
        row["site_rows"] = sorted(len(p) for p in parts)  # public: the benchmark's construction
        row["queries"] = data.transport.rounds
    return row


def settings(args) -> list[dict]:
    """Every (seed, epsilon): the central run, then each split under secagg and local trust;
    ``--trusts`` keeps some of them (to share the runs between processes)."""
    out = []
    for seed in seed_list(args.seeds):
        for eps in floats(args.epsilons):
            out.append({"trust": "central", "split": "-", "by": None, "epsilon": eps, "seed": seed})
            for trust in ("secagg", "local"):
                for split, by in (("random", None), (f"by {args.by}", args.by)):
                    row = {"trust": trust, "split": split, "by": by, "epsilon": eps, "seed": seed}
                    out.append(row)
    return [s for s in out if s["trust"] in args.trusts.split(",")]


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| ε | split | trust | 1-way TVD | 2-way TVD | RF AUC | fit s | ledger ε | site ε |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["epsilon"], r["split"], r["trust"])):
        site = "-" if "site_epsilon" not in r else f"{max(r['site_epsilon']):.2f}"
        lines.append(
            f"| {r['epsilon']:g} | {r['split']} | {r['trust']} | {r['tvd_1way']:.3f} | "
            f"{r['tvd_2way']:.3f} | {r['rf_auc']:.3f} | {r['fit_seconds']:.0f} | "
            f"{r['epsilon_ledger']:.3f} | {site} |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    add_out(parser, RESULTS)
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--epsilons", default="1,3")
    parser.add_argument("--sites", type=int, default=10)
    parser.add_argument("--tolerate", type=int, default=1)
    parser.add_argument("--by", default="education")
    parser.add_argument("--trusts", default="central,secagg,local", help="which runs to do")
    parser.add_argument("--anchor-steps", type=int, default=1000, help="each anchor phase's steps")
    parser.add_argument("--report-only", action="store_true", help="rewrite .json/.md only")
    parser.add_argument("--note", default="", help="a line for the .md (how the rows were run)")
    args = parser.parse_args(argv)
    log = Path(args.out).with_suffix(".jsonl")
    record = {**provenance("bench/federated.py", argv), "label": ADULT_LABEL}
    if args.report_only:
        rows = read_jsonl(log)
        body = [*table(rows), "", args.note] if args.note else table(rows)
        write_results(Path(args.out), {**record, "rows": rows}, "Federated tables (Flower)", body)
        return
    train, test, schema = load_adult(data_dir(args.data_dir))
    done = {(r["trust"], r["split"], r["epsilon"], r["seed"]) for r in read_jsonl(log)}
    for setting in settings(args):
        if (setting["trust"], setting["split"], setting["epsilon"], setting["seed"]) in done:
            continue
        append_jsonl(log, run(setting, train, test, schema, args))
        rows = read_jsonl(log)
        write_results(
            Path(args.out), {**record, "rows": rows}, "Federated tables (Flower)", table(rows)
        )


if __name__ == "__main__":
    main()
