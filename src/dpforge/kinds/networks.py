"""Which network family (:mod:`dpforge.nets.families`) each kind's records take: a table's
encoded rows the row networks, an image's and a series' arrays their own.

A layout names its kind (:class:`~dpforge.data.encoder.Layout`); the methods, the kind's
generator and a model being loaded ask here for its family and never branch on the kind.
"""

from __future__ import annotations

from dpforge.data.encoder import Layout
from dpforge.errors import PrivacyError
from dpforge.nets.families import IMAGE_NETWORKS, SERIES_NETWORKS, TABLE_NETWORKS, Family

__all__ = ["family_of"]

_FAMILIES = {f.data_type: f for f in (TABLE_NETWORKS, IMAGE_NETWORKS, SERIES_NETWORKS)}


def family_of(layout: Layout) -> Family:
    """The network family of ``layout``'s kind ("table", "image" or "timeseries")."""
    if layout.kind not in _FAMILIES:
        raise PrivacyError(f"unknown data type '{layout.kind}'; use one of {list(_FAMILIES)}")
    return _FAMILIES[layout.kind]
