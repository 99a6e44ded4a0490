"""Only the measure and refine stages read private records (design.md section 3).

A counting engine holds the records and, on every access, records which pipeline module the
call came from (read off the call stack, not from the stage name the caller passes). A whole fit
of each kind must show accesses from ``dpforge.pipeline.measure`` and, when a discriminator
trains, ``dpforge.pipeline.refine``, and from nowhere else.
"""

from __future__ import annotations

import inspect
from collections import Counter

import pytest
from tests.pipeline.pipeline_cases import CASES

from dpforge.engines import LocalEngine
from dpforge.errors import PrivacyError
from dpforge.synthesizer import Synthesizer

pytestmark = pytest.mark.slow


class CountingEngine(LocalEngine):
    """The in-process engine, counting accesses per calling pipeline module."""

    def __init__(self, records) -> None:
        super().__init__(records)
        self.accesses: Counter[str] = Counter()

    def _caller(self) -> str:
        for frame in inspect.stack()[2:]:
            module = frame.frame.f_globals.get("__name__", "")
            if module.startswith("dpforge.pipeline") or module == "dpforge.synthesizer":
                return module
        return "outside the pipeline"

    def read(self, stage: str):
        self.accesses[self._caller()] += 1
        return super().read(stage)

    def size(self, stage: str) -> int:
        self.accesses[self._caller()] += 1
        return super().size(stage)


def _fit(case: str, **extra) -> CountingEngine:
    load, options = CASES[case]
    data, schema = load()
    engine = CountingEngine(data)
    delta = 1e-5 if case.startswith("table") else 1e-4
    Synthesizer(schema, delta=delta, seed=0, progress=False, **options, **extra).fit(engine)
    return engine


@pytest.mark.parametrize(
    ("case", "stages"),
    [
        ("table_anchor", {"dpforge.pipeline.measure"}),
        ("table_discriminator", {"dpforge.pipeline.measure", "dpforge.pipeline.refine"}),
        ("image_moments", {"dpforge.pipeline.measure"}),
        ("series_embedding", {"dpforge.pipeline.measure"}),
    ],
)
def test_only_measure_and_refine_read_records(case, stages):
    engine = _fit(case)
    assert set(engine.accesses) == stages, engine.accesses


def test_a_run_resumed_from_its_saved_stages_reads_only_in_measure_and_refine(tmp_path):
    for _ in range(2):  # the second run resumes from the first one's checkpoints
        engine = _fit("table_discriminator", checkpoint_dir=tmp_path / "ck")
        assert set(engine.accesses) == {"dpforge.pipeline.measure", "dpforge.pipeline.refine"}


def test_an_engine_refuses_a_read_from_another_stage():
    engine = LocalEngine([1, 2, 3])
    for stage in ("plan", "fit", "release"):
        with pytest.raises(PrivacyError, match=f"'{stage}' stage asked for the private records"):
            engine.read(stage)
        with pytest.raises(PrivacyError, match="only"):
            engine.size(stage)
    assert engine.read("measure") == [1, 2, 3]
