"""One conformance suite that every method passes, on a real table (Thyroid, UCI "ann").

Method-specific mechanism checks (sigma = 0 and C = inf equal the plain step, measured noise
std, clipped norms <= C) live in test_<method>.py; here: what every method promises through
the Synthesizer.
"""

from __future__ import annotations

import dp_accounting
import pytest
from safetensors import safe_open

import dpforge
from dpforge.datasets.thyroid import load_thyroid
from dpforge.errors import DataError
from dpforge.methods import METHODS

SMALL = {
    "dpcgan": dict(
        batch_size=64, latent_dim=16, generator_hidden=(32,), discriminator_hidden=(32,)
    ),
    "gswgan": dict(
        batch_size=8,
        latent_dim=16,
        generator_hidden=(32,),
        discriminator_hidden=(32,),
        d_steps=2,
        num_discriminators=10,
    ),
    "dpwgan": dict(
        batch_size=64, latent_dim=16, generator_hidden=(32,), discriminator_hidden=(32,), d_steps=2
    ),
}


# GS-WGAN's sound accounting (B releases per subset choice) needs a larger budget for a
# handful of steps at this noise; the suite checks mechanics, not utility.
EPSILON = {"dpcgan": 4.0, "dpwgan": 4.0, "gswgan": 8.0}
SIGMA = {"dpcgan": 1.3, "dpwgan": 1.3, "gswgan": 5.0}


@pytest.fixture(scope="module")
def thyroid():
    try:
        train, test, schema = load_thyroid()
    except DataError as exc:
        pytest.skip(f"Thyroid data not available: {exc}")
    return train.sample(n=800, random_state=0).reset_index(drop=True), test, schema


@pytest.fixture(scope="module", params=sorted(METHODS))
def fitted(request, thyroid):
    method = request.param
    train, _, schema = thyroid
    config = METHODS[method][1](**SMALL[method])
    synth = dpforge.Synthesizer(
        schema,
        method=method,
        anchor=None,
        epsilon=EPSILON[method],
        delta=1e-5,
        noise_multiplier=SIGMA[method],
        method_options=config,
        seed=0,
        progress=False,
    ).fit(train)
    return method, synth


def test_every_method_is_registered_in_this_suite():
    assert set(SMALL) == set(METHODS)


def test_ledger_matches_what_the_sampler_did(fitted, thyroid):
    train, _, _ = thyroid
    method, synth = fitted
    sigma = dp_accounting.GaussianDpEvent(SIGMA[method])
    if method == "gswgan":  # one of K subsets per step, B sanitized gradients inside it
        k = synth.config_.num_discriminators
        assert synth.plan_.sample_rate == 1 / k
        releases = dp_accounting.SelfComposedDpEvent(sigma, synth.config_.batch_size)
        step = dp_accounting.SampledWithoutReplacementDpEvent(k, 1, releases)
    else:
        q = synth.plan_.sample_rate  # B / N, N the record count released under DP
        released_n = synth.config_.batch_size / q
        assert released_n == pytest.approx(round(released_n))
        assert abs(released_n - len(train)) < 0.05 * len(train)
        step = dp_accounting.PoissonSampledDpEvent(q, sigma)
    assert synth.ledger_.entries[-1].event == dp_accounting.SelfComposedDpEvent(
        step, synth.plan_.steps
    )
    assert synth.privacy_spent().epsilon <= EPSILON[method]
    assert any(e.name.startswith("metadata: label prior") for e in synth.ledger_.entries)


def test_sampled_rows_are_valid(fitted, thyroid):
    _, synth = fitted
    _, _, schema = thyroid
    rows = synth.sample(500, seed=0)
    assert list(rows.columns) == schema.names
    for column in schema.columns:
        if column.is_numeric:
            assert rows[column.name].between(column.lower, column.upper).all()
        else:
            assert set(rows[column.name]) <= set(column.categories)


def test_saved_model_holds_only_the_generator(fitted, tmp_path):
    method, synth = fitted
    path = synth.save(tmp_path / method)
    assert sorted(p.name for p in path.iterdir()) == ["generator.safetensors", "model.json"]
    with safe_open(str(path / "generator.safetensors"), "pt") as f:
        generator_keys = set(f.keys())  # noqa: SIM118 (not a dict)
    assert generator_keys == set(synth.generator_.state_dict())
    loaded = dpforge.load(path)
    assert loaded.method == method
    assert loaded.sample(10, seed=3).equals(synth.sample(10, seed=3))
