"""Submodules loaded on first attribute access (PEP 562), so that importing
a package stays cheap yet ``package.submodule`` works right after it."""

from __future__ import annotations

import importlib
from typing import Callable, Iterable


def lazy_submodules(package: str, names: Iterable[str], namespace: dict) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package`` whose submodules ``names``
    load on first use; ``namespace`` is the package's ``globals()``."""
    lazy = tuple(names)

    def __getattr__(name: str):
        if name in lazy:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | set(lazy))

    return __getattr__, __dir__
