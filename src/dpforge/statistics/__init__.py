"""Measured statistics that anchor a generator (design.md section 1, "statistics anchoring").

* :mod:`~dpforge.statistics.bins`: public cells for numeric columns (a rule of the bounds);
* :mod:`~dpforge.statistics.cells`: cells placed at DP quantiles of a fine public grid;
* :mod:`~dpforge.statistics.marginals`: which marginals, and their Gaussian measurement with
  the dp-accounting event that goes into the run's ledger;
* :mod:`~dpforge.statistics.projection`: the free post-processing of the noisy counts
  (non-negative, summing to the public total);
* :mod:`~dpforge.statistics.anchor`: the differentiable loss that pulls the generator's soft
  outputs towards the measured marginals, and the anchor training phase;
* :mod:`~dpforge.statistics.selection`: DP choice of the column pairs to measure next;
* :mod:`~dpforge.statistics.rounds`: one run's releases, their budget and their order.
"""
