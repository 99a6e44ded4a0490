"""Options of ``dpforge fit`` and of the Python API: refused up front, or a run that starts.

Training itself is replaced by a sentinel (``no_training``): a bad option must be refused
before the first step, so reaching the sentinel with one is a failure, and so is a check that
runs for longer than a person waits.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from property_support import (
    TrainingStarted,
    assert_clean_error,
    assert_cli_clean,
    no_training,
    run_cli,
    time_limit,
)

import dpforge
from dpforge.errors import DpforgeError
from dpforge.methods import METHODS

LIMIT_S = 30  # seconds a refusal (or the checks before training) may take on two cores

# (option, value, method it applies to, the Python API's keyword or None)
BAD = [
    ("--batch-size", 0, None, "batch_size"),
    ("--batch-size", -3, None, "batch_size"),
    ("--batch-size", 10_000, None, "batch_size"),  # more than the 200 records
    ("--epochs", "nan", None, "epochs"),
    ("--epochs", "inf", None, "epochs"),
    ("--epochs", 0, None, "epochs"),
    ("--epochs", -1, None, "epochs"),
    ("--epochs", "1e7", None, "epochs"),
    ("--epsilon", 0, None, "epsilon"),
    ("--epsilon", -1, None, "epsilon"),
    ("--epsilon", "nan", None, "epsilon"),
    ("--epsilon", "1e300", None, "epsilon"),
    ("--delta", 0, None, "delta"),
    ("--delta", 1, None, "delta"),
    ("--delta", "nan", None, "delta"),
    ("--noise-multiplier", "1e-9", None, "noise_multiplier"),
    ("--noise-multiplier", "1e6", None, "noise_multiplier"),
    ("--noise-multiplier", -1, None, "noise_multiplier"),
    ("--noise-multiplier", "nan", None, "noise_multiplier"),
    ("--seed", -1, None, "seed"),
    ("--seed", 2**64, None, "seed"),
    ("--metadata-share", -0.1, None, "metadata_share"),
    ("--metadata-share", 1.5, None, "metadata_share"),
    ("--clip-norm", 0, None, "clip_norm"),
    ("--clip-norm", "nan", None, "clip_norm"),
    ("--d-steps", 0, None, "d_steps"),
    ("--microbatches", 1000, "dpcgan", "microbatches"),
    ("--num-discriminators", 0, "gswgan", "num_discriminators"),
    ("--num-discriminators", 5000, "gswgan", "num_discriminators"),  # more than the records
    ("--anchor-share", 2, None, None),
    ("--anchor-share", -1, None, None),
]
# A refusal must be for the right reason: its message names the option.
TOPIC = {
    "batch_size": "batch",
    "epochs": "epoch",
    "epsilon": "epsilon",
    "delta": "delta",
    "noise_multiplier": "noise",
    "seed": "seed",
    "metadata_share": "metadata",
    "clip_norm": "clip",
    "d_steps": "d_steps|d-steps",
    "microbatches": "microbatch",
    "num_discriminators": "discriminators|critic",
    None: "anchor",
}
CONFIG_KEYS = {"batch_size", "clip_norm", "d_steps", "microbatches", "num_discriminators"}
NEUTRAL = st.fixed_dictionaries(
    {},
    optional={
        "--anchor-share": st.sampled_from([0, 1]),
        "--seed": st.integers(0, 1000),
        "--epsilon": st.sampled_from([2, 8]),
    },
)


def _fit_args(data: Path, schema: Path, out: Path, options: dict) -> list[object]:
    args: list[object] = ["fit", data, "--schema", schema, "--out", out, "--quiet"]
    for name, value in options.items():
        args += [name, value]
    return args


@given(st.sampled_from(BAD), NEUTRAL)
def test_a_bad_fit_option_is_refused_before_training(table_files, bad, others):
    name, value, method, _ = bad
    options = {k: v for k, v in others.items() if k != name}
    options[name] = value
    if method is not None:
        options["--method"] = method
    with tempfile.TemporaryDirectory() as tmp, no_training():
        out = Path(tmp) / "model"
        code, output = run_cli(_fit_args(*table_files, out, options), limit_s=LIMIT_S)
    assert code != -1, f"{name} {value} was accepted: training started"
    assert_cli_clean(code, output)
    assert code == 2 and not out.exists()
    assert _names_the_option(output, bad[3]), (
        f"{name} {value}: refused for another reason: {output}"
    )


def _names_the_option(message: str, keyword: str | None) -> bool:
    return any(word in message.lower() for word in TOPIC[keyword].split("|"))


def _api_call(frame, schema, method: str, keyword: str, value) -> None:
    number = float(value) if isinstance(value, str) else value
    config_cls = METHODS[method][1]
    kwargs: dict = {"method": method, "progress": False, "anchor": None}
    if keyword in CONFIG_KEYS:
        kwargs["method_options"] = config_cls(**{keyword: number})
    else:
        kwargs[keyword] = number
    if keyword not in ("noise_multiplier", "epochs"):
        kwargs["epochs"] = 40.0  # about 125 steps: the plan itself is fine
    kwargs.setdefault("epsilon", 8.0)
    dpforge.Synthesizer(schema, **kwargs).fit(frame)


@given(st.sampled_from([b for b in BAD if b[3] is not None]))
def test_a_bad_api_argument_is_refused_before_training(small_table, bad):
    _, value, method, keyword = bad
    frame, schema = small_table
    with no_training(), time_limit(LIMIT_S):
        try:
            _api_call(frame, schema, method or "dpcgan", keyword, value)
        except TrainingStarted:
            raise AssertionError(f"{keyword}={value} was accepted: training started") from None
        except DpforgeError as exc:
            message = assert_clean_error(exc)
            assert _names_the_option(message, keyword), f"{keyword}={value}: {message}"
        except Exception as exc:  # noqa: BLE001 - a traceback for the user
            assert_clean_error(exc)
        else:
            raise AssertionError(f"{keyword}={value}: fit returned without training")


@settings(max_examples=2)  # each example calibrates sigma: seconds
@given(
    st.sampled_from(sorted(METHODS)),
    st.sampled_from([32, 64]),
    st.sampled_from([None, "--epochs", "--noise-multiplier"]),
)
def test_sensible_fit_options_reach_training(table_files, method, batch, fixed):
    options: dict = {"--method": method, "--batch-size": batch, "--anchor-share": 0}
    options["--epsilon"] = 8
    if fixed == "--epochs":
        options["--epochs"] = 20
    elif fixed == "--noise-multiplier":
        options["--noise-multiplier"] = 2.0
    with tempfile.TemporaryDirectory() as tmp, no_training():
        code, output = run_cli(_fit_args(*table_files, Path(tmp) / "m", options), LIMIT_S)
    assert_cli_clean(code, output)
    assert code == -1 or "error:" in output
