"""A fit that measures and releases the marginals but trains nothing (steps 0), for tests of
what a post-processing option of ``AnchorConfig`` does to the release."""

from __future__ import annotations

import dpforge
from dpforge.statistics.anchor import AnchorConfig

NO_TRAINING = AnchorConfig(steps=0, batch_size=64)


def released_fit(cancer, anchor: AnchorConfig = NO_TRAINING, epsilon: float = 1.0):
    """The fitted synthesizer of the cancer records (frame, schema) at ``epsilon``, seed 0."""
    frame, schema = cancer
    synth = dpforge.Synthesizer(
        schema, epsilon=epsilon, delta=1e-5, seed=0, progress=False, anchor=anchor
    )
    return synth.fit(frame)


__all__ = ["NO_TRAINING", "released_fit"]
