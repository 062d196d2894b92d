"""A bounded cache of compiled programs.

Entry points that users call in a loop (a task's step, the Gymnasium
adapters, :func:`flapjax.evaluate.evaluate`, the fixed-base sweep) keep their
jitted functions here, keyed by what fixes the program (task class and
configuration, a robot's values: :func:`tree_digest`, :func:`tree_key`, ...),
so a second environment of the same configuration compiles nothing. The
least recently used entry is dropped beyond ``limit``, so a script that
builds many configurations does not accumulate compiled programs.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable, Hashable
from typing import Any

import jax
import numpy as np


class ProgramCache:
    """Least-recently-used map of ``key -> program`` (any object built by a
    function), at most ``limit`` entries."""

    def __init__(self, limit: int = 16):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit: expected a positive integer, got {limit!r}")
        self.limit = limit
        self._entries: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()

    def get(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """The entry of ``key``, built by ``build()`` on a miss (then the
        least recently used entries beyond ``limit`` are dropped)."""
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        program = self._entries[key] = build()
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)
        return program

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def clear(self) -> None:
        self._entries.clear()


def tree_digest(tree: Any) -> str:
    """Hex digest of every leaf of ``tree`` (shape, dtype and values of the
    arrays, ``repr`` of anything else): part of a cache key when the same
    configuration can load different numbers (a profile file edited between
    two environments)."""
    h = hashlib.sha1(str(jax.tree.structure(tree)).encode())
    for leaf in jax.tree.leaves(tree):
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            a = np.asarray(leaf)
            h.update(f"{a.shape}{a.dtype}".encode())
            h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(repr(leaf).encode())
    return h.hexdigest()


def tree_key(tree: Any) -> tuple[Any, str]:
    """A hashable key, equal for trees of equal structure and equal leaves:
    the tree structure itself (compared, not printed: static fields may hold
    objects such as a ``mujoco.MjModel`` whose ``repr`` is an address) and
    :func:`tree_digest` of the leaves. For a robot whose arrays the program
    folds in as constants."""
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, tree_digest(leaves)
