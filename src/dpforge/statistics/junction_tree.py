"""Exact inference in a graphical model of discrete columns: the junction tree that the
consistent estimate (:mod:`dpforge.statistics.estimate`) runs on.

The model is a Markov random field with one log-potential per clique of a junction tree
built over the measured column sets: their graph is triangulated by greedy elimination (the
column whose elimination adds the smallest clique first), the maximal cliques of that
elimination are joined by a maximum spanning tree on their shared columns, and sum-product
message passing in log space gives every clique's marginal. A marginal of columns that share no
clique is carried along the tree's path between them (``P(C) / P(S)`` clique by clique).
Everything here is post-processing of public or noisy quantities: no record is read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

__all__ = ["JunctionTree", "aligned", "summed_to"]

Attrs = tuple[str, ...]


def aligned(values: np.ndarray, attrs: Attrs, target: Attrs) -> np.ndarray:
    """``values`` over ``attrs`` transposed and shaped to broadcast over ``target`` (a
    superset of ``attrs``)."""
    present = [a for a in target if a in attrs]
    moved = np.transpose(values, [attrs.index(a) for a in present])
    shape = [values.shape[attrs.index(a)] if a in attrs else 1 for a in target]
    return moved.reshape(shape)


def summed_to(values: np.ndarray, attrs: Attrs, keep: Attrs, log: bool = False) -> np.ndarray:
    """``values`` over ``attrs`` summed (``log``: log-sum-exp) down to ``keep``, in its order."""
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    if log and axes:
        top = values.max(axis=axes, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        values = np.log(np.exp(values - top).sum(axis=axes)) + top.squeeze(axis=axes)
    elif axes:
        values = values.sum(axis=axes)
    rest = [a for a in attrs if a in keep]
    return np.transpose(values, [rest.index(a) for a in keep])


def _elimination_cliques(edges: Mapping[str, set[str]], domain: Mapping[str, int]) -> list:
    """The maximal cliques of the graph triangulated by greedy elimination (smallest clique
    of a column and its remaining neighbours first; ties by name, so the order is fixed)."""
    graph = {a: set(n) for a, n in edges.items()}
    cliques: list[frozenset[str]] = []
    while graph:

        def cost(a: str) -> tuple[int, str]:
            return math.prod(domain[b] for b in graph[a] | {a}), a

        a = min(graph, key=cost)
        clique = frozenset(graph[a] | {a})
        for b, c in combinations(graph[a], 2):
            graph[b].add(c)
            graph[c].add(b)
        for b in graph.pop(a):
            graph[b].discard(a)
        if not any(clique <= other for other in cliques):
            cliques = [c for c in cliques if not c <= clique] + [clique]
    return cliques


def _spanning_tree(cliques: Sequence[frozenset[str]]) -> list[tuple[int, int]]:
    """A maximum spanning tree of the cliques weighted by their shared columns (Kruskal; one
    tree even over disconnected columns: their separator is empty)."""
    pairs = sorted(
        combinations(range(len(cliques)), 2),
        key=lambda p: (-len(cliques[p[0]] & cliques[p[1]]), p),
    )
    root = list(range(len(cliques)))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    tree = []
    for i, j in pairs:
        if find(i) != find(j):
            root[find(i)] = find(j)
            tree.append((i, j))
    return tree


@dataclass(frozen=True)
class JunctionTree:
    """The cliques (each a tuple of columns in a fixed order), the tree's edges and the
    message order (cliques from the root, each with its parent)."""

    domain: Mapping[str, int]
    cliques: tuple[Attrs, ...]
    neighbours: tuple[tuple[int, ...], ...]
    order: tuple[int, ...]
    parent: tuple[int, ...]  # -1 for the root

    @classmethod
    def build(cls, sets: Sequence[Sequence[str]], domain: Mapping[str, int]) -> JunctionTree:
        """The junction tree of the columns in ``domain`` with every set of ``sets`` inside
        one clique."""
        edges: dict[str, set[str]] = {a: set() for a in domain}
        for columns in sets:
            for a, b in combinations(columns, 2):
                edges[a].add(b)
                edges[b].add(a)
        order_of = {a: i for i, a in enumerate(domain)}
        found = _elimination_cliques(edges, domain)
        cliques = tuple(tuple(sorted(c, key=order_of.__getitem__)) for c in found)
        tree = _spanning_tree(found)
        neighbours = [[] for _ in cliques]
        for i, j in tree:
            neighbours[i].append(j)
            neighbours[j].append(i)
        order, parent = [0], [-1] * len(cliques)
        for node in order:
            for n in neighbours[node]:
                if n != parent[node] and n != 0 and parent[n] == -1:
                    parent[n] = node
                    order.append(n)
        return cls(domain, cliques, tuple(map(tuple, neighbours)), tuple(order), tuple(parent))

    def size(self) -> int:
        """The number of cells over all cliques (what one pass of inference touches)."""
        return sum(math.prod(self.shape(c)) for c in self.cliques)

    def shape(self, attrs: Attrs) -> tuple[int, ...]:
        return tuple(self.domain[a] for a in attrs)

    def clique_of(self, columns: Sequence[str]) -> int | None:
        """The first clique holding every one of ``columns``; None if none does."""
        return next((i for i, c in enumerate(self.cliques) if set(columns) <= set(c)), None)

    def _separator(self, i: int, j: int) -> Attrs:
        return tuple(a for a in self.cliques[i] if a in self.cliques[j])

    def _message(self, theta, messages, i: int, j: int) -> np.ndarray:
        """The log-message from clique ``i`` to its neighbour ``j``."""
        attrs = self.cliques[i]
        total = theta[i]
        for n in self.neighbours[i]:
            if n != j:
                total = total + aligned(messages[n, i], self._separator(n, i), attrs)
        return summed_to(total, attrs, self._separator(i, j), log=True)

    def marginals(self, theta: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Every clique's probability table under the log-potentials ``theta`` (one array per
        clique, over its columns in order): sum-product, leaves to root and back."""
        messages: dict[tuple[int, int], np.ndarray] = {}
        for node in reversed(self.order[1:]):
            messages[node, self.parent[node]] = self._message(
                theta, messages, node, self.parent[node]
            )
        for node in self.order[1:]:
            messages[self.parent[node], node] = self._message(
                theta, messages, self.parent[node], node
            )
        beliefs = []
        for i, attrs in enumerate(self.cliques):
            belief = theta[i] + sum(
                (aligned(messages[n, i], self._separator(n, i), attrs) for n in self.neighbours[i]),
                np.zeros(()),
            )
            belief = np.exp(belief - belief.max())
            beliefs.append(belief / belief.sum())
        return beliefs

    def _path(self, start: int, stop: int) -> list[int]:
        """The cliques on the tree's path from ``start`` to ``stop``."""
        up = [start]
        while self.parent[up[-1]] != -1:
            up.append(self.parent[up[-1]])
        down = [stop]
        while down[-1] not in up:
            down.append(self.parent[down[-1]])
        return up[: up.index(down[-1])] + down[::-1]

    def marginal(self, beliefs: Sequence[np.ndarray], columns: Attrs) -> np.ndarray:
        """The model's probability table of ``columns`` (in that order) from calibrated clique
        ``beliefs``: projected from one clique that holds them, or carried along the path
        between the cliques of the first and the last column."""
        inside = self.clique_of(columns)
        if inside is not None:
            return summed_to(beliefs[inside], self.cliques[inside], columns)
        path = self._path(self.clique_of(columns[:1]), self.clique_of(columns[-1:]))
        missing = set(columns) - {a for i in path for a in self.cliques[i]}
        if missing:
            raise ValueError(f"no tree path carries {sorted(missing)} with {columns}")
        attrs, table = self.cliques[path[0]], beliefs[path[0]]
        for before, node in zip(path, path[1:], strict=False):
            separator = self._separator(before, node)
            keep = tuple(a for a in attrs if a in columns or a in separator)
            table, attrs = summed_to(table, attrs, keep), keep
            clique = self.cliques[node]
            given = summed_to(beliefs[node], clique, separator)
            conditional = np.divide(
                beliefs[node], aligned(given, separator, clique),
                out=np.zeros_like(beliefs[node]), where=aligned(given, separator, clique) > 0,
            )  # fmt: skip
            joined = attrs + tuple(a for a in clique if a not in attrs)
            table = aligned(table, attrs, joined) * aligned(conditional, clique, joined)
            attrs = joined
        return summed_to(table, attrs, columns)
