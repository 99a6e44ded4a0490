"""An option that does not apply is refused, never ignored (issue 21.8): in the Python API and
on the command line, before any record is read, in one line that says what to pass instead."""

from __future__ import annotations

import pandas as pd
import pytest

from cli_support import run
from dpforge.errors import PrivacyError
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.methods.dpwgan import DPWGANConfig
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer

SCHEMA = Schema(
    (Column("x", "continuous", 0.0, 1.0), Column("y", "categorical", categories=("a", "b"))),
    label="y",
)


class Untouchable(pd.DataFrame):
    """Records that fail the test if anything reads them."""

    def __getitem__(self, key):
        raise AssertionError("the records were read before the options were checked")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "dpwgan"}, "method 'dpwgan' does not apply"),
        ({"method": "dpcgan"}, "method 'dpcgan' does not apply"),
        ({"method_options": DPCGANConfig(batch_size=256)}, "batch_size do not apply"),
        (
            {"method": "dpwgan", "method_options": DPWGANConfig(bayesian_accounting=True)},
            "does not apply",
        ),
    ],
)
def test_the_api_refuses_discriminator_options_without_a_discriminator(kwargs, match):
    synth = Synthesizer(SCHEMA, **kwargs)
    with pytest.raises(PrivacyError, match=match) as error:
        synth.fit(Untouchable({"x": [0.5], "y": ["a"]}))
    assert "\n" not in str(error.value) and "anchor share below 1" in str(error.value)


def test_the_api_keeps_generator_options_and_a_refining_method():
    Synthesizer(SCHEMA, method_options=DPCGANConfig(latent_dim=8)).check_options()
    Synthesizer(SCHEMA, method="dpwgan", anchor=AnchorConfig(share=0.5)).check_options()
    Synthesizer(SCHEMA, method="dpwgan", anchor=None).check_options()


def test_a_small_table_anchored_alone_needs_no_batch_size():
    """Without a discriminator no batch size applies: fewer records than the default batch
    (64) fit, where the size check used to ask for --batch-size, now refused."""
    frame = pd.DataFrame({"x": [i / 40 for i in range(40)], "y": ["a", "b"] * 20})
    synth = Synthesizer(SCHEMA, epsilon=3.0, seed=0, progress=False, anchor=AnchorConfig(steps=5))
    assert len(synth.fit(frame).sample(10, seed=0)) == 10


def test_the_bayesian_bound_is_refused_without_dp_sgd_noise():
    options = DPWGANConfig(bayesian_accounting=True)
    synth = Synthesizer(
        SCHEMA, method="dpwgan", method_options=options, anchor=None, epsilon=float("inf")
    )
    with pytest.raises(PrivacyError, match="Bayesian bound does not apply.*finite epsilon"):
        synth.check_options()


@pytest.fixture
def table_files(tmp_path):
    data = tmp_path / "data.csv"
    pd.DataFrame({"x": [0.1, 0.9] * 20, "y": ["a", "b"] * 20}).to_csv(data, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(SCHEMA.to_json())
    return data, schema


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--method", "dpwgan"], "--anchor-share 0.5"),
        (["--method", "dpwgan", "--bayesian"], "--anchor-share 0.5"),
        (["--batch-size", "256"], "batch_size do not apply"),
        (["--anchor-share", "0", "--anchor-bins", "16"], "--anchor-bins do(es) not apply"),
        (["--bayesian"], "do(es) not apply to method 'dpcgan'"),
    ],
)
def test_the_command_line_refuses_them_in_one_line(
    table_files, tmp_path, monkeypatch, capsys, flags, says
):
    data, schema = table_files
    args = ["fit", data, "--schema", schema, "--out", tmp_path / "m", "--no-budget-file", *flags]
    code, text = run(args, monkeypatch, capsys, unwrap=True)
    assert code == 2
    assert says in text
    assert not (tmp_path / "m").exists()
