"""Per-person (user-level) DP-SGD, issue 21.6: whole persons Poisson-sampled at rate q, each
person's gradient summed over their rows and clipped to C, noise once on the sum.

Checked against a slow, obvious oracle (a loop over persons, plain autograd, each person's
summed loss differentiated and clipped on its own) in float64: the ghost path with the gradient
penalty (dpwgan), the plain ghost path (dpcgan) and the torch.func path. Then the bound itself,
numerically: removing one person's k rows moves the noiseless clipped sum by at most C, where
per-record clipping moves it by k C. Then the sampler, the person count that sizes q (a DP
release in the ledger) and the refusals of what would still run per row.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from dpforge.errors import PrivacyError
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.methods.dpwgan import DPWGANConfig
from dpforge.methods.gswgan import GSWGANConfig
from dpforge.nets.conv import condition_channels, conv_critic
from dpforge.privacy import ghost_layers
from dpforge.privacy.clipping import clipped_gradient_sum
from dpforge.privacy.ghost_penalty import clipped_gradient_sum_with_penalty
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.noise import make_generator
from dpforge.privacy.per_example import clip_and_sum, per_example_gradients
from dpforge.privacy.person import refuse_per_row_sgd
from dpforge.privacy.release_noise import count_event, noisy_counts
from dpforge.privacy.sampling import PersonPoissonSampler
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig

K = 3
GP = 10.0


def _penalty(slopes: torch.Tensor) -> torch.Tensor:
    return GP * (torch.sqrt(slopes.flatten(1).square().sum(1) + 1e-12) - 1.0) ** 2


def _score(scores: torch.Tensor) -> torch.Tensor:
    return -scores[:, 0]


def _persons(count: int, seed: int) -> torch.Tensor:
    """Person codes of a shuffled table where person i has 1..K rows."""
    gen = torch.Generator().manual_seed(seed)
    rows = torch.randint(1, K + 1, (count,), generator=gen)
    codes = torch.repeat_interleave(torch.arange(count), rows)
    return codes[torch.randperm(codes.numel(), generator=gen)]


def _cat(rows: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
    return torch.cat([rows, onehot], dim=1)


CRITICS = {  # name -> (critic, record shape, classes, join); LayerNorm/GroupNorm: formed taps
    "mlp_layernorm": (
        lambda: nn.Sequential(
            nn.Linear(5 + 2, 8),
            nn.LayerNorm(8),
            nn.Tanh(),
            nn.Linear(8, 6),
            nn.LeakyReLU(0.2),
            nn.Linear(6, 1),
        ),
        (5,),
        2,
        _cat,
    ),
    "conv_groupnorm": (
        lambda: conv_critic((1, 8, 8), 3, channels=(4, 6), norm="group"),
        (1, 8, 8),
        3,
        condition_channels,
    ),
}


def _problem(name: str, groups: torch.Tensor, seed: int = 0):
    build, shape, classes, join = CRITICS[name]
    gen = torch.Generator().manual_seed(seed)
    model = build().double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.4)
    n = groups.numel()
    records = torch.randn(n, *shape, generator=gen, dtype=torch.float64)
    hats = torch.randn(n, *shape, generator=gen, dtype=torch.float64)
    onehot = nn.functional.one_hot(torch.randint(0, classes, (n,), generator=gen), classes)
    onehot = onehot.double()
    return model, join(records, onehot), hats, (lambda r: join(r, onehot)), onehot


def _oracle(model, row_losses, groups: torch.Tensor, count: int, clip: float):
    """For each person: the gradient of their summed loss (plain autograd), clipped to C;
    returns the sum and each person's unclipped norm."""
    params = list(model.parameters())
    total = [torch.zeros_like(p) for p in params]
    norms = []
    for person in range(count):
        rows = torch.nonzero(groups == person).flatten()
        grads = torch.autograd.grad(row_losses(rows).sum(), params)
        norm = torch.sqrt(sum(g.square().sum() for g in grads))
        factor = min(1.0, clip / float(norm))
        total = [t + factor * g for t, g in zip(total, grads, strict=True)]
        norms.append(norm)
    return total, torch.stack(norms)


def _penalised(model, inputs, hats, join_all):
    """Per row: -D(x) + penalty of the slope at its interpolate (autograd, create_graph)."""

    def losses(rows: torch.Tensor) -> torch.Tensor:
        hat = hats.clone().requires_grad_(True)
        scores = model(join_all(hat))[:, 0]
        (slopes,) = torch.autograd.grad(scores.sum(), hat, create_graph=True)
        return -model(inputs[rows])[:, 0] + _penalty(slopes[rows])

    return losses


def _assert_close(got, expected, norms):
    torch.testing.assert_close(got.norms, norms, rtol=1e-9, atol=1e-12)
    for g, e in zip(got.grads, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("strategy", ["ghost", "materialise"])
@pytest.mark.parametrize("name", sorted(CRITICS))
def test_penalty_path_per_person_matches_a_loop_over_persons(name, strategy, monkeypatch):
    monkeypatch.setattr(ghost_layers, "NORM_STRATEGY", strategy)
    groups = _persons(6, seed=1)
    count = int(groups.max()) + 1
    model, inputs, hats, join, _ = _problem(name, groups)
    losses = _penalised(model, inputs, hats, join)
    _, unclipped = _oracle(model, losses, groups, count, math.inf)
    clip = float(unclipped.median())  # some persons clip, some do not
    for c in (math.inf, clip):
        expected, norms = _oracle(model, losses, groups, count, c)
        got = clipped_gradient_sum_with_penalty(
            model, inputs, _score, hats, join, _penalty, c, groups, count
        )
        _assert_close(got, expected, norms)


def test_torch_func_path_per_person_matches_a_loop_over_persons():
    groups = _persons(6, seed=2)
    count = int(groups.max()) + 1
    model, inputs, hats, join, onehot = _problem("mlp_layernorm", groups)

    def example_loss(forward, x, x_hat, y):
        slope = torch.func.grad(lambda r: forward(_cat(r[None], y[None]))[0, 0])(x_hat)
        return -forward(x.unsqueeze(0))[0, 0] + _penalty(slope[None])[0]

    grads, per_row = per_example_gradients(model, example_loss, (inputs, hats, onehot))
    expected, norms = _oracle(model, _penalised(model, inputs, hats, join), groups, count, 0.5)
    _assert_close(clip_and_sum(model, grads, per_row, 0.5, groups, count), expected, norms)


def test_plain_ghost_path_clips_each_persons_sum_not_its_mean():
    """dpcgan's path: ``group_mean=False`` clips a person's summed gradient."""
    groups = _persons(7, seed=3)
    count = int(groups.max()) + 1
    model, inputs, _, _, _ = _problem("mlp_layernorm", groups)
    targets = (torch.arange(groups.numel()) % 2).double()

    def bce(logits: torch.Tensor) -> torch.Tensor:
        return nn.functional.binary_cross_entropy_with_logits(
            logits[:, 0], targets, reduction="none"
        )

    def losses(rows):
        logits = model(inputs[rows])
        return nn.functional.binary_cross_entropy_with_logits(
            logits[:, 0], targets[rows], reduction="none"
        )

    expected, norms = _oracle(model, losses, groups, count, 0.3)
    got = clipped_gradient_sum(model, inputs, bce, 0.3, groups, num_groups=count, group_mean=False)
    _assert_close(got, expected, norms)


# -- the bound: one person's k rows move the clipped sum by at most C --------------------------
def _flat(grads: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([g.flatten() for g in grads])


def test_removing_one_persons_k_rows_moves_the_noiseless_clipped_sum_by_at_most_c():
    """Person 0 has k identical rows with large gradients: per-record clipping lets their
    removal move the sum by k C; per-person clipping by at most C (and it reaches C)."""
    clip = 0.1
    groups = torch.tensor([0, 0, 0, 1, 2, 2, 3, 4, 4, 4])
    model, inputs, hats, _, onehot = _problem("mlp_layernorm", groups, seed=4)
    inputs[1:3], hats[1:3] = inputs[0], hats[0]  # person 0: k copies of one row
    others = groups != 0

    def clipped(keep: torch.Tensor, per_person: bool) -> torch.Tensor:
        ids = torch.unique(groups[keep], return_inverse=True)[1] if per_person else None
        out = clipped_gradient_sum_with_penalty(
            model, inputs[keep], _score, hats[keep], lambda r: _cat(r, onehot[keep]),
            _penalty, clip, ids,
        )  # fmt: skip
        return _flat(out.grads)

    everyone = torch.ones_like(others)
    per_person = torch.linalg.vector_norm(clipped(everyone, True) - clipped(others, True))
    per_record = torch.linalg.vector_norm(clipped(everyone, False) - clipped(others, False))
    assert per_person <= clip and per_person > 0.99 * clip
    assert per_record > 2.9 * clip  # k = 3 rows, each clipped to C, all aligned


# -- sampling whole persons ---------------------------------------------------------------------
def test_the_sampler_draws_each_person_with_float64_uniforms_and_brings_all_their_rows():
    codes = _persons(500, seed=5)
    q = 0.1 + 3e-9
    batch = PersonPoissonSampler(codes, q).sample(make_generator(7))
    drawn = torch.nonzero(torch.rand(500, generator=make_generator(7), dtype=torch.float64) < q)
    expected = torch.nonzero(torch.isin(codes, drawn.flatten())).flatten()
    assert torch.equal(batch.rows, expected) and batch.count == drawn.numel()
    present = torch.unique(codes[batch.rows])
    assert torch.equal(present[batch.persons], codes[batch.rows])  # ids 0..count-1 per person
    assert PersonPoissonSampler(codes, q).expected_batch_size == pytest.approx(500 * q)


# -- q over persons, from a DP count of persons in the ledger -----------------------------------
SCHEMA = Schema(
    (
        Column("person", "drop"),
        Column("colour", "categorical", categories=("red", "green")),
        Column("y", "categorical", categories=("no", "yes")),
    ),
    label="y",
)


def _person_run():
    """The settings of a dpwgan run per person (k rows), batch 64."""
    from dpforge.synthesizer import Synthesizer

    synth = Synthesizer(
        SCHEMA, method="dpwgan", epsilon=3.0, seed=2, anchor=AnchorConfig(share=0.5),
        privacy_unit="person", max_rows_per_unit=K,
    )  # fmt: skip
    run = synth._run_settings()
    run.config = DPWGANConfig(batch_size=64)
    return run


def test_q_is_batch_over_a_dp_count_of_persons_recorded_in_the_ledger():
    from dpforge.pipeline.measure import PERSON_COUNT_ENTRY, sampled_count
    from dpforge.pipeline.plan import sample_rate, size_noise

    run = _person_run()
    records = pd.DataFrame({"colour": ["red"] * 2400, "y": ["no"] * 2400})
    records["person"] = np.repeat(np.arange(800), K)  # the codes bounding leaves
    ledger = PrivacyLedger()
    persons = sampled_count(run, records, ledger, n_public=2400.0)
    (entry,) = ledger.entries
    assert entry.name == f"{PERSON_COUNT_ENTRY}; per person ({K} rows): L2 sensitivity 1"
    assert entry.event == count_event(size_noise(3.0, 1e-5))
    rng = np.random.default_rng(run.seed_sequence(7))
    noisy = noisy_counts(np.array([800]), size_noise(3.0, 1e-5), rng)[0]
    assert persons == noisy  # the discrete Gaussian mechanism on P, sensitivity 1
    assert sample_rate(run, persons) == pytest.approx(64 / persons)  # what measure plans with
    per_record = PrivacyLedger()
    run.unit = type(run.unit)()  # no unit: q over the released record count, no new release
    assert sampled_count(run, records, per_record, 2400.0) == 2400.0 and not per_record.entries


def test_the_checkpoint_stores_the_q_over_persons_the_plan_uses():
    from dpforge.pipeline.checkpoints import privacy_settings
    from dpforge.pipeline.run import RunSetup
    from dpforge.training import TrainingPlan

    run = _person_run()
    persons_q = 64 / 790.0  # B over a released person count, not B over the rows
    plan = TrainingPlan(steps=100, sample_rate=persons_q, noise_multiplier=1.0)
    setup = RunSetup(SCHEMA, None, PrivacyLedger(), plan, n_records=2400, n_public=2400.0)
    assert privacy_settings(run, setup, 2400)["sample_rate"] == persons_q


# -- what would still run per row is refused ----------------------------------------------------
@pytest.mark.parametrize(
    ("method", "config", "processes", "message"),
    [
        ("gswgan", GSWGANConfig(), 1, "use --refine dpwgan or dpcgan"),
        ("dpcgan", DPCGANConfig(microbatches=4), 1, "leave out microbatches"),
        ("dpwgan", DPWGANConfig(bayesian_accounting=True), 1, "leave out bayesian_accounting"),
        ("dpwgan", DPWGANConfig(), 2, "run without torchrun, or without --refine"),
    ],
)
def test_per_row_dp_sgd_settings_are_refused_with_a_unit(method, config, processes, message):
    with pytest.raises(PrivacyError, match=message):
        refuse_per_row_sgd(method, config, processes)
    refuse_per_row_sgd("dpwgan", DPWGANConfig(), 1)  # per-person DP-SGD: accepted
    refuse_per_row_sgd("dpcgan", DPCGANConfig(), 1)


# -- the methods' steps -------------------------------------------------------------------------
def _method(cancer, name: str, sigma: float, clip: float):
    from dpforge.data.encoder import TableEncoder
    from dpforge.data.tables import validate_table
    from dpforge.methods import METHODS

    frame, schema = cancer
    encoder = TableEncoder(schema)
    features, labels = encoder.transform(validate_table(frame, schema))
    method_cls, config_cls = METHODS[name]
    small = dict(latent_dim=8, generator_hidden=(16,), discriminator_hidden=(16,))
    config = config_cls(batch_size=32, clip_norm=clip, **small)
    method = method_cls(config, encoder.layout, encoder.n_classes, torch.tensor([0.5, 0.5]), sigma)
    init = make_generator(7)
    with torch.no_grad():
        for p in list(method.generator.parameters()) + list(method.discriminator.parameters()):
            p.copy_(torch.randn(p.shape, generator=init) * 0.3)
    x = torch.as_tensor(features, dtype=torch.float32)
    return method, x, torch.as_tensor(labels)


def _critic(method) -> torch.Tensor:
    return _flat([p.detach() for p in method.discriminator.parameters()])


@pytest.mark.parametrize("name", ["dpwgan", "dpcgan"])
def test_unclipped_and_noiseless_a_person_step_is_the_per_record_step(cancer, name):
    """Persons change only the clipping units: with C = inf and sigma = 0 the sum of the
    persons' summed gradients is the sum of the rows' gradients."""
    import copy

    from dpforge.privacy.sampling import PersonBatch

    method, x, y = _method(cancer, name, sigma=0.0, clip=math.inf)
    per_person = copy.deepcopy(method)
    batch = PersonBatch(torch.arange(30), torch.arange(30) // K, 30 // K)
    method.discriminator_step(x[:30], y[:30], 0, make_generator(5))
    per_person.discriminator_step(x[:30], y[:30], 0, make_generator(5), batch)
    torch.testing.assert_close(_critic(per_person), _critic(method), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["dpwgan", "dpcgan"])
def test_train_step_samples_whole_persons_and_clips_them(cancer, name):
    """``prepare`` with person codes: the step is the one on the rows of the persons drawn,
    clipped per person (which differs from per-record clipping at this C)."""
    import copy

    from dpforge.training import TrainingPlan, TrainingState

    method, x, y = _method(cancer, name, sigma=1.0, clip=0.05)
    codes = torch.arange(x.shape[0]) // K
    plan = TrainingPlan(steps=1, sample_rate=0.2, noise_multiplier=1.0)
    by_hand, per_record = copy.deepcopy(method), copy.deepcopy(method)
    method.prepare(x.shape[0], plan, make_generator(5), persons=codes)
    method.train_step(x, y, TrainingState(), make_generator(5))
    generator = make_generator(5)
    batch = PersonPoissonSampler(codes, 0.2).sample(generator)
    assert batch.count > 0 and batch.rows.numel() > batch.count  # persons with several rows
    state = generator.get_state()
    by_hand.discriminator_step(x[batch.rows], y[batch.rows], 0, generator, batch)
    torch.testing.assert_close(_critic(method), _critic(by_hand))
    generator.set_state(state)
    per_record.discriminator_step(x[batch.rows], y[batch.rows], 0, generator)
    assert not torch.allclose(_critic(per_record), _critic(by_hand))
