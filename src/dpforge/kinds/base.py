"""What every data kind plugs into the pipeline: its anchoring (what it measures, how its
generator is fitted to the measurements).

An :class:`Anchoring` is asked, in the pipeline's order:

1. ``method_config``: the generator the anchoring fits (widths, network family);
2. ``measure(run, ...)``: plan its releases into the ledger, then run them on the records
   (the measure stage, the only place besides refinement that reads records);
3. ``encoder``: the encoder the generator's outputs are decoded with;
4. ``measure_adaptive`` (measure stage): releases chosen from earlier noisy releases
   (tables: the pair selection, scored against the consistent estimate of round 1, and its
   second round);
5. ``fit``: the kind's generator fitted to all measurements (post-processing, free);
6. ``before_refining``: only when the plan has discriminator steps, with the refiner that was
   handed the fitted generator.

:class:`NoAnchoring` is the pipeline without measurements: the discriminator alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpforge.privacy.ledger import PrivacyLedger


@dataclass
class Measured:
    """An anchoring's releases, as a checkpoint stores them; nothing measured by default."""

    def to_dict(self) -> dict[str, Any]:
        return {}

    @property
    def fitted(self) -> bool:
        """Whether the generator is fitted to these measurements (else it starts untrained)."""
        return False


def chose(config: Any, name: str) -> bool:
    """Whether ``config``'s field ``name`` differs from its class default (the caller set it)."""
    return getattr(config, name) != getattr(type(config)(), name)


class Anchoring:
    """The pipeline's hooks for one kind and anchor configuration (see the module notes)."""

    config: Any = None
    label = ""  # what a budget file calls the anchoring (``budget show``)
    alone_note = ""  # why discriminator options are refused when the measurements are all

    @property
    def alone(self) -> bool:
        """Whether the measurements are the whole run (no discriminator steps)."""
        return self.config is not None and self.config.share >= 1.0

    def method_config(self, config: Any, default_options: bool, schema: Any) -> Any:
        return config

    def measure(
        self,
        run: Any,
        schema: Any,
        records: Any,
        ledger: PrivacyLedger,
        rng: np.random.Generator,
        n_public: int,
        prior: np.ndarray | None = None,
    ) -> Measured:
        """Plan this anchoring's releases into ``ledger``, then run them on ``records``
        (``n_public``: the record count that sizes the releases; ``prior``: the label's class
        shares as released or declared, None without a label)."""
        return Measured()

    def measured_from_dict(self, d: dict[str, Any]) -> Measured:
        return Measured()

    def encoder(self, kind: Any, schema: Any, measured: Measured) -> Any:
        return kind.encoder(schema)

    def measure_adaptive(self, run: Any, setup: Any, records: Any) -> None:
        """Releases chosen from the earlier ones (none by default); ``records()`` reads the
        records through the engine."""

    def fit(self, run: Any, setup: Any, model: Any, resumed: bool) -> None:
        """Fit the kind's generator ``model`` to ``setup``'s measurements (post-processing)."""

    def before_refining(self, run: Any, refiner: Any) -> None:
        """What the anchoring does with a refiner before its private steps (nothing here)."""

    def sample_release(self, setup: Any) -> Any:
        """What sampling may read of the releases (stored in the model folder), or None."""
        return None


class NoAnchoring(Anchoring):
    """No measurements: a private discriminator trains the generator alone."""
