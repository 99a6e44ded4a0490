"""The pipeline's shape may change; what a fixed-seed run does may not (see pipeline_cases)."""

from __future__ import annotations

import json

import pytest

from tests.pipeline_cases import (
    CASES,
    FIXTURES,
    RELEASES,
    differences,
    float_environment,
    normalised,
    run_case,
)

pytestmark = pytest.mark.slow


TRAINED = ("sample", "weights_sum")  # rounded by the CPU's kernels, so kept per CPU


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    """(name, the fixture, this machine's run of the case), each case run once."""
    name = request.param
    expected = json.loads((FIXTURES / f"{name}.json").read_text())
    return name, expected, normalised(run_case(name))


def test_fixed_seed_releases_match_their_fixture(case):
    name, expected, actual = case
    assert [d for key in RELEASES for d in differences(actual[key], expected[key], key)] == []


def test_fixed_seed_trained_outputs_match_this_cpus_record(case):
    name, expected, actual = case
    here = float_environment()
    if here not in expected["trained"]:
        recorded = ", ".join(sorted(expected["trained"]))
        pytest.skip(
            f"{name} has trained outputs for '{recorded}', not for '{here}' "
            "(add them: python -m tests.pipeline_cases --this-cpu NAME)"
        )
    mine, recorded = actual["trained"][here], expected["trained"][here]
    assert [d for key in TRAINED for d in differences(mine[key], recorded[key], key)] == []


def test_differences_name_each_departure_and_pass_rounding():
    expected = {"a": [1.0, "x"], "b": {"c": 2}}
    assert differences({"a": [1.0 + 1e-9, "x"], "b": {"c": 2}}, expected, "r") == []
    found = differences({"a": [1.1, "y"], "b": {"d": 2}}, expected, "r")
    assert found == ["r.a[0]: 1.1 != 1.0", "r.a[1]: 'y' != 'x'", "r.b: keys ['d'] != ['c']"]
