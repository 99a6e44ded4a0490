"""Exceptions that carry a message meant for the user.

Every error that bad input can cause is a :class:`DpforgeError`; the command line prints its
message on one line and exits non-zero, without a traceback. Messages name the column, the row,
the value and what to do.
"""

from __future__ import annotations


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
