"""What the data-driven identifications (stand tables, flight logs) write:
PNG figures through matplotlib's Agg backend, and the flat ``name`` /
``name_std`` entries of ``results.json``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path, *, dpi: int) -> Path:
    """Lay out ``fig``, write it to ``path`` at ``dpi`` and close it; returns ``path``."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def with_std(values: Mapping[str, float], std: Mapping[str, float]) -> dict[str, float]:
    """``name: value`` and ``name_std: std`` of every value, in order."""
    out = {}
    for name, value in values.items():
        out[name] = value
        out[f"{name}_std"] = std[name]
    return out
