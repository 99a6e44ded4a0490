"""The pipeline's shape may change; what a fixed-seed run does may not (see pipeline_cases)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.pipeline_cases import CASES, FIXTURES, run_case

pytestmark = pytest.mark.slow


def _close(actual, expected, where: str) -> None:
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected), where
        for key in expected:
            _close(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _close(a, e, f"{where}[{i}]")
    elif isinstance(expected, float) and not isinstance(actual, str):
        assert np.isclose(actual, expected, rtol=1e-6, atol=1e-6), (where, actual, expected)
    else:
        assert actual == expected, (where, actual, expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixed_seed_run_matches_its_fixture(name):
    expected = json.loads((FIXTURES / f"{name}.json").read_text())
    actual = json.loads(json.dumps(run_case(name), sort_keys=True))
    _close(actual, expected, name)
