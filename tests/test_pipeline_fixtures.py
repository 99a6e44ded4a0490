"""The pipeline's shape may change; what a fixed-seed run does may not (see pipeline_cases)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.pipeline_cases import CASES, FIXTURES, float_environment, run_case

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


RELEASES = ("ledger", "plan", "epsilon")  # the same on every machine
TRAINED = ("sample", "weights_sum")  # rounded by the CPU's kernels


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    """(name, the fixture, this machine's run of the case), each case run once."""
    name = request.param
    expected = json.loads((FIXTURES / f"{name}.json").read_text())
    return name, expected, json.loads(json.dumps(run_case(name), sort_keys=True))


def test_fixed_seed_releases_match_their_fixture(case):
    name, expected, actual = case
    for key in RELEASES:
        _close(actual[key], expected[key], f"{name}.{key}")


def test_fixed_seed_trained_outputs_match_on_the_recording_cpu(case):
    name, expected, actual = case
    recorded = expected.get("float_environment")
    if recorded != float_environment():
        pytest.skip(f"{name} was recorded on '{recorded}', this is '{float_environment()}'")
    for key in TRAINED:
        _close(actual[key], expected[key], f"{name}.{key}")
