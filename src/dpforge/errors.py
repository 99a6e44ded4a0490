"""Exceptions that carry a message meant for the user.

Every error that bad input can cause is a :class:`DpforgeError`; the command line prints its
message on one line and exits non-zero, without a traceback. Messages name the column, the row,
the value and what to do.

Such messages quote the private data (a row number, a cell's value, how many cells are bad):
that helps a data steward fix a file on their own machine, and it is outside the DP guarantee.
For logs shared with others, errors can be redacted: with ``DPFORGE_REDACT_ERRORS=1`` in the
environment, ``dpforge --redact-errors ...`` on the command line, or :func:`redacted_errors` in
Python, every part of a message that :func:`private` wraps (row and record numbers, values,
counts) becomes ``<private>``, while the public parts (column names, the kind of problem, what
to do) stay.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

REDACT_ENV = "DPFORGE_REDACT_ERRORS"
REDACTED = "<private>"
_REDACT: ContextVar[bool] = ContextVar("dpforge_redact_errors", default=False)


def redacting() -> bool:
    """Whether error messages must hide values read from the private data."""
    return _REDACT.get() or os.environ.get(REDACT_ENV, "").strip() not in ("", "0")


@contextmanager
def redacted_errors(enabled: bool = True) -> Iterator[None]:
    """Within the block, error messages hide values read from the private data."""
    token = _REDACT.set(enabled)
    try:
        yield
    finally:
        _REDACT.reset(token)


def redact_from_now() -> None:
    """Redact error messages in the current context from now on (the command line's option;
    run the command in a copied context so that it ends with it)."""
    _REDACT.set(True)


def private(value: object, spec: str = "") -> str:
    """``value`` as an error message shows it, or ``<private>`` when redacting.

    Wrap everything a message takes from the private records: row and record numbers, cell
    values, counts of bad cells. ``spec`` is a format spec (``"g"``), or ``"r"`` for ``repr``.
    """
    if redacting():
        return REDACTED
    if spec == "r":
        return repr(value)
    return format(value, spec)


class DpforgeError(Exception):
    """Base class: an error the user can fix, with a message that says how."""


class DataError(DpforgeError, ValueError):
    """The data do not match the schema or cannot be used (missing values, bad types, ...)."""


class SchemaError(DpforgeError, ValueError):
    """The schema is malformed or inconsistent."""


class PrivacyError(DpforgeError, ValueError):
    """An impossible or unsafe privacy request (epsilon <= 0, delta >= 1/N, too few steps)."""


class ModelFileError(DpforgeError, OSError):
    """A saved model folder is missing, incomplete or not a dpforge model."""


class OutputExistsError(DpforgeError, FileExistsError):
    """An output file already exists and overwriting was not asked for."""
