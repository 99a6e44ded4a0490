"""Privacy accounting for GS-WGAN (Chen et al. 2020): events, ε and calibration.

The mechanism
-------------
The private records are split into K disjoint subsets, one discriminator per subset. Each
generator step picks ONE discriminator uniformly at random and generates a batch of B samples;
for every generated sample the upstream gradient ∂L_G/∂G(z) is clipped to L2 norm C and
Gaussian noise is added to it; the noisy per-sample gradients are back-propagated through G.
Nothing else that depends on private data leaves the discriminators.

Noise, clipping bound and sensitivity
-------------------------------------
Any two clipped vectors differ by at most 2C, so the sensitivity of one sanitized per-sample
gradient is 2C. In this module ``noise_multiplier`` σ is the noise std divided by that
sensitivity, exactly as in the paper's code (``source/main.py``: ``noise = clip_bound *
noise_multiplier * SENSITIVITY * randn`` with ``SENSITIVITY = 2``): each coordinate of each
clipped per-sample gradient gets noise N(0, (2σC)²) (:func:`gswgan_noise_std`), and one
sanitized per-sample gradient is ``GaussianDpEvent(σ)``. An implementation that adds
N(0, σ²C²) (std σC) must record σ/2, never σ. Scaling the per-sample gradient (e.g. by 1/B for
a mean loss) changes nothing as long as clipping and noise act on the same scale.

Why 2C and not C, whatever the neighbouring relation: the selected discriminator is an arbitrary
function of its subset, so adding, removing or replacing one record can move each clipped
per-sample gradient anywhere in the ball of radius C.

The event of one generator step
-------------------------------
All B per-sample gradients of a step come from the SAME selected discriminator, so a record
takes part in all B of them with probability 1/K and in none otherwise. One step is therefore::

    SampledWithoutReplacementDpEvent(K, 1, SelfComposedDpEvent(GaussianDpEvent(σ), B))

i.e. subsampling (one of K subsets) of B Gaussian releases (jointly a Gaussian with noise
multiplier σ/√B). It is analysed with dp-accounting's RDP accountant for the replace-one relation
(Wang, Balle, Kasiviswanathan 2019, Thm. 27), and T steps compose: ``SelfComposedDpEvent(step, T)``.

**The paper's analysis under-counts.** The paper's ``evaluation/privacy_analysis.py`` composes
T·B independently subsampled Gaussians (``compose_subsampled_mechanism(..., prob=1/K,
coeff=iterations * batchsize)``), i.e. it amplifies each of the B per-sample releases by 1/K
separately, although the B releases of a step share one subsampling draw. For K = 1000,
σ = 1.07, B = 32, T = 20,000, δ = 1e-5 that analysis gives ε = 9.24 (reproduced by
:func:`gswgan_paper_epsilon`, for comparison with published numbers only), while the same
assumptions (discriminators arbitrary, bounded only by clipping) admit a neighbouring pair with
ε > 300: let all other discriminators answer exactly like the record's discriminator without
the record, and let the record move each of the B clipped gradients by 2C. That pair is the
Poisson-subsampled Gaussian with q = 1/K and noise multiplier σ/√B under add/remove, whose PLD
ε is 311.6 (optimistic grid) to 329.4 (pessimistic grid). The sound bound of this module for
that setting is ε ≈ 2.97e5 (RDP; the replace-one subsampling bound is loose at σ/√B = 0.19):
with σ = 1.07 and B = 32 the run is not private in any useful sense. The same T, K and B reach
ε = 10 with σ = 2.871 (:func:`noise_for_gswgan`; σ/√B = 0.51), and with B = 1 the paper's
σ = 1.07 gives ε = 1.30.

Neighbouring relations
----------------------
dp-accounting analyses ``SampledWithoutReplacementDpEvent`` only for REPLACE_ONE. The bound
also holds for add/remove-one neighbours, the relation the rest of dpforge uses, PROVIDED each
record's subset is assigned independently of the other records (e.g. an i.i.d. uniform draw per
record): then adding or removing a record changes exactly one subset, and conditioned on the
history a step's output on the two data sets is (1-q)R + qA versus (1-q)R + qB with q = 1/K,
a common part R (the other K-1 discriminators) and A, B, R all mixtures of Gaussians whose means
lie in the same ball of per-sample radius C (diameter 2C) — exactly the structure that the
replace-one subsampling theorem bounds (it needs the base bound between every pair of R's, A's
and B's components, which clipping gives). A Poisson-subsampled add/remove event is NOT
justified here: R need not sit on A, and the three-point configurations (R, A, B pairwise 2C apart)
can have larger Rényi moments than the two-point add/remove pair. Partitions made by cutting a
shuffled list into equal chunks are fine for replace-one but not for add/remove (one added record
shifts every later chunk).

Hence ``neighbouring="add_remove"`` and ``"replace_one"`` give the same ε; both names are
accepted so that callers state which relation they rely on.

Why the subsampling argument holds for the critics as ``dpforge.methods.gswgan`` trains them
---------------------------------------------------------------------------------------------
The argument above needs, at every step t and conditioned on the released history
y_<t = (y_1, ..., y_{t-1}), that the output be the mixture (1/K) Σ_k M_k(D_k; y_<t), where
the pick k is uniform and independent of everything else and component k depends on the data
only through subset D_k. Then adding or removing a record, which changes one subset D_j,
changes one component of the mixture, and the step is the subsampled event above; T steps
compose adaptively because each step's analysis holds for every history.

That is false when a critic trains only in the steps that pick it (the paper's code, and
dpforge before issue 13): critic k's weights then depend on how often, and when, k was picked,
a hidden history that relates to the released gradients differently with and without a record,
so the steps are not the same mixture on both data sets. The bound a reviewer could confirm for
that code, revealing the picks, was ε ≈ 101 where 10 was claimed (K = 1000, σ = 2.871,
T = 20,000, B = 32).

dpforge makes the condition hold by construction (``GSWGANConfig.critic_training``):

* ``"frozen"`` (default): before the first private step every critic trains on its own subset
  D_k (no noise; the generated rows it sees come from the initial generator, which depends on no
  record, or only on statistics already released and charged) and is frozen afterwards. Critic
  k is then a fixed function f_k(D_k, ρ_k) of its subset and its own random draws ρ_k. At step t
  the generator G_t is a function of y_<t (and of randomness independent of the data), the pick
  is a fresh uniform draw, and M_k(D_k; y_<t) = the B clipped, noised per-sample gradients of
  G_t's samples through f_k.
* ``"all"``: after the warm start, every critic takes the same number of steps on its own
  subset at every step, before and independently of the pick. Critic k at step t is then a
  function of D_k, its own draws and G_1, ..., G_t, i.e. of D_k and y_<t: again a component
  that depends on D_k alone given the released history. It costs K times the critic work of
  training only the picked critic.

The critics themselves are never released (they stay in the private checkpoint). As everywhere
in dpforge, random draws are analysed as ideal independent randomness (the generators are
seeded from the OS for releases).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import dp_accounting
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import RdpAccountant

from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import _real, validate_delta
from dpforge.privacy.calibration import noise_for_target, steps_for_target

__all__ = [
    "NEIGHBOURING_RELATIONS",
    "SENSITIVITY_FACTOR",
    "gswgan_epsilon",
    "gswgan_event",
    "gswgan_noise_std",
    "gswgan_paper_epsilon",
    "gswgan_step_event",
    "make_gswgan_accountant",
    "noise_for_gswgan",
    "steps_for_gswgan",
]

SENSITIVITY_FACTOR = 2.0
"""Sensitivity of one clipped per-sample gradient in units of the clipping bound C."""

NEIGHBOURING_RELATIONS = ("add_remove", "replace_one")


# --------------------------------------------------------------------------- validation


def _whole(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise PrivacyError(f"{name}={value!r} must be a whole number >= {minimum}")
    return int(value)


def _check_noise(noise_multiplier: Any) -> float:
    sigma = _real(noise_multiplier, "noise_multiplier")
    if not (sigma >= 0.0 and math.isfinite(sigma)):
        raise PrivacyError(
            f"noise_multiplier={noise_multiplier} must be finite and >= 0 "
            "(noise std / (2C)); use 0 only for a non-private baseline"
        )
    return sigma


def _check_relation(neighbouring: Any) -> str:
    if neighbouring not in NEIGHBOURING_RELATIONS:
        raise PrivacyError(
            f"neighbouring={neighbouring!r} is unknown; use 'add_remove' or 'replace_one'"
        )
    return neighbouring


# --------------------------------------------------------------------------- events


def gswgan_noise_std(noise_multiplier: float, clip_norm: float) -> float:
    """Std of the noise to add to each coordinate of a per-sample gradient clipped to C: 2σC."""
    sigma = _check_noise(noise_multiplier)
    clip = _real(clip_norm, "clip_norm")
    if not (clip > 0.0 and math.isfinite(clip)):
        raise PrivacyError(f"clip_norm={clip_norm} must be finite and > 0")
    return SENSITIVITY_FACTOR * sigma * clip


def gswgan_step_event(
    num_discriminators: int, noise_multiplier: float, *, batch_size: int
) -> dp_accounting.DpEvent:
    """One generator step: one of K discriminators, B sanitized per-sample gradients.

    ``batch_size`` (B, the generated samples per step) is required: the B releases share one
    subsampling draw, and leaving them out would under-count (see the module notes).
    σ = 0 is a :class:`NonPrivateDpEvent`.
    """
    k = _whole(num_discriminators, "num_discriminators", 1)
    sigma = _check_noise(noise_multiplier)
    b = _whole(batch_size, "batch_size", 1)
    if sigma == 0.0:
        return dp_accounting.NonPrivateDpEvent()
    releases = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma), b)
    return dp_accounting.SampledWithoutReplacementDpEvent(k, 1, releases)


def gswgan_event(
    num_discriminators: int, noise_multiplier: float, steps: int, *, batch_size: int
) -> dp_accounting.DpEvent:
    """``steps`` generator steps (:func:`gswgan_step_event` composed); no steps is a NoOp."""
    n = _whole(steps, "steps", 0)
    step = gswgan_step_event(num_discriminators, noise_multiplier, batch_size=batch_size)
    if n == 0:
        return dp_accounting.NoOpDpEvent()
    if isinstance(step, dp_accounting.NonPrivateDpEvent):
        return step
    return dp_accounting.SelfComposedDpEvent(step, n)


def make_gswgan_accountant() -> RdpAccountant:
    """The accountant for GS-WGAN events: RDP, replace-one, dp-accounting's default orders."""
    return RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)


def _epsilon(event: dp_accounting.DpEvent, delta: float) -> float:
    acc = make_gswgan_accountant()
    acc.compose(event)
    eps = float(acc.get_epsilon(delta))
    return math.inf if math.isnan(eps) else max(eps, 0.0)


def gswgan_epsilon(
    num_discriminators: int,
    noise_multiplier: float,
    steps: int,
    delta: float,
    *,
    batch_size: int,
    neighbouring: str = "add_remove",
) -> float:
    """ε of a GS-WGAN run at δ; the same bound for both relations (see the module notes).

    ``"add_remove"`` relies on a partition that assigns each record independently.
    """
    _check_relation(neighbouring)
    d = validate_delta(delta)
    event = gswgan_event(num_discriminators, noise_multiplier, steps, batch_size=batch_size)
    return _epsilon(event, d)


def gswgan_paper_epsilon(
    num_discriminators: int, noise_multiplier: float, steps: int, delta: float, *, batch_size: int
) -> float:
    """ε as the paper's ``privacy_analysis.py`` computes it: T·B independently subsampled steps.

    For reproducing published numbers ONLY: it under-counts (module notes). Never record it.
    """
    k = _whole(num_discriminators, "num_discriminators", 1)
    sigma, n = _check_noise(noise_multiplier), _whole(steps, "steps", 0)
    b, d = _whole(batch_size, "batch_size", 1), validate_delta(delta)
    if n == 0:
        return 0.0
    if sigma == 0.0:
        return math.inf
    per_sample = dp_accounting.SampledWithoutReplacementDpEvent(
        k, 1, dp_accounting.GaussianDpEvent(sigma)
    )
    return _epsilon(dp_accounting.SelfComposedDpEvent(per_sample, n * b), d)


# --------------------------------------------------------------------------- calibration


def noise_for_gswgan(
    epsilon: float, delta: float, num_discriminators: int, steps: int, *, batch_size: int
) -> float:
    """Smallest σ (noise std / 2C, rounded up to 4 decimals) with ε(run) ≤ ``epsilon``.

    Calibrated and verified with the accountant that reports ε (RDP, :func:`gswgan_epsilon`).
    """
    k, b = _whole(num_discriminators, "num_discriminators", 1), _whole(batch_size, "batch_size", 1)
    n = _whole(steps, "steps", 0)
    if n == 0:
        raise PrivacyError("steps=0: there is nothing to calibrate; give steps >= 1")
    return noise_for_target(
        lambda sigma: gswgan_event(k, sigma, n, batch_size=b), epsilon, delta, "rdp"
    )


def steps_for_gswgan(
    epsilon: float,
    delta: float,
    num_discriminators: int,
    noise_multiplier: float,
    *,
    batch_size: int,
    max_steps: int = 10_000_000,
) -> int:
    """Largest number of generator steps (≤ ``max_steps``) with ε(run) ≤ ``epsilon``.

    Exact for the reporting accountant: ε(steps) ≤ epsilon < ε(steps + 1); 0 when even one
    step exceeds the target (always the case for σ = 0).
    """
    k, b = _whole(num_discriminators, "num_discriminators", 1), _whole(batch_size, "batch_size", 1)
    sigma = _check_noise(noise_multiplier)
    return steps_for_target(
        lambda n: gswgan_event(k, sigma, n, batch_size=b),
        epsilon,
        delta,
        "rdp",
        max_steps=_whole(max_steps, "max_steps", 0),
    )
