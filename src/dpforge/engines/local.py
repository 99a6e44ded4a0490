"""The in-process engine: the records in memory, as a pandas DataFrame or ArrayData."""

from __future__ import annotations

from typing import Any

from dpforge.engines.base import Engine, check_reading_stage


class LocalEngine(Engine):
    """Validated records held in this process (the default engine)."""

    def __init__(self, records: Any) -> None:
        self._data = records

    def _records(self) -> Any:
        return self._data

    def size(self, stage: str) -> int:
        check_reading_stage(stage)
        return len(self._data)

    def replace(self, records: Any) -> None:
        self._data = records
