"""A table model's evaluation from files (:func:`dpforge.evaluation.frames.frame_of`): real
rows from a CSV, :func:`~dpforge.evaluation.evaluate.evaluate_table` and
:func:`~dpforge.evaluation.report.table_report`, and the summary ``dpforge evaluate`` prints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpforge.evaluation.attacks import ATTACKS

if TYPE_CHECKING:
    import pandas as pd

    from dpforge.evaluation.frames import Request

__all__ = ["TableFrame"]


class TableFrame:
    """Tables: a CSV of real rows, the table metrics and the table report."""

    @staticmethod
    def read_real(path: Path, model: Any) -> pd.DataFrame:
        """The real CSV checked and typed against the model's schema. Values outside its
        bounds are kept (the metrics compare them); values of columns whose categories the
        model estimated under DP are not checked here: rows holding a category the threshold
        did not release are set aside by the evaluation (see
        :mod:`dpforge.evaluation.released`), not refused."""
        from dpforge.data.tables import read_csv, validate_table
        from dpforge.evaluation.released import dp_category_columns, without_dp_categories

        names = [entry.name for entry in model.ledger_.entries]
        schema = without_dp_categories(model.schema_, dp_category_columns(model.schema_, names))
        return validate_table(read_csv(path), schema, out_of_bounds="clip")

    @staticmethod
    def steps(request: Request, report: bool) -> int:
        """The parts that call ``on_step``: utility, fidelity, each attack (and the page)."""
        return 2 + (len(ATTACKS) if request.attacks else 0) + int(report)

    @staticmethod
    def evaluate(
        model: Any, train: Any, test: Any, request: Request, on_step: Callable[[str], None]
    ) -> dict[str, Any]:
        """The metrics of :func:`~dpforge.evaluation.evaluate.evaluate_table`."""
        from dpforge.evaluation.evaluate import evaluate_table

        return evaluate_table(
            model, train, test, classifiers=request.classifiers, seed=request.seed,
            n_synthetic=request.rows, attacks=ATTACKS if request.attacks else (),
            on_step=on_step,
        )  # fmt: skip

    @staticmethod
    def report(
        model: Any, train: Any, test: Any, request: Request, on_step: Callable[[str], None]
    ) -> str:
        """The page of :func:`~dpforge.evaluation.report.table_report`."""
        from dpforge.evaluation.report import table_report

        text, _ = table_report(
            model, train, test, seed=request.seed, classifiers=request.classifiers,
            attacks=ATTACKS if request.attacks else (), n_synthetic=request.rows,
            pair=request.pair, on_step=on_step,
        )  # fmt: skip
        return text

    @staticmethod
    def summary(result: dict[str, Any]) -> list[str]:
        """Rows compared, rows set aside, utility and fidelity in a few lines."""
        from dpforge.evaluation.evaluate import HEADLINE_SCORES

        rows = result["rows"]
        lines = [
            f"evaluated {rows['synthetic']} synthetic rows against {rows['real_train']} real "
            f"training rows (fidelity, utility baseline) and {rows['real_test']} real test rows "
            "(scoring only)"
        ]
        released = result["released_categories"]
        if released["dp_estimated_columns"]:
            shares = ", ".join(
                f"{released[split]['share_set_aside']:.1%} of {split}"
                for split in ("real_train", "real_test")
            )
            lines.append(
                f"set aside real rows holding a category the DP threshold did not release "
                f"({shares}; columns estimated under DP: "
                f"{', '.join(released['dp_estimated_columns'])})"
            )
        utility = result["utility"]
        if utility is not None:
            for name, scores in utility["classifiers"].items():
                syn, real = scores["synthetic"]["auroc_macro"], scores["real"]["auroc_macro"]
                lines.append(f"  {name:>4}: macro AuROC synthetic {syn:.3f} / real {real:.3f}")
            mean = utility["mean"]
            ratios = ", ".join(f"{k} {mean['ratio'][k]:.3f}" for k in HEADLINE_SCORES)
            lines.append(f"  mean synthetic/real ratio: {ratios}")
        return [*lines, _fidelity_line(result["fidelity"])]


def _fidelity_line(fidelity: dict[str, Any]) -> str:
    return (
        f"fidelity: mean TVD 1-way {fidelity['tvd']['mean_one_way']:.3f}, 2-way "
        f"{_number(fidelity['tvd']['mean_two_way'])}; mean KS {_number(fidelity['ks']['mean'])}; "
        f"association difference {fidelity['association']['mean_abs_difference']:.3f}"
    )


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
