"""What the runs write: ``results.json`` through :func:`write_record`
(which adds ``files``, ``seconds`` and ``versions`` to a record such as
:meth:`flapjax.identify.FitReport.to_json`) and PNG figures through
matplotlib's Agg backend (:func:`pyplot`, :func:`save_figure`). The keys:
docs/data_formats.md, "What every study writes".
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flapjax import safe_io
from flapjax.files import to_jsonable, write_json

__all__ = ["pyplot", "save_figure", "write_record"]


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path, *, dpi: int) -> Path:
    """Lay out ``fig``, write it to ``path`` at ``dpi`` and close it; returns
    ``path``. Written atomically, never through a symbolic link
    (:func:`flapjax.safe_io.save_figure`)."""
    import matplotlib.pyplot as plt

    try:
        fig.tight_layout()
        safe_io.save_figure(fig, path, dpi=dpi)
    finally:
        plt.close(fig)
    return Path(path)


def write_record(out: Path, record: dict[str, Any], files: Sequence[str | Path], started: float) -> str:
    """Complete ``record`` with ``files`` (names of the other files written
    into ``out``), ``seconds`` (since the ``time.perf_counter()`` value
    ``started``) and ``versions``, write it to ``out/results.json`` (and
    replace ``record``'s content by the file's, plain JSON types) and return
    the line that says what was written."""
    from flapjax.identify.results import versions

    names = [Path(f).name for f in files]
    record["files"] = names
    record["seconds"] = time.perf_counter() - started
    record["versions"] = versions()
    jsonable = to_jsonable(record)
    write_json(Path(out) / "results.json", jsonable)
    record.clear()
    record.update(jsonable)  # the caller holds what the file holds
    return f"written: {Path(out) / 'results.json'}" + "".join(f", {n}" for n in names)
