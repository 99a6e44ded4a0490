"""Exceptions that carry a message meant for the user.

Every error that bad input can cause is a :class:`DpsynthError`; the command line prints its
message on one line and exits non-zero, without a traceback. Messages name the column, the row,
the value and what to do.
"""

from __future__ import annotations


class DpsynthError(Exception):
    """Base class: an error the user can fix, with a message that says how."""


class DataError(DpsynthError, ValueError):
    """The data do not match the schema or cannot be used (missing values, bad types, ...)."""


class SchemaError(DpsynthError, ValueError):
    """The schema is malformed or inconsistent."""


class PrivacyError(DpsynthError, ValueError):
    """An impossible or unsafe privacy request (epsilon <= 0, delta >= 1/N, too few steps)."""


class ModelFileError(DpsynthError, OSError):
    """A saved model folder is missing, incomplete or not a dpsynth model."""


class OutputExistsError(DpsynthError, FileExistsError):
    """An output file already exists and overwriting was not asked for."""
