"""A small labelled table of three categorical columns, for the tests of the anchoring phases'
rules (steps and batch that follow the released N)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.schema.table import Column, Schema


def labelled_frame(n: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    """``n`` rows: a depends on the label y, b and c do not."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "a": np.where(rng.random(n) < 0.3 + 0.4 * label, "p", "q"),
            "b": rng.choice(["x", "y", "z"], n),
            "c": rng.choice(["u", "v"], n),
            "y": np.where(label == 1, "yes", "no"),
        }
    )
    cats = {"a": ("p", "q"), "b": ("x", "y", "z"), "c": ("u", "v"), "y": ("no", "yes")}
    schema = Schema(tuple(Column(k, "categorical", categories=v) for k, v in cats.items()), "y")
    return frame, schema
