"""``dpforge audit``: an empirical lower bound on ε for dpforge's releases, next to the claim.

``--release NAME`` audits the package's real code of one release or discriminator step
(:data:`REAL_PATHS`): many runs with and without a canary record on crafted records (no data),
Clopper-Pearson intervals, the claim the accountant makes for that release.
``--kind one-run`` (the default without ``--release``) trains DP-CGAN's discriminator once on
DATA (a CSV with a complete ``--schema``) with gradient canaries (Steinke, Nasr & Jagielski
2023); ``--kind many-runs`` repeats a copy of the DP-SGD step many times on crafted gradient
records with and without a canary (Clopper-Pearson), and needs no data. The exit status is 0
when the bound is at or below the claimed ε and 3 when it is above (the implementation or its
accounting is wrong).

The audit model is thrown away; nothing trained on DATA is written. The printed numbers (guesses
right about the canaries) depend on the data only through the training run: they are outside
the DP guarantee like any non-private output, so audit on public data of the same shape when
the figures are to be shared.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import typer
from rich.console import Console

from dpforge.errors import DpforgeError
from dpforge.schema.array import load_schema
from dpforge.schema.table import Schema
from dpforge.storage import atomic_write

if TYPE_CHECKING:  # the audits (torch, scipy) are imported where used: --help stays light
    from dpforge.audit.result import AuditResult

__all__ = ["audit"]

console = Console(stderr=True)
VIOLATED_EXIT = 3
# dpforge.audit.releases.RELEASES and training_step.STEP_PATHS, named here so that --help
# imports no audit (a test keeps the two lists equal).
RELEASE_NAMES = (
    "marginals", "cells", "moments", "subspace", "embedding", "label-prior", "pair-scores",
    "bounds", "categories", "codes", "dates", "rows-per-person", "record-count", "person-count",
    "federated-site", "federated-site-scores", "gswgan-sanitizer",
)  # fmt: skip
STEP_NAMES = ("dpcgan-step", "dpcgan-microbatch-step", "dpwgan-step")
REAL_PATHS = RELEASE_NAMES + STEP_NAMES


def audit(
    data: Path = typer.Argument(None, help="one-run: the table (CSV) to train on"),
    schema_path: Path = typer.Option(None, "--schema", help="one-run: a complete schema"),
    release: str = typer.Option(
        None, "--release", help=f"audit the real code of one release: {', '.join(REAL_PATHS)}"
    ),
    kind: str = typer.Option(
        None, "--kind", help="one-run (default) | many-runs: a copy of the DP-SGD step"
    ),
    noise_multiplier: float = typer.Option(None, "--noise-multiplier", help="σ audited"),
    sample_rate: float = typer.Option(None, "--sample-rate", help="q audited"),
    steps: int = typer.Option(None, "--steps", help="DP-SGD steps per run"),
    canaries: int = typer.Option(None, "--canaries", help="one-run: number of canaries"),
    runs: int = typer.Option(
        None, "--runs", help="many-runs, --release: runs with and without the canary"
    ),
    delta: float = typer.Option(None, "--delta", help="δ of the audited (ε, δ) claim"),
    confidence: float = typer.Option(0.95, "--confidence"),
    seed: int = typer.Option(None, "--seed", help="reproducible audit"),
    out: Path = typer.Option(None, "--out", help="also write the result as JSON"),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Audit dpforge: an empirical lower bound on ε next to the accountant's ε."""
    if out is not None and out.exists() and not overwrite:
        raise DpforgeError(f"{out} already exists; choose another name or pass --overwrite")
    given = {
        "noise_multiplier": noise_multiplier, "sample_rate": sample_rate, "steps": steps,
        "delta": delta, "confidence": confidence,
    }  # fmt: skip
    if release is not None:
        unused = {"DATA": data, "--schema": schema_path, "--kind": kind, "--canaries": canaries,
                  "--sample-rate": sample_rate, "--steps": steps}  # fmt: skip
        _refuse_unused(unused, "--release audits crafted records at q = 1 in one step")
        chosen = {"noise_multiplier": noise_multiplier, "delta": delta, "runs": runs}
        result = _real_path(release, {**chosen, "confidence": confidence}, seed)
    elif kind in (None, "one-run"):
        result = _one_run(data, schema_path, {**given, "canaries": canaries}, runs, seed)
    elif kind == "many-runs":
        result = _many_runs(data, schema_path, {**given, "runs": runs}, canaries, seed)
    else:
        raise DpforgeError(f"--kind {kind!r} is unknown; use one-run or many-runs")
    Console().print(result.summary())
    if out is not None:
        text = json.dumps(result.to_dict(), indent=2)
        atomic_write(out, lambda p: p.write_text(text + "\n"), overwrite=overwrite)
        console.print(f"wrote {out}")
    if result.violated:
        sys.exit(VIOLATED_EXIT)


def _chosen(options: dict) -> dict:
    return {k: v for k, v in options.items() if v is not None}


def _refuse_unused(options: dict, why: str) -> None:
    """No option is silently ignored: name the ones given that do not apply."""
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise DpforgeError(f"{why}: leave out {', '.join(given)}")


def _real_path(name: str, options: dict, seed: int | None) -> AuditResult:
    """The many-runs audit of the package's own code of release or step ``name``."""
    import torch

    from dpforge.audit.releases import ReleaseAuditConfig, release_audit
    from dpforge.audit.training_step import STEP_PATHS, StepAuditConfig, step_audit

    if name not in REAL_PATHS:
        raise DpforgeError(f"--release {name!r} is unknown; choose one of {', '.join(REAL_PATHS)}")
    if name in STEP_PATHS:
        config = StepAuditConfig(**STEP_PATHS[name], **_chosen(options))
        return step_audit(config, torch.Generator().manual_seed(_seed(seed)), name)
    config = ReleaseAuditConfig(target=name, **_chosen(options))
    return release_audit(config, np.random.default_rng(_seed(seed)), name)


def _one_run(data, schema_path, options, runs, seed) -> AuditResult:
    import torch

    from dpforge.audit.one_run import OneRunConfig, one_run_audit
    from dpforge.data.tables import read_csv

    if data is None or schema_path is None:
        raise DpforgeError("--kind one-run needs DATA (a CSV table) and --schema")
    if runs is not None:
        raise DpforgeError("--runs applies to --kind many-runs")
    schema = load_schema(schema_path)
    if not isinstance(schema, Schema):
        raise DpforgeError("the one-run audit trains on tables: give a table schema")
    config = OneRunConfig(**_chosen(options))
    generator = torch.Generator().manual_seed(_seed(seed))
    return one_run_audit(read_csv(data), schema, config, generator)


def _many_runs(data, schema_path, options, canaries, seed) -> AuditResult:
    from dpforge.audit.many_runs import ManyRunsConfig, many_runs_audit

    if data is not None or schema_path is not None or canaries is not None:
        raise DpforgeError("--kind many-runs uses crafted records: give no DATA, --schema or "
                           "--canaries")  # fmt: skip
    config = ManyRunsConfig(**_chosen(options))
    return many_runs_audit(config, np.random.default_rng(_seed(seed)))


def _seed(seed: int | None) -> int:
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> 1)
    if not 0 <= seed < 2**63:
        raise DpforgeError(f"--seed {seed} must be in [0, 2^63)")
    return seed
