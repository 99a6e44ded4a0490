"""A pool's cells on every marginal as sparse matrices, for the weights that match a pool of
generated rows to released marginals (:mod:`dpforge.statistics.reweight`)."""

from __future__ import annotations

import numpy as np
from scipy import sparse

__all__ = ["PoolCells"]


class PoolCells:
    """The pool's cells of every marginal as two sparse 0/1 matrices (scipy CSR): cells x rows
    gives the weighted histograms, rows x cells each row's share of their gradient. A row is
    in exactly one cell of each marginal, so both have marginals x rows entries."""

    def __init__(self, index: np.ndarray, n_cells: int) -> None:
        n_marginals, size = index.shape
        ones = np.ones(n_marginals * size)
        starts = np.arange(size + 1) * n_marginals
        self.to_rows = sparse.csr_matrix((ones, index.T.reshape(-1), starts), (size, n_cells))
        self.to_cells = self.to_rows.T.tocsr()
