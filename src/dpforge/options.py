"""Every run option checked in one place, for the command line and the Python API alike.

A bad option must give a one-line error before any private record is read and before any
work starts: not a traceback from deep inside the accountant, not a run that silently trains
the default length, and not a run or a calculation that goes on for longer than anyone waits.
The bounds below are the ones whose breach made dpforge hang or run out of memory:

- the noise multiplier is at least ``MIN_NOISE_MULTIPLIER``: below it the privacy-loss
  distribution the accountant builds grows without bound (sigma = 1e-9 ran out of memory),
  and the epsilon it certifies is far beyond any meaningful guarantee anyway;
- epsilon is at most ``MAX_EPSILON`` (``math.inf`` asks for the non-private baseline); below
  ``SENSIBLE_EPSILON`` a warning says the samples will be noise (a delta typed as epsilon?);
- delta is at least ``MIN_DELTA``: below it the PLD accountant's truncated tails exceed delta
  and it can only certify epsilon = inf;
- a run plans at most ``MAX_STEPS`` private steps (``epochs = 1e7`` or a huge noise multiplier
  planned hundreds of millions);
- seeds are whole numbers in [0, 2**63), what the random generators take;
- the device is one torch can use on this machine (``cpu``, ``cuda``, ``cuda:N``, ``mps``):
  asking for an accelerator that is not there fails here, not at the first private step;
- a refiner is asked for by name (``method=``, ``--refine``): with the default anchoring it gets
  ``1 - REFINE_SHARE`` of the budget, and settings of a refiner without one are an error.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

from dpforge.errors import DpforgeError, PrivacyError

if TYPE_CHECKING:
    import torch

MAX_STEPS = 1_000_000
MAX_GP_WEIGHT = 1e4
MAX_EPSILON = 100.0
SENSIBLE_EPSILON = 0.01
MIN_DELTA = 1e-12
MIN_NOISE_MULTIPLIER = 0.3
MAX_NOISE_MULTIPLIER = 2.0**20
SEED_LIMIT = 2**63
REFINE_SHARE = 0.7  # the anchor's share when a refiner is named (docs/options-file.md)
# Method options that shape the generator, which a run without refinement trains too; every
# other option (batch size, clipping, discriminator, optimizers) configures the refiner.
GENERATOR_FIELDS = frozenset(
    {"latent_dim", "generator_hidden", "generator_net", "generator_channels", "gumbel_tau"}
)


def check_seed(seed: Any, name: str = "seed") -> int | None:
    """``seed`` as an int in [0, 2**63), or None (seeded from the OS)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise PrivacyError(f"{name}={seed!r} must be a whole number (or None for a release)")
    if not 0 <= seed < SEED_LIMIT:
        raise PrivacyError(f"{name}={seed} must be between 0 and 2**63 - 1")
    return int(seed)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PrivacyError(f"{name}={value!r} is not a number")
    return float(value)


def check_budget(epsilon: Any, delta: Any, metadata_share: Any) -> None:
    """epsilon in (0, MAX_EPSILON] or inf; delta in [MIN_DELTA, 1); metadata share in [0, 1)."""
    eps = _number(epsilon, "epsilon")
    if not eps > 0:
        raise PrivacyError(f"epsilon must be > 0 (inf for no privacy), got {epsilon}")
    check_epsilon_cap(eps, "epsilon")
    warn_tiny_epsilon(eps, "epsilon")
    check_delta(delta)
    share = _number(metadata_share, "metadata_share")
    if not 0 <= share < 1:
        raise PrivacyError(f"metadata_share must be in [0, 1), got {metadata_share}")


def check_epsilon_cap(eps: float, name: str) -> None:
    """Refuse a finite epsilon above MAX_EPSILON, where the guarantee protects no one."""
    if math.isfinite(eps) and eps > MAX_EPSILON:
        raise PrivacyError(
            f"{name}={eps:g} is above {MAX_EPSILON:g}, where the guarantee protects no one; "
            "choose epsilon between 0.1 and 10, or inf for a non-private baseline"
        )


def warn_tiny_epsilon(eps: float, name: str) -> None:
    """Warn (not refuse) below SENSIBLE_EPSILON: accepted, but the samples will be noise."""
    if 0 < eps < SENSIBLE_EPSILON:
        warnings.warn(
            f"{name}={eps:g} is far below the usual 0.1 to 10: the noise will drown every "
            "signal and the samples will be noise. Did you mean it as delta, or epsilon=1?",
            UserWarning,
            stacklevel=3,
        )


def check_delta(delta: Any, name: str = "delta") -> float:
    """delta in [MIN_DELTA, 1): below MIN_DELTA the PLD accountant can only certify inf."""
    d = _number(delta, name)
    if not 0 < d < 1:
        raise PrivacyError(f"{name}={d} must be in (0, 1); choose delta well below 1/N")
    if d < MIN_DELTA:
        raise PrivacyError(
            f"{name}={d:g} is below {MIN_DELTA:g}, the smallest delta the PLD accountant "
            f"resolves (it would certify epsilon = inf); choose delta of at least {MIN_DELTA:g}"
        )
    return d


def check_noise_multiplier(sigma: Any, name: str = "noise_multiplier") -> float | None:
    """None, 0 (non-private) or a sigma in [MIN_NOISE_MULTIPLIER, MAX_NOISE_MULTIPLIER]."""
    if sigma is None:
        return None
    value = _number(sigma, name)
    if value == 0:
        return 0.0
    if not MIN_NOISE_MULTIPLIER <= value <= MAX_NOISE_MULTIPLIER:
        raise PrivacyError(
            f"{name}={sigma!r} must be between {MIN_NOISE_MULTIPLIER} and {MAX_NOISE_MULTIPLIER:g}"
            " (below, the guarantee is void and accounting it runs out of memory)"
        )
    return value


def check_epochs(epochs: Any) -> float | None:
    """None (the default length) or a finite number of epochs > 0."""
    if epochs is None:
        return None
    value = _number(epochs, "epochs")
    if not (value > 0 and math.isfinite(value)):
        raise PrivacyError(f"epochs must be a finite number > 0, got {epochs}")
    return value


def check_steps(steps: int, how: str) -> int:
    """Refuse a plan of more than MAX_STEPS private steps; ``how`` says what set it."""
    if steps > MAX_STEPS:
        raise PrivacyError(
            f"{how} plans more than {MAX_STEPS:,} private steps, longer than any run should "
            "take: give fewer epochs, a larger batch size or a smaller noise multiplier"
        )
    return steps


def check_method_config(config: Any, epsilon: float) -> None:
    """The method's own checks, then: every number finite (C may be inf only without privacy),
    learning rates > 0."""
    config.validate()
    if getattr(config, "bayesian_accounting", False) and not math.isfinite(epsilon):
        raise PrivacyError(
            "the Bayesian bound needs DP-SGD noise, and epsilon = inf trains without it: give a "
            "finite epsilon, or leave out bayesian_accounting"
        )
    for f in fields(config):
        value = getattr(config, f.name)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            continue
        if f.name == "clip_norm" and math.isinf(value) and not math.isfinite(epsilon):
            continue
        if not math.isfinite(value):
            raise PrivacyError(f"{f.name} must be a finite number, got {value}")
        if "lr" in f.name.split("_") and not value > 0:
            raise PrivacyError(f"{f.name} must be > 0, got {value}")
    gp_weight = getattr(config, "gp_weight", None)
    if gp_weight is not None and gp_weight > MAX_GP_WEIGHT:
        raise PrivacyError(
            f"gp_weight {gp_weight:g} is above {MAX_GP_WEIGHT:g}: the gradient penalty would "
            "drown the critic's loss (the usual weight is 10)"
        )
    microbatches = getattr(config, "microbatches", None)
    if microbatches is not None and microbatches > config.batch_size:
        raise PrivacyError(
            f"microbatches {microbatches} is larger than the batch size {config.batch_size}: "
            "choose at most the batch size (a divisor of it, e.g. batch size / 4)"
        )


def refined_anchor(anchor: Any, auto: bool, method: str | None) -> Any:
    """The anchoring of a run whose refiner is named (``method``; None: not named). The
    default anchoring (``auto``) then leaves the refiner ``1 - REFINE_SHARE`` of the budget;
    an anchor the caller set to share 1 leaves it nothing: an error that names both."""
    if method is None or anchor is None or anchor.share < 1:
        return anchor
    if auto:
        return replace(anchor, share=REFINE_SHARE)
    raise PrivacyError(
        f"method '{method}' names a refiner, but the anchor's share is 1 and leaves it no "
        f"budget: give the anchor a share below 1 (e.g. share={REFINE_SHARE}; 0 for the refiner "
        "alone), or leave out method"
    )


def check_method_options_used(alone: bool, options: Any) -> None:
    """Method options that configure the refiner (all but ``GENERATOR_FIELDS``), given to a
    run without one: an error that names them and says how to ask for a refiner."""
    if not alone or options is None:
        return
    defaults = type(options)()
    changed = sorted(
        f.name
        for f in fields(options)
        if f.name not in GENERATOR_FIELDS and getattr(options, f.name) != getattr(defaults, f.name)
    )
    if changed:
        raise PrivacyError(
            f"method_options set {', '.join(changed)}, which configure a refiner, but this run "
            "has none (the anchor takes the whole budget): name one with method= (dpcgan, "
            "dpwgan, gswgan), or leave these options out"
        )


def check_against_size(config: Any, n_records: int, what: str = "records") -> None:
    """Options that must fit the number of records N (or persons), as released under DP (it
    sets q = B/N; at a small epsilon the released count is coarse, which the message says)."""
    if config.batch_size > n_records:
        raise PrivacyError(
            f"batch size {config.batch_size} is larger than the {n_records} {what} counted "
            "under DP (the count is noisy at a small epsilon): choose a smaller batch_size "
            "or a larger epsilon"
        )
    critics = getattr(config, "num_discriminators", None)
    if critics is not None and critics > n_records:
        raise PrivacyError(
            f"num_discriminators {critics} is more than the {n_records} records counted under "
            "DP (each critic needs its own records): choose fewer, e.g. N // 64"
        )


def check_device(device: Any, name: str = "device") -> torch.device:
    """The torch device ``device`` names, refused when torch cannot use it here."""
    import torch  # here, not at the top: the command line's checks and --help stay light

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise DpforgeError(
            f"{name} {device!r} is not a torch device: give cpu, cuda, cuda:N or mps"
        ) from exc
    if parsed.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (parsed.index is not None and parsed.index >= count):
            raise DpforgeError(
                f"{name} {device!r}: torch sees {count} CUDA device(s) on this machine; "
                "use cpu, or install a CUDA build of torch"
            )
    elif parsed.type == "mps" and not torch.backends.mps.is_available():
        raise DpforgeError(f"{name} {device!r}: MPS is not available here; use cpu")
    elif parsed.type not in ("cpu", "cuda", "mps"):
        raise DpforgeError(f"{name} {device!r}: dpforge runs on cpu, cuda or mps only")
    return parsed
