"""Shared harness of the property-based suite: run the CLI as a user does, check errors.

The contract every property test checks: a call either gives a correct result or fails with a
:class:`dpforge.errors.DpforgeError` whose message is one non-empty line (on the command line:
exit status 2 and one ``error:`` line), never another exception, never a traceback, and never
by starting to train on options or data that should have been refused.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import traceback
from collections.abc import Iterator
from unittest import mock

from hypothesis import HealthCheck, settings

from dpforge.cli import main
from dpforge.errors import DpforgeError

# Deterministic by default (the suite must not fail by chance in CI); explore more with
# HYPOTHESIS_PROFILE=explore.
settings.register_profile(
    "dpforge",
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "explore",
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dpforge"))

MAX_MESSAGE = 1200  # characters: a message, not a dump
TIME_LIMIT_S = 60  # one call that runs longer is a run that should have been refused


class TrainingStarted(Exception):
    """Raised in place of training: the call got past every check."""


def assert_clean_error(exc: BaseException) -> str:
    """``exc`` is the project's error type with a one-line message; return the message."""
    if not isinstance(exc, DpforgeError):
        trace = "".join(traceback.format_exception(exc))
        raise AssertionError(f"expected a DpforgeError, got a traceback:\n{trace}")
    message = str(exc)
    assert message.strip(), f"{type(exc).__name__} with an empty message"
    assert "\n" not in message, f"a multi-line message: {message!r}"
    assert len(message) <= MAX_MESSAGE, f"a message of {len(message)} characters"
    assert "Traceback" not in message
    return message


@contextlib.contextmanager
def time_limit(seconds: int = TIME_LIMIT_S) -> Iterator[None]:
    """Fail (instead of hanging the suite) when a call runs longer than ``seconds``."""

    def expire(signum, frame):
        raise TimeoutError(f"the call ran longer than {seconds} s instead of refusing")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def no_training() -> Iterator[None]:
    """Replace both training paths (discriminator, anchored) by :class:`TrainingStarted`."""

    def refuse(*args, **kwargs):
        raise TrainingStarted

    with (
        mock.patch("dpforge.pipeline.refine.train", refuse),
        mock.patch("dpforge.pipeline.measure.measure_adaptive", refuse),
    ):
        yield


def run_cli(args: list[object], limit_s: int = TIME_LIMIT_S) -> tuple[int, str]:
    """Run ``dpforge ARGS`` through the console script's entry point, in this process.

    Returns (exit status, stderr + stdout). Any exception other than the exit is re-raised:
    for the user it would have been a traceback. ``TrainingStarted`` returns status -1.
    """
    out, err = io.StringIO(), io.StringIO()
    argv = ["dpforge", *map(str, args)]
    code = 0
    with (
        mock.patch.object(sys, "argv", argv),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        time_limit(limit_s),
    ):
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except TrainingStarted:
            code = -1
    return code, err.getvalue() + out.getvalue()


def assert_cli_clean(code: int, output: str) -> None:
    """A failed command exited with status 2 and said why on one line, with no traceback."""
    assert "Traceback" not in output, output
    if code in (0, -1):
        return
    assert code == 2, f"exit status {code}: {output}"
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    usage = "Usage:" in output  # click's own usage errors (wrong option type): status 2 too
    assert errors or usage, f"no 'error:' line: {output!r}"
    if errors:
        assert lines[-1].startswith("error:"), f"the error is not one line: {output!r}"
        assert len(errors[-1]) <= MAX_MESSAGE + 10
