"""A bounded cache of compiled programs.

Entry points that users call in a loop (a task's step, the Gymnasium
adapters, :func:`flapjax.evaluate.evaluate`) keep their jitted functions
here, keyed by what fixes the program (task class and configuration, ...),
so a second environment of the same configuration compiles nothing. The
least recently used entry is dropped beyond ``limit``, so a script that
builds many configurations does not accumulate compiled programs.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable
from typing import Any


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
