"""How one model folder is evaluated from files, for each kind plug-in (its *frame*).

A frame reads and checks the real records of its kind, computes the metrics (``dpforge
evaluate``), builds the full report page (``dpforge report``) and words the summary the
command prints. The command line asks :func:`frame_of` for the model's frame and never
branches on the kind. The kinds' own parts of the metrics and pages are
:mod:`dpforge.kinds.reports`, which the frames' functions ask: the choice of frame lives here,
above those parts, not in them (a part that named its frame would import the report that
imports the part). Tables are :class:`~dpforge.evaluation.table_frame.TableFrame`, images and
series :class:`~dpforge.evaluation.array_frame.ArrayFrame`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dpforge.evaluation.array_frame import ArrayFrame
from dpforge.evaluation.table_frame import TableFrame
from dpforge.kinds import ArrayKind, TableKind, kind_of

__all__ = ["Frame", "Request", "frame_of"]


@dataclass(frozen=True)
class Request:
    """What an evaluation command asked for (public settings): the seed of the sampling,
    classifiers and attacks, the synthetic records (None: as many as the real training
    records), the classifiers, whether the attacks run and the pair of a table's 2-D density."""

    seed: int
    rows: int | None
    classifiers: tuple[str, ...]
    attacks: bool
    pair: tuple[str, str] | None = None


class Frame(Protocol):
    """One kind plug-in's evaluation from files (see the module's docstring)."""

    def read_real(self, path: Path, model: Any) -> Any: ...

    def steps(self, request: Request, report: bool) -> int: ...

    def evaluate(
        self, model: Any, train: Any, test: Any, request: Request, on_step: Callable[[str], None]
    ) -> dict[str, Any]: ...

    def report(
        self, model: Any, train: Any, test: Any, request: Request, on_step: Callable[[str], None]
    ) -> str: ...

    def summary(self, result: dict[str, Any]) -> list[str]: ...


_FRAMES: dict[type, Frame] = {TableKind: TableFrame(), ArrayKind: ArrayFrame()}


def frame_of(schema: Any) -> Frame:
    """The frame of the kind plug-in of ``schema`` (:func:`dpforge.kinds.kind_of`)."""
    return _FRAMES[kind_of(schema)]
