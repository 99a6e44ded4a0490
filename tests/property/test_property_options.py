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
from cli_support import merged, options_file
from dpforge.errors import DpforgeError
from dpforge.methods import METHODS

LIMIT_S = 30  # seconds a refusal (or the checks before training) may take on two cores

# (where: a flag or a section of the options file, the key, the value, the method it applies
# to, the Python API's keyword or None)
BAD = [
    ("refine", "batch_size", 0, None, "batch_size"),
    ("refine", "batch_size", -3, None, "batch_size"),
    ("refine", "batch_size", 10_000, None, "batch_size"),  # more than the 200 records
    ("refine", "epochs", "nan", None, "epochs"),
    ("refine", "epochs", "inf", None, "epochs"),
    ("refine", "epochs", 0, None, "epochs"),
    ("refine", "epochs", -1, None, "epochs"),
    ("refine", "epochs", "1e7", None, "epochs"),
    ("flag", "--epsilon", 0, None, "epsilon"),
    ("flag", "--epsilon", -1, None, "epsilon"),
    ("flag", "--epsilon", "nan", None, "epsilon"),
    ("flag", "--epsilon", "1e300", None, "epsilon"),
    ("flag", "--delta", 0, None, "delta"),
    ("flag", "--delta", 1, None, "delta"),
    ("flag", "--delta", "nan", None, "delta"),
    ("refine", "noise_multiplier", "1e-9", None, "noise_multiplier"),
    ("refine", "noise_multiplier", "1e6", None, "noise_multiplier"),
    ("refine", "noise_multiplier", -1, None, "noise_multiplier"),
    ("refine", "noise_multiplier", "nan", None, "noise_multiplier"),
    ("flag", "--seed", -1, None, "seed"),
    ("flag", "--seed", 2**64, None, "seed"),
    ("privacy", "metadata_share", -0.1, None, "metadata_share"),
    ("privacy", "metadata_share", 1.5, None, "metadata_share"),
    ("refine", "clip_norm", 0, None, "clip_norm"),
    ("refine", "clip_norm", "nan", None, "clip_norm"),
    ("refine", "d_steps", 0, None, "d_steps"),
    ("refine", "microbatches", 1000, "dpcgan", "microbatches"),
    ("refine", "num_discriminators", 0, "gswgan", "num_discriminators"),
    ("refine", "num_discriminators", 5000, "gswgan", "num_discriminators"),  # more than N
    ("anchor", "share", 2, None, None),
    ("anchor", "share", -1, None, None),
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
        "share": st.sampled_from([0, 0.5]),
        "--seed": st.integers(0, 1000),
        "--epsilon": st.sampled_from([2, 8]),
    },
)


def _fit_args(data: Path, schema: Path, out: Path, method: str, sections: dict, flags: dict):
    """``dpforge fit`` refined by ``method``, with ``sections`` in an options file beside
    ``out`` and the command line's ``flags``."""
    sections = merged({"output": {"progress": False}}, sections)
    sections = {k: {n: _number(v) for n, v in keys.items()} for k, keys in sections.items()}
    path = options_file(sections, out.parent)
    args: list[object] = ["fit", data, "--schema", schema, "--out", out, "--refine", method]
    args += ["--options", path]
    for name, value in flags.items():
        args += [name, value]
    return args


def _number(value: object) -> object:
    """A value as the options file holds it: numbers written as text ("nan") as numbers."""
    return float(value) if isinstance(value, str) else value


@given(st.sampled_from(BAD), NEUTRAL)
def test_a_bad_fit_option_is_refused_before_training(table_files, bad, others):
    where, name, value, method, _ = bad
    flags = {k: v for k, v in others.items() if k.startswith("--") and k != name}
    sections = {"anchor": {"share": others.get("share", 0)}}
    if where == "flag":
        flags[name] = value
    else:
        sections = merged(sections, {where: {name: value}})
    with tempfile.TemporaryDirectory() as tmp, no_training():
        out = Path(tmp) / "model"
        args = _fit_args(*table_files, out, method or "dpcgan", sections, flags)
        code, output = run_cli(args, limit_s=LIMIT_S)
    assert code != -1, f"{name} {value} was accepted: training started"
    assert_cli_clean(code, output)
    assert code == 2 and not out.exists()
    assert _names_the_option(output, bad[4]), (
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


@given(st.sampled_from([b for b in BAD if b[4] is not None]))
def test_a_bad_api_argument_is_refused_before_training(small_table, bad):
    _, _, value, method, keyword = bad
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
    st.sampled_from([None, "epochs", "noise_multiplier"]),
)
def test_sensible_fit_options_reach_training(table_files, method, batch, fixed):
    refine: dict = {"batch_size": batch}
    if fixed == "epochs":
        refine["epochs"] = 20
    elif fixed == "noise_multiplier":
        refine["noise_multiplier"] = 2.0
    sections = {"anchor": {"share": 0}, "refine": refine}
    with tempfile.TemporaryDirectory() as tmp, no_training():
        out = Path(tmp) / "m"
        args = _fit_args(*table_files, out, method, sections, {"--epsilon": 8})
        code, output = run_cli(args, LIMIT_S)
    assert_cli_clean(code, output)
    assert code == -1 or "error:" in output
