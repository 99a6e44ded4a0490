"""The autoencoders of the images_latent.py trial and their clipped gradient sums.

- ``conditional``: conv encoder to a code; a decoder of (code, one-hot class) with transposed
  convolutions. Per-example gradients by ``torch.func`` (the library's
  ``clipped_sum_of_example_gradients``): exact for any network, slow on a CPU.
- ``sequential``: the same encoder, an unconditional decoder of nearest upsampling and 3x3
  convolutions, all one ``nn.Sequential`` of layers the library's ghost clipping supports
  (``clipped_gradient_sum``), which forms no per-example gradient. The class then lives in the
  code alone (the per-class code Gaussians carry it).

Both take packed rows (flattened image in [-1, 1], then the one-hot class), so that one
training loop serves both.
"""

from __future__ import annotations

import torch
from torch import nn

from dpforge.privacy.clipping import clipped_gradient_sum
from dpforge.privacy.per_example import clipped_sum_of_example_gradients

# A layer-normalised code x has ||x|| <= sqrt(L) (no affine part), so ||tanh(x / 2)|| <= sqrt(L)/2:
# codes divided by CODE_SCALE have norm <= sqrt(L), which is what class_moments needs (it divides
# by sqrt(L)), twice the scale that the [-1, 1] bound alone would allow.
CODE_SCALE = 0.5


class _HalfTanh(nn.Module):
    """tanh(x / 2): a layer-normalised code stays in the unsaturated range."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(0.5 * x)


class CodedAutoencoder(nn.Module):
    """Conv encoder to a ``tanh`` code; conv decoder of (code, one-hot class). One input tensor
    (the flattened image and its one-hot class side by side) so that the per-example
    gradient helper can call it as ``forward(x)``."""

    def __init__(self, shape: tuple[int, int, int], latent: int, n_classes: int, width: int):
        super().__init__()
        c, h, w = shape
        self.shape, self.n_classes, self.width = shape, n_classes, width
        self.small = (h // 4, w // 4)
        flat = 2 * width * self.small[0] * self.small[1]
        self.encoder = nn.Sequential(
            nn.Conv2d(c, width, 4, 2, 1), nn.SiLU(),
            nn.Conv2d(width, 2 * width, 4, 2, 1), nn.SiLU(),
            nn.Flatten(), nn.Linear(flat, latent),
            nn.LayerNorm(latent, elementwise_affine=False), _HalfTanh(),
        )  # fmt: skip
        self.lift = nn.Sequential(nn.Linear(latent + n_classes, flat), nn.SiLU())
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(2 * width, width, 4, 2, 1), nn.SiLU(),
            nn.ConvTranspose2d(width, c, 4, 2, 1), nn.Tanh(),
        )  # fmt: skip

    def split(self, packed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(images (n, C, H, W), one-hot classes (n, K)) from the packed rows."""
        return packed[:, : -self.n_classes].reshape(-1, *self.shape), packed[:, -self.n_classes :]

    def decode(self, code: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
        hidden = self.lift(torch.cat([code, onehot], dim=1))
        return self.decoder(hidden.reshape(-1, 2 * self.width, *self.small))

    def forward(self, packed: torch.Tensor) -> torch.Tensor:
        images, onehot = self.split(packed)
        return self.decode(self.encoder(images), onehot)


class SequentialAutoencoder(nn.Module):
    """Encoder and unconditional decoder as ONE ``nn.Sequential`` (``net``) for ghost clipping;
    ``encoder`` and ``decode`` run its two halves."""

    def __init__(self, shape: tuple[int, int, int], latent: int, n_classes: int, width: int):
        super().__init__()
        c, h, w = shape
        self.shape, self.n_classes = shape, n_classes
        small = (h // 4, w // 4)
        flat = 2 * width * small[0] * small[1]
        self.net = nn.Sequential(
            nn.Conv2d(c, width, 4, 2, 1), nn.SiLU(),
            nn.Conv2d(width, 2 * width, 4, 2, 1), nn.SiLU(),
            nn.Flatten(), nn.Linear(flat, latent),
            nn.LayerNorm(latent, elementwise_affine=False), _HalfTanh(),
            nn.Linear(latent, flat), nn.SiLU(), nn.Unflatten(1, (2 * width, *small)),
            nn.Upsample(scale_factor=2), nn.Conv2d(2 * width, width, 3, 1, 1), nn.SiLU(),
            nn.Upsample(scale_factor=2), nn.Conv2d(width, c, 3, 1, 1), nn.Tanh(),
        )  # fmt: skip
        self.code_end = 8  # net[:8] ends at the code

    def split(self, packed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return packed[:, : -self.n_classes].reshape(-1, *self.shape), packed[:, -self.n_classes :]

    def encoder(self, images: torch.Tensor) -> torch.Tensor:
        return self.net[: self.code_end](images)

    def decode(self, code: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
        return self.net[self.code_end :](code)

    def forward(self, packed: torch.Tensor) -> torch.Tensor:
        return self.net(self.split(packed)[0])


ARCHITECTURES = {"conditional": CodedAutoencoder, "sequential": SequentialAutoencoder}


def autoencoder(arch: str, shape, latent: int, n_classes: int, width: int) -> nn.Module:
    return ARCHITECTURES[arch](tuple(shape), latent, n_classes, width)


def plain_loss(model: nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Mean squared reconstruction error of a batch of packed rows (non-private training)."""
    recon = model(batch).reshape(len(batch), -1)
    return (recon - batch[:, : -model.n_classes]).square().mean()


def clipped_sum(model: nn.Module, batch: torch.Tensor, clip: float, chunk: int) -> list:
    """Sum over the batch of each example's reconstruction gradient clipped to ``clip``, in
    chunks of ``chunk`` examples (per parameter, in ``model.parameters()`` order)."""
    total = [torch.zeros_like(p) for p in model.parameters()]
    for start in range(0, len(batch), chunk):
        part = batch[start : start + chunk]
        if isinstance(model, SequentialAutoencoder):
            images = model.split(part)[0]
            grads = clipped_gradient_sum(model.net, images, _row_errors(images), clip).grads
        else:
            example = _example_loss(model.n_classes)
            grads = clipped_sum_of_example_gradients(model, example, (part,), clip).grads
        total = [t + g for t, g in zip(total, grads, strict=True)]
    return total


def _row_errors(images: torch.Tensor):
    """Each image's mean squared reconstruction error, for ghost clipping (row i's loss reads
    output row i only)."""
    target = images.reshape(len(images), -1)
    return lambda out: (out.reshape(len(images), -1) - target).square().mean(1)


def _example_loss(n_classes: int):
    """One packed row's reconstruction error, for the per-example gradient helper."""

    def loss(forward, packed_row: torch.Tensor) -> torch.Tensor:
        row = packed_row.unsqueeze(0)
        recon = forward(row).reshape(1, -1)
        return (recon - row[:, :-n_classes]).square().mean()

    return loss
