"""The critic bank: critic k is a flat_mlp_critic, and training the stack is training each alone."""

from __future__ import annotations

import torch

from dpforge.nets.critic_bank import CriticBank
from dpforge.nets.init import initialise
from dpforge.nets.mlp import flat_mlp_critic


def _separate(m: int, in_dim: int, hidden: tuple[int, ...], seed: int):
    gen = torch.Generator().manual_seed(seed)
    critics = [flat_mlp_critic((in_dim,), 0, hidden) for _ in range(m)]
    for critic in critics:
        initialise(critic, gen)
    return critics


def test_each_critic_of_the_bank_is_the_flat_critic_drawn_in_turn():
    m, d, hidden = 3, 5, (7, 4)
    bank = CriticBank(m, d, hidden)
    bank.initialise(torch.Generator().manual_seed(3))
    separate = _separate(m, d, hidden, 3)
    x = torch.randn(m, 6, d, generator=torch.Generator().manual_seed(4))
    together = bank(x)
    for k, critic in enumerate(separate):
        assert torch.allclose(together[k], critic(x[k])[:, 0], atol=1e-6)
        assert torch.allclose(bank[k](x[k]), critic(x[k]), atol=1e-6)


def test_adam_on_the_stack_trains_each_critic_on_its_own_loss_alone():
    m, d, hidden = 3, 4, (6,)
    bank = CriticBank(m, d, hidden)
    bank.initialise(torch.Generator().manual_seed(0))
    separate = _separate(m, d, hidden, 0)
    x = torch.randn(m, 5, d, generator=torch.Generator().manual_seed(1))
    weight = torch.tensor([1.0, 0.0, 2.0])  # critic 1 has no loss (a critic with no record)
    opt = torch.optim.Adam(bank.parameters(), lr=0.1, betas=(0.5, 0.9))
    opts = [torch.optim.Adam(c.parameters(), lr=0.1, betas=(0.5, 0.9)) for c in separate]
    for _ in range(3):
        opt.zero_grad()
        ((bank(x) ** 2).mean(dim=1) * weight).sum().backward()
        opt.step()
        for k, (critic, o) in enumerate(zip(separate, opts, strict=True)):
            o.zero_grad()
            (weight[k] * (critic(x[k]) ** 2).mean()).backward()
            o.step()
    for k, critic in enumerate(separate):
        assert torch.allclose(bank[k](x[k]), critic(x[k]), atol=1e-5)
    untouched = _separate(m, d, hidden, 0)[1]
    assert torch.allclose(bank[1](x[1]), untouched(x[1]), atol=1e-6)
