"""``dpforge privacy``: a DP-SGD privacy calculator (ε, σ or steps), before any training.

Give the data set size N and the expected batch size B (Poisson sampling, q = B/N), then two of
the three: a noise multiplier σ, a training length (--epochs or --steps), a target ε. The third
is computed: ε under PLD (reported) and RDP, or the PLD-calibrated σ, or the steps that fit.
Printed ε values are rounded up; --json prints the unrounded numbers.

Every request ends within bounded time and memory: σ, steps, ε and δ are checked against the
bounds of :mod:`dpforge.options` first, and an ε above ``PLD_EPSILON_CEILING`` (by the cheap
RDP accountant) is reported by RDP alone, never handed to the PLD accountant, whose memory grows
with ε.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dpforge.errors import PrivacyError
from dpforge.options import (
    MAX_STEPS,
    check_delta,
    check_epsilon_cap,
    check_noise_multiplier,
    check_steps,
    warn_tiny_epsilon,
)

if TYPE_CHECKING:  # the accountants (dp-accounting) are imported where used: --help stays light
    from dpforge.privacy.accounting import PrivacyReport

__all__ = ["privacy"]


@dataclass(frozen=True)
class _Result:
    """What the calculator found; ``solved`` names the computed quantity."""

    solved: str  # "epsilon", "noise_multiplier" or "steps"
    dataset_size: int
    batch_size: int
    noise_multiplier: float
    steps: int
    delta: float
    report: PrivacyReport
    target_epsilon: float | None = None

    @property
    def sample_rate(self) -> float:
        return self.batch_size / self.dataset_size

    @property
    def epochs(self) -> float:
        return self.steps * self.sample_rate

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe, unrounded numbers (infinite ε as "inf")."""
        return {
            "solved": self.solved,
            "dataset_size": self.dataset_size,
            "batch_size": self.batch_size,
            "sample_rate": self.sample_rate,
            "noise_multiplier": self.noise_multiplier,
            "steps": self.steps,
            "epochs": self.epochs,
            "target_epsilon": self.target_epsilon,
            **self.report.to_dict(),
        }


def privacy(
    dataset_size: Annotated[
        int, typer.Option("--dataset-size", "--n", "-n", help="Records (people) in the data, N.")
    ],
    batch_size: Annotated[
        int, typer.Option("--batch-size", "-b", help="Expected batch size B; q = B/N.")
    ],
    noise_multiplier: Annotated[
        float | None,
        typer.Option("--noise-multiplier", "--sigma", help="Noise multiplier σ (noise std / C)."),
    ] = None,
    epochs: Annotated[
        float | None, typer.Option(help="Training length in epochs (steps = round(epochs·N/B)).")
    ] = None,
    steps: Annotated[int | None, typer.Option(help="Training length in steps.")] = None,
    epsilon: Annotated[
        float | None,
        typer.Option(help="Target ε: compute σ (with --epochs/--steps) or steps (with --sigma)."),
    ] = None,
    delta: Annotated[float, typer.Option(help="δ; must be well below 1/N.")] = 1e-5,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Compute ε for a DP-SGD run, or the noise multiplier or the steps for a target ε.

    Poisson sampling with q = B/N, add/remove-one neighbours; ε reported under PLD, RDP shown.
    """
    from dpforge.privacy.accounting import validate_delta
    from dpforge.privacy.calibration import PLD_EPSILON_CEILING

    _check_sizes(dataset_size, batch_size)
    check_noise_multiplier(noise_multiplier)
    if epsilon is not None:
        check_epsilon_cap(epsilon, "--epsilon")
        warn_tiny_epsilon(epsilon, "--epsilon")
    logging.getLogger("absl").setLevel(logging.ERROR)  # RDP's "returning 0" notes at huge σ
    d = validate_delta(check_delta(delta), dataset_size)
    n_steps = _steps(dataset_size, batch_size, epochs, steps)
    result = _solve(dataset_size, batch_size, noise_multiplier, n_steps, epsilon, d)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    else:
        console = Console()
        console.print(_table(result))
        if result.solved == "steps" and result.steps == 0:
            console.print("Not even one step fits the target: raise --epsilon or --sigma.")
        if result.report.epsilon_pld is None:
            console.print(
                f"ε is above {PLD_EPSILON_CEILING:g} (RDP), which protects no one; PLD was not "
                "run. Raise --sigma, or use fewer steps or a smaller batch."
            )


def _check_sizes(dataset_size: int, batch_size: int) -> None:
    if dataset_size < 1:
        raise PrivacyError(f"--dataset-size={dataset_size} must be at least 1")
    if not 1 <= batch_size <= dataset_size:
        raise PrivacyError(
            f"--batch-size={batch_size} must be between 1 and the data set size {dataset_size}"
        )


def _steps(
    dataset_size: int, batch_size: int, epochs: float | None, steps: int | None
) -> int | None:
    """Step count from --steps or --epochs (None when neither is given)."""
    if epochs is not None and steps is not None:
        raise PrivacyError("--epochs and --steps were both given; give only one")
    if steps is not None:
        if steps < 0:
            raise PrivacyError(f"--steps={steps} must be >= 0")
        return check_steps(steps, f"--steps={steps}")
    if epochs is None:
        return None
    if not (epochs > 0 and math.isfinite(epochs)):
        raise PrivacyError(f"--epochs={epochs} must be a positive number")
    planned = epochs * dataset_size / batch_size  # may overflow to inf: checked before round()
    if planned > MAX_STEPS:
        return check_steps(MAX_STEPS + 1, f"--epochs={epochs:g}")
    n = round(planned)
    if n < 1:
        raise PrivacyError(f"--epochs={epochs} is less than one step at q = B/N; give more epochs")
    return n


def _solve(
    dataset_size: int,
    batch_size: int,
    noise: float | None,
    steps: int | None,
    target: float | None,
    delta: float,
) -> _Result:
    """Compute whichever of ε, σ, steps is missing; PrivacyError for a bad combination."""
    from dpforge.privacy.accounting import dpsgd_event, privacy_report
    from dpforge.privacy.calibration import noise_for_epsilon, steps_for_epsilon

    q = batch_size / dataset_size
    sizes = (dataset_size, batch_size)
    if noise is None and target is None:
        raise PrivacyError("give --noise-multiplier (to compute epsilon) or --epsilon (a target)")
    if noise is not None and target is not None and steps is not None:
        raise PrivacyError(
            "--epsilon, --noise-multiplier and --epochs/--steps were all given; "
            "leave out the one to compute"
        )
    if steps is None and (noise is None or target is None):
        raise PrivacyError("give --epochs or --steps (or both --epsilon and --noise-multiplier)")
    if target is None:
        report = _bounded_report(dpsgd_event(q, noise, steps), delta)
        return _Result("epsilon", *sizes, noise, steps, delta, report)
    if noise is None:
        sigma = noise_for_epsilon(target, delta, q, steps)
        report = privacy_report(dpsgd_event(q, sigma, steps), delta)
        return _Result("noise_multiplier", *sizes, sigma, steps, delta, report, target)
    n = steps_for_epsilon(target, delta, q, noise, max_steps=MAX_STEPS)
    report = privacy_report(dpsgd_event(q, noise, n), delta)
    return _Result("steps", *sizes, noise, n, delta, report, target)


def _bounded_report(event: Any, delta: float) -> PrivacyReport:
    """The privacy report, by RDP alone when its ε is above PLD_EPSILON_CEILING (PLD's memory
    grows with ε: a million steps at σ = 1 and q = 1 ran out of memory)."""
    from dpforge.privacy.accounting import PrivacyReport, privacy_report
    from dpforge.privacy.accounting import epsilon as epsilon_of
    from dpforge.privacy.calibration import PLD_EPSILON_CEILING, rdp_epsilon_above

    if rdp_epsilon_above(event, delta, PLD_EPSILON_CEILING):
        return PrivacyReport(None, epsilon_of(event, delta, "rdp"), delta)
    return privacy_report(event, delta)


def _table(result: _Result) -> Table:
    """Rich table; the computed quantity is marked and ε values are rounded up."""
    mark = {result.solved: " ← computed"}
    table = Table(title="DP-SGD privacy (Poisson sampling, add/remove one record)")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("")
    rows = [
        ("data set size N", f"{result.dataset_size:,}", ""),
        ("expected batch size B", f"{result.batch_size:,}", ""),
        ("sample rate q = B/N", f"{result.sample_rate:.6g}", ""),
        ("noise multiplier σ", f"{result.noise_multiplier:.4f}", mark.get("noise_multiplier", "")),
        ("steps", f"{result.steps:,}", mark.get("steps", "")),
        ("epochs", f"{math.floor(result.epochs * 100) / 100:.2f}", ""),
        ("δ", f"{result.delta:.3g}", ""),
    ]
    if result.target_epsilon is not None:
        rows.append(("target ε", f"{result.target_epsilon:g}", ""))
    rows += _epsilon_rows(result.report, mark.get("epsilon", ""))
    for row in rows:
        table.add_row(*row)
    return table


def _epsilon_rows(report: PrivacyReport, mark: str) -> list[tuple[str, str, str]]:
    from dpforge.privacy.accounting import format_epsilon

    rows = []
    if report.epsilon_pld is not None:
        rows.append(("ε (PLD, reported)", format_epsilon(report.epsilon_pld), mark))
    if report.epsilon_rdp is not None:
        label = "ε (RDP)" if report.epsilon_pld is not None else "ε (RDP, reported)"
        rows.append((label, format_epsilon(report.epsilon_rdp), ""))
    return rows
