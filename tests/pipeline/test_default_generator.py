"""The default path owns its generator: a fit without refinement builds no discriminator, no
GAN config and no optimiser for one; a refinement is handed the kind's generator."""

from __future__ import annotations

import json

import pytest
import torch
from tests.pipeline.pipeline_cases import CASES

import dpforge
from dpforge.kinds.generator import GeneratorConfig, KindGenerator
from dpforge.methods import METHODS
from dpforge.methods.base import GanConfig, GanMethod
from dpforge.nets import families


@pytest.fixture
def built(monkeypatch):
    """Counts of the discriminators, refiners and GAN configs built while the test runs."""
    counts = {"discriminator": 0, "refiner": 0, "gan_config": 0}
    make_d, make_refiner = families._discriminator, GanMethod.__init__

    def counted_d(*args):
        counts["discriminator"] += 1
        return make_d(*args)

    def counted_refiner(self, *args, **kw):
        counts["refiner"] += 1
        return make_refiner(self, *args, **kw)

    def counting(make_config):
        def counted_config(self, *args, **kw):
            counts["gan_config"] += 1
            make_config(self, *args, **kw)

        return counted_config

    monkeypatch.setattr(families, "_discriminator", counted_d)
    monkeypatch.setattr(GanMethod, "__init__", counted_refiner)
    for config_cls in (GanConfig, *(c for _, c in METHODS.values())):
        monkeypatch.setattr(config_cls, "__init__", counting(config_cls.__init__))
    return counts


def _fit(name: str):
    load, options = CASES[name]
    data, schema = load()
    return dpforge.Synthesizer(schema, seed=0, progress=False, **options).fit(data)


def test_a_default_table_fit_builds_no_discriminator_refiner_or_gan_config(built, tmp_path):
    synth = _fit("table_anchor")
    assert built == {"discriminator": 0, "refiner": 0, "gan_config": 0}
    assert isinstance(synth.config_, GeneratorConfig) and synth.plan_.steps == 0
    names = [n for n, _ in synth.generator_.named_parameters()]
    assert names and not any("discriminator" in n or "critic" in n for n in names)
    assert not any("discriminator" in n or "optimizer" in n for n in vars(synth))
    manifest = json.loads((synth.save(tmp_path / "m") / "model.json").read_text())
    assert manifest["method"] is None and manifest["format_version"] == 2
    assert sorted(manifest["config"]) == sorted(vars(GeneratorConfig()))
    loaded = dpforge.load(tmp_path / "m")
    assert built["discriminator"] == 0 and loaded.sample(3, seed=1).shape[0] == 3


def test_a_refinement_is_handed_the_kind_generator_and_builds_its_discriminator(built, tmp_path):
    synth = _fit("table_anchor_refine")
    assert built["discriminator"] == 1 and built["refiner"] == 1 and built["gan_config"] >= 1
    assert synth.plan_.steps > 0 and not isinstance(synth.config_, GeneratorConfig)
    manifest = json.loads((synth.save(tmp_path / "m") / "model.json").read_text())
    assert manifest["method"] == "dpcgan" and manifest["config"]["batch_size"] == 64
    loaded = dpforge.load(tmp_path / "m")
    assert built["discriminator"] == 1  # loading built none
    expected = synth.sample(4, seed=2)
    assert loaded.sample(4, seed=2).equals(expected)


def test_a_refiner_trains_the_generator_it_is_handed():
    from dpforge.data.encoder import TableEncoder
    from dpforge.methods.dpcgan import DPCGAN, DPCGANConfig
    from dpforge.schema.table import Column, Schema

    schema = Schema(columns=(Column("a", "categorical", categories=("x", "y")),))
    layout = TableEncoder(schema).layout
    model = KindGenerator(GeneratorConfig(latent_dim=4), layout, 0, None)
    model.initialise(torch.Generator().manual_seed(0))
    refiner = DPCGAN.refining(model, DPCGANConfig(latent_dim=4, batch_size=2), 1.0)
    assert refiner.generator is model.generator
    assert refiner.model is model and len(refiner.discriminators()) == 1
