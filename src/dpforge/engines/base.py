"""The engine seam: the one interface through which a run reaches the private records.

A run is a pipeline of stages (:mod:`dpforge.pipeline`); only two of them may read records:
``measure`` (exact aggregates, to which a mechanism then adds noise) and ``refine`` (DP-SGD
on Poisson-sampled batches). Every read names its stage, and an engine refuses a read from any
other stage, so a stage that touches records by mistake fails loudly instead of leaking.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from dpforge.errors import PrivacyError

MEASURE = "measure"
REFINE = "refine"
READING_STAGES = frozenset({MEASURE, REFINE})


class Engine(ABC):
    """Holds the private records of one run and hands them only to the reading stages."""

    supports_refine = True  # whether the refine stage (DP-SGD on records in memory) can read
    bounds_persons = True  # whether rows per person can be bounded (all of them in one place)
    supports_checkpoints = True  # whether a run on it can resume from a checkpoint folder

    @abstractmethod
    def _records(self) -> Any:
        """The validated records (engine-specific); called only through :meth:`read`."""

    @abstractmethod
    def size(self, stage: str) -> int | None:
        """The number of records (a private fact: only the reading stages may ask); None from
        an engine that never learns it (federated sites: see :meth:`noisy_size`)."""

    def noisy_size(self, stage: str, std: float) -> float:
        """The number of records with N(0, std^2) noise added where the records are, for an
        engine whose :meth:`size` is None; the others are counted exactly, noised by the run."""
        raise PrivacyError(f"{type(self).__name__} counts its records exactly: use size()")

    def read(self, stage: str) -> Any:
        """The records, for ``stage`` (``measure`` or ``refine``); any other stage is refused."""
        check_reading_stage(stage)
        return self._records()

    def replace(self, records: Any) -> None:
        """Keep ``records`` instead (the measure stage drops rows of unreleased categories)."""
        raise PrivacyError(f"{type(self).__name__} cannot replace its records")

    def close(self) -> None:
        """Free what the engine holds outside this process (nothing, in-process)."""
        return None


def check_refinable(engine: Engine, anchored_alone: bool) -> None:
    """Refuse, before anything is read or charged, a run whose discriminator would need records
    that ``engine`` cannot hand to the refine stage."""
    if not (anchored_alone or engine.supports_refine):
        raise PrivacyError(
            f"{type(engine).__name__} serves the anchored table path only: the discriminator "
            "(refine) trains on records in memory; keep the anchoring's share at 1 (the default "
            "for tables) or fit in memory"
        )


def check_reading_stage(stage: str) -> None:
    """Refuse a read of private records from a stage that must not read them."""
    if stage not in READING_STAGES:
        raise PrivacyError(
            f"internal error: the '{stage}' stage asked for the private records; only "
            f"{sorted(READING_STAGES)} may read them"
        )
