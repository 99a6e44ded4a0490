"""An image or series model's evaluation from files (:func:`dpforge.evaluation.frames.frame_of`):
real records read as ``dpforge fit`` reads them, :func:`~dpforge.evaluation.array_report.
evaluate_arrays` and :func:`~dpforge.evaluation.array_report.array_report`, and the summary
``dpforge evaluate`` prints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpforge.evaluation.attacks import ATTACKS

if TYPE_CHECKING:
    from dpforge.data.arrays import ArrayData
    from dpforge.evaluation.frames import Request

__all__ = ["ArrayFrame"]


class ArrayFrame:
    """Images and series: their files, the array metrics and the array report."""

    @staticmethod
    def read_real(path: Path, model: Any) -> ArrayData:
        """Real images or series read like ``dpforge fit`` reads them (image folder or .npz;
        series as .npz or a wide CSV with the label column) and checked against the model's
        schema. Records of a class the model's DP threshold did not release are set aside, the
        rule the fit applied (see :mod:`dpforge.evaluation.released`)."""
        from dpforge.data.arrays import keep_released_records, validate_arrays
        from dpforge.data.kind_files import files_for

        schema = model.schema_
        files = files_for(schema.kind)
        data = files.read(path, files.read_options(schema))
        names = [entry.name for entry in model.ledger_.entries]
        dp_classes = any(n.startswith(f"metadata: classes of '{schema.label}'") for n in names)
        checked = validate_arrays(data, schema.with_classes(None) if dp_classes else schema, "clip")
        return keep_released_records(checked, schema)

    @staticmethod
    def steps(request: Request, report: bool) -> int:
        """The parts that call ``on_step``: utility, the kind's measurements, the picture
        and each attack (the report runs every attack)."""
        return 3 + (len(ATTACKS) if request.attacks or report else 0)

    @staticmethod
    def evaluate(
        model: Any, train: Any, test: Any, request: Request, on_step: Callable[[str], None]
    ) -> dict[str, Any]:
        """The metrics of :func:`~dpforge.evaluation.array_report.evaluate_arrays`."""
        from dpforge.evaluation.array_report import evaluate_arrays

        attacks = ATTACKS if request.attacks else ()
        result, _ = evaluate_arrays(
            model, train, test, request.seed, request.rows, on_step, attacks
        )
        return result

    @staticmethod
    def report(
        model: Any, train: Any, test: Any, request: Request, on_step: Callable[[str], None]
    ) -> str:
        """The page of :func:`~dpforge.evaluation.array_report.array_report`."""
        from dpforge.evaluation.array_report import array_report

        text, _ = array_report(
            model, train, test, seed=request.seed, n_synthetic=request.rows, on_step=on_step
        )
        return text

    @staticmethod
    def summary(result: dict[str, Any]) -> list[str]:
        """Records compared, utility and the kind's own measurements in a few lines."""
        rows = result["rows"]
        lines = [
            f"evaluated {rows['synthetic']} synthetic {result['data_type']} records against "
            f"{rows['real_train']} real training and {rows['real_test']} real test records"
        ]
        utility = result["utility"]
        if utility is not None:
            mean = utility["mean"]
            lines.append(
                f"utility, {utility['measure']}: synthetic "
                f"{mean['synthetic']['auroc_macro']:.3f} / real {mean['real']['auroc_macro']:.3f}"
            )
        return lines + _measured_lines(result)


def _measured_lines(result: dict[str, Any]) -> list[str]:
    """The reference CNN's scores, the DTW distances and the autocorrelation, where measured."""
    lines = []
    reference = result["reference"]
    if reference is not None:
        lines.append(
            f"reference CNN: label fidelity {reference['label_fidelity']:.3f} (real "
            f"{reference['label_fidelity_real_train']:.3f}), Fréchet distance "
            f"{reference['frechet_to_test']:.3g} (real "
            f"{reference['frechet_real_train_to_test']:.3g}), inception score "
            f"{reference['inception_score']:.2f} (real "
            f"{reference['inception_score_real_train']:.2f})"
        )
    if result["dtw"] is not None:
        d = result["dtw"]
        lines.append(
            f"median DTW to the nearest real training series: synthetic "
            f"{d['synthetic_to_train_median']:.3g}, real test {d['test_to_train_median']:.3g}"
        )
    if result["autocorrelation"] is not None:
        acf = result["autocorrelation"]
        lines.append(
            f"autocorrelation, mean |difference| from real training: synthetic "
            f"{acf['mean_abs_diff_synthetic']:.3f}, real test {acf['mean_abs_diff_real_test']:.3f}"
        )
    return lines
