"""Model folders written before the default path owned its generator (format_version 1, dpforge
at 723a06a: a GAN config and method in every model.json) still load and sample as they did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.pipeline.pipeline_cases import _sample_json, differences

import dpforge

V1 = Path(__file__).parent / "fixtures" / "model_v1"
SAMPLES = json.loads((V1 / "samples.json").read_text())


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_version_1_folder_loads_and_samples_as_when_it_was_written(name):
    model = dpforge.load(V1 / name)
    assert json.loads((V1 / name / "model.json").read_text())["format_version"] == 1
    sample = json.loads(json.dumps(_sample_json(model.sample(5, seed=1))))
    assert differences(sample, SAMPLES[name], name) == []


def test_a_version_1_folder_rebuilds_no_discriminator():
    model = dpforge.load(V1 / "table_anchor")
    assert not hasattr(model, "discriminator")
    assert all("discriminator" not in name for name in vars(model))
