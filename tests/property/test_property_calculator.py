"""``dpforge privacy`` over its whole surface (issue 25): huge step counts, tiny or huge epsilon,
delta at its edges. Every request ends within bounded time and memory, with a table or a
one-line error that says what is possible, never a traceback."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_support import assert_cli_clean, run_cli

LIMIT_S = 120  # one answer, on two loaded cores; the crash took minutes and then ran out of memory

SIZES = st.integers(1, 10**7).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n)))
SIGMAS = st.one_of(
    st.sampled_from(["0.3", "1", "1048576", "0", "0.29", "1e-9", "2e6", "nan", "inf"]),
    st.floats(0.3, 2.0**20).map(repr),
)
EPSILONS = st.one_of(
    st.sampled_from(["1e-300", "1e-6", "0.01", "1", "100", "100.1", "1e300", "0", "-1", "nan"]),
    st.floats(1e-3, 100).map(repr),
)
STEPS = st.one_of(st.sampled_from([0, 1, 10**6, 10**6 + 1, 10**12]), st.integers(0, 10**6))
SMALL_STEPS = st.integers(0, 300)  # calibrating sigma re-evaluates PLD tens of times
EPOCHS = st.sampled_from(["1e-9", "0.5", "1e308", "inf", "nan"])


@st.composite
def deltas(draw, size: int) -> str:
    edges = ["5e-324", "1e-300", "1e-13", "1e-12", "0.5", "1", "0", "nan", repr(1 / size)]
    return draw(st.one_of(st.sampled_from(edges), st.floats(1e-12, 1e-5).map(repr)))


def _check(args: list[object]) -> None:
    code, output = run_cli(["privacy", *args, "--json"], limit_s=LIMIT_S)
    assert_cli_clean(code, output)
    assert code in (0, 2), output


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SIZES, SIGMAS, STEPS, st.data())
def test_epsilon_of_any_sigma_and_step_count(sizes, sigma, steps, data):
    n, b = sizes
    delta = data.draw(deltas(n))
    _check(["-n", n, "-b", b, "--sigma", sigma, "--steps", steps, "--delta", delta])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SIZES, EPSILONS, SMALL_STEPS, st.data())
def test_sigma_for_any_target(sizes, epsilon, steps, data):
    n, b = sizes
    delta = data.draw(deltas(n))
    _check(["-n", n, "-b", b, "--epsilon", epsilon, "--steps", steps, "--delta", delta])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SIZES, EPSILONS, SIGMAS, st.data())
def test_steps_for_any_target(sizes, epsilon, sigma, data):
    n, b = sizes
    delta = data.draw(deltas(n))
    _check(["-n", n, "-b", b, "--epsilon", epsilon, "--sigma", sigma, "--delta", delta])


@settings(max_examples=6, deadline=None)
@given(SIZES, EPOCHS)
def test_any_epoch_count(sizes, epochs):
    n, b = sizes
    _check(["-n", n, "-b", b, "--sigma", "1", "--epochs", epochs, "--delta", "1e-12"])


def test_the_reported_crash_is_one_line():
    """Was: MemoryError std::bad_alloc and a traceback."""
    args = ["-n", 100, "-b", 100, "--epsilon", "1e-6", "--steps", 10**6, "--delta", "1e-4"]
    code, output = run_cli(["privacy", *args], limit_s=LIMIT_S)
    assert_cli_clean(code, output)
    assert code == 2 and "cannot be reached" in output
