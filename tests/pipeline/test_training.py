"""The training loop's console output: progress and step counts, nothing computed on records.

Issue 13.7: the progress lines printed the discriminator's loss (computed on a real batch), and
for GS-WGAN the generator's loss read from a critic trained without noise.
"""

from __future__ import annotations

import re

import pytest
import torch

from dpforge.data.encoder import TableEncoder
from dpforge.methods.dpcgan import DPCGAN, DPCGANConfig
from dpforge.methods.dpwgan import DPWGAN, DPWGANConfig
from dpforge.methods.gswgan import GSWGAN, GSWGANConfig
from dpforge.privacy.noise import make_generator
from dpforge.training import TrainingDivergedError, TrainingPlan, train

SMALL = {"latent_dim": 8, "generator_hidden": (16,), "discriminator_hidden": (16,)}
METHODS = {
    "dpcgan": (DPCGAN, DPCGANConfig(batch_size=32, **SMALL)),
    "dpwgan": (DPWGAN, DPWGANConfig(batch_size=32, d_steps=1, **SMALL)),
    "gswgan": (
        GSWGAN,
        GSWGANConfig(batch_size=16, num_discriminators=4, warm_start_steps=2, **SMALL),
    ),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_progress_lines_show_no_loss_computed_on_records(cancer, capsys, name):
    frame, schema = cancer
    encoder = TableEncoder(schema)
    features, labels = encoder.transform(frame)
    method_cls, config = METHODS[name]
    method = method_cls(config, encoder.layout, 2, torch.tensor([0.5, 0.5]), 1.0)
    x, y = torch.as_tensor(features, dtype=torch.float32), torch.as_tensor(labels)
    q = 1 / 4 if name == "gswgan" else 32 / len(frame)
    train(method, x, y, TrainingPlan(20, q, 1.0), make_generator(0), progress=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert len(lines) == 20  # no terminal: one line per 5% of the steps
    for line in lines:
        assert "D " not in line  # the discriminator's loss is computed on real records
        if name == "gswgan":  # its generator loss is a non-private critic's score
            assert re.fullmatch(r"step \d+/20\s*", line), line
        else:  # the generator's loss against the private discriminator: post-processing
            assert re.fullmatch(r"step \d+/20  G -?\d+\.\d{3}\s*", line), line


def _small_dpcgan(cancer):
    frame, schema = cancer
    encoder = TableEncoder(schema)
    features, labels = encoder.transform(frame)
    method = DPCGAN(METHODS["dpcgan"][1], encoder.layout, 2, torch.tensor([0.5, 0.5]), 1.0)
    x, y = torch.as_tensor(features, dtype=torch.float32), torch.as_tensor(labels)
    return method, x, y, 32 / len(frame)


def test_the_divergence_stop_never_reads_the_discriminator_loss(cancer):
    """Issue 20.6: a non-finite discriminator loss (computed on real records, no noise) must not
    decide anything; only the generator's weights (post-processing of DP releases) do."""
    method, x, y, q = _small_dpcgan(cancer)
    real_step = method.train_step

    def step_with_a_bad_d_loss(features, labels, state, generator):
        real_step(features, labels, state, generator)
        state.d_loss = float("inf") if state.step % 2 else float("nan")

    method.train_step = step_with_a_bad_d_loss
    state = train(method, x, y, TrainingPlan(6, q, 1.0), make_generator(0), progress=False)
    assert state.spent == 6  # ran to the end: the loss was not read


def test_the_divergence_stop_reads_the_generator_weights_and_names_the_step(cancer):
    method, x, y, q = _small_dpcgan(cancer)
    real_step = method.train_step

    def step_that_breaks_g_at_step_4(features, labels, state, generator):
        real_step(features, labels, state, generator)
        if state.step == 4:
            with torch.no_grad():
                next(method.generator.parameters()).view(-1)[0] = float("nan")

    method.train_step = step_that_breaks_g_at_step_4
    with pytest.raises(TrainingDivergedError, match="private step 4 of 10") as caught:
        train(method, x, y, TrainingPlan(10, q, 1.0), make_generator(0), progress=False)
    assert "nan" not in str(caught.value).lower().replace("nan or infinite", "")
