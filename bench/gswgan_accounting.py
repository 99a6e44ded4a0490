"""GS-WGAN's published accounting against a sound bound for the same run, with dp-accounting.

The paper's MNIST run (Chen et al. 2020, ``source/main.py`` defaults and
``evaluation/privacy_analysis.py``): K = 1000 discriminators, noise multiplier sigma = 1.07 (noise
std 2 sigma C on each clipped per-sample gradient), B = 32 generated samples per step, T = 20,000
generator steps, delta = 1e-5.

* paper: every one of the T*B per-sample releases is amplified by its own 1/K subsampling:
  ``SelfComposed(SampledWithoutReplacement(K, 1, Gaussian(sigma)), T*B)``;
* sound: the B releases of a step come from ONE picked discriminator, so they share one
  subsampling draw: ``SelfComposed(SampledWithoutReplacement(K, 1, SelfComposed(Gaussian(sigma),
  B)), T)`` (dpforge's ``gswgan_event``);
* a neighbouring pair the paper's assumptions allow (discriminators arbitrary functions of
  their subsets, bounded only by clipping): the other discriminators answer like the record's
  discriminator without the record, the record moves each of the B clipped gradients by 2C.
  That pair IS a Poisson-subsampled Gaussian (q = 1/K, noise multiplier sigma / sqrt(B)) under
  add/remove: its PLD epsilon is a lower bound on what any analysis of the mechanism can claim.

All numbers come from dp-accounting's RDP and PLD accountants; nothing is hand-written.

Example::

    PYTHONPATH=$PWD/src python bench/gswgan_accounting.py --out bench/results/gswgan_accounting.md

It prints the table and writes it to ``--out`` (Markdown), the run's figures and provenance to
the JSON next to it (same stem).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import dp_accounting
from dp_accounting.pld import privacy_loss_distribution
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import RdpAccountant

import harness
from dpforge.privacy.gswgan_accounting import gswgan_epsilon, gswgan_paper_epsilon, noise_for_gswgan


def _rdp_epsilon(event: dp_accounting.DpEvent, delta: float) -> float:
    accountant = RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def paper_event(k: int, sigma: float, b: int, t: int) -> dp_accounting.DpEvent:
    per_sample = dp_accounting.SampledWithoutReplacementDpEvent(
        k, 1, dp_accounting.GaussianDpEvent(sigma)
    )
    return dp_accounting.SelfComposedDpEvent(per_sample, t * b)


def sound_event(k: int, sigma: float, b: int, t: int) -> dp_accounting.DpEvent:
    releases = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma), b)
    step = dp_accounting.SampledWithoutReplacementDpEvent(k, 1, releases)
    return dp_accounting.SelfComposedDpEvent(step, t)


def pair_epsilon(k: int, sigma: float, b: int, t: int, delta: float, pessimistic: bool) -> float:
    """PLD epsilon of the neighbouring pair described in the module docstring (add/remove,
    Poisson q = 1/K, noise multiplier sigma / sqrt(B), T steps). The optimistic discretisation
    is a lower bound and the pessimistic one an upper bound of the pair's true epsilon."""
    pld = privacy_loss_distribution.from_gaussian_mechanism(
        sigma / math.sqrt(b),
        pessimistic_estimate=pessimistic,
        use_connect_dots=pessimistic,  # connect-the-dots is pessimistic only
        value_discretization_interval=1e-3,
        sampling_prob=1.0 / k,
    ).self_compose(t)
    return pld.get_epsilon_for_delta(delta)


TITLE = "GS-WGAN: the paper's accounting vs a sound bound (`bench/gswgan_accounting.py`)"


def figures(k: int, sigma: float, b: int, t: int, delta: float) -> dict[str, float]:
    """The epsilons of the table: paper, sound, the pair's PLD range, and sigma for epsilon 10."""
    paper = _rdp_epsilon(paper_event(k, sigma, b, t), delta)
    sound = _rdp_epsilon(sound_event(k, sigma, b, t), delta)
    # The same figures through dpforge's accounting module (must agree exactly).
    assert_equal(paper, gswgan_paper_epsilon(k, sigma, t, delta, batch_size=b), "paper")
    assert_equal(sound, gswgan_epsilon(k, sigma, t, delta, batch_size=b), "sound")
    return {
        "paper": paper,
        "sound": sound,
        "pair_optimistic": pair_epsilon(k, sigma, b, t, delta, pessimistic=False),
        "pair_pessimistic": pair_epsilon(k, sigma, b, t, delta, pessimistic=True),
        "sigma_for_epsilon_10": noise_for_gswgan(10.0, delta, k, t, batch_size=b),
    }


def markdown(record: dict) -> list[str]:
    """The Markdown body (below the harness's title and provenance lines)."""
    k, sigma, b, t, delta = (record["run"][n] for n in ("K", "sigma", "B", "T", "delta"))
    eps, sigma_10 = record["epsilon"], record["epsilon"]["sigma_for_epsilon_10"]
    return [
        f"Run: K = {k} discriminators, sigma = {sigma} (noise std 2 sigma C), B = {b} samples "
        f"per step, T = {t:,} steps, delta = {delta:g}; dp-accounting "
        f"{record['versions']['dp-accounting']}.",
        "",
        "| analysis | DP event | epsilon |",
        "|---|---|---|",
        f"| paper (`privacy_analysis.py`) | T*B = {t * b:,} independently subsampled Gaussians "
        f"(RDP, replace-one) | {eps['paper']:.2f} |",
        f"| sound (dpforge) | T = {t:,} subsampled steps of B composed Gaussians (RDP, "
        f"replace-one) | {eps['sound']:,.0f} |",
        f"| one admissible neighbouring pair | Poisson q = 1/K, sigma/sqrt(B) = "
        f"{sigma / math.sqrt(b):.3f}, T steps (PLD, add/remove; optimistic .. pessimistic "
        f"grid) | {eps['pair_optimistic']:.1f} .. {eps['pair_pessimistic']:.1f} |",
        "",
        f"The last row is a lower bound for ANY analysis of this mechanism under the paper's "
        f"assumptions: the run is not {eps['paper']:.1f}-DP. The same K, B and T reach epsilon "
        f"= 10 under the sound bound with sigma = {sigma_10} (noise std {2 * sigma_10:.3f} C).",
    ]


def assert_equal(a: float, b: float, what: str) -> None:
    if not math.isclose(a, b, rel_tol=1e-9):
        raise RuntimeError(f"{what}: dp-accounting gives {a}, dpforge {b}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-discriminators", type=int, default=1000)
    parser.add_argument("--noise-multiplier", type=float, default=1.07)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument(
        "--out", type=Path, default=None, help="results .md or .json (both are written)"
    )
    args = parser.parse_args(argv)
    k, sigma, b, t = args.num_discriminators, args.noise_multiplier, args.batch_size, args.steps
    record = {
        **harness.provenance(__file__, argv),
        "run": {"K": k, "sigma": sigma, "B": b, "T": t, "delta": args.delta},
        "epsilon": figures(k, sigma, b, t, args.delta),
    }
    print("\n".join([*harness.header(record, TITLE), *markdown(record)]))
    if args.out is not None:
        harness.write_results(args.out.with_suffix(".json"), record, TITLE, markdown(record))


if __name__ == "__main__":
    main()
