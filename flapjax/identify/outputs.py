"""What the identifications from measured data write and print, in one form
for every study: the head of ``results.json`` (:func:`data_record`; then
:func:`write_record` adds ``files``, ``seconds`` and ``versions``), the
printed table of values (:func:`parameter_table`, :func:`held_out_lines`)
and PNG figures through matplotlib's Agg backend (:func:`pyplot`,
:func:`save_figure`). The keys: docs/data_formats.md, "What every study
writes".
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flapjax import safe_io
from flapjax.files import to_jsonable, write_json

__all__ = ["data_record", "held_out_lines", "parameter_table", "pyplot", "save_figure", "with_std", "write_record"]


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


def with_std(values: Mapping[str, float], std: Mapping[str, float | None]) -> dict[str, float | None]:
    """``name: value`` and ``name_std: std`` of every value, in order (a
    value missing from ``std`` gets ``None``: held, not fitted)."""
    out: dict[str, float | None] = {}
    for name, value in values.items():
        out[name] = value
        out[f"{name}_std"] = std.get(name)
    return out


def data_record(study: str, source: str | Path, values: Mapping[str, float],
                std: Mapping[str, float | None], units: Mapping[str, str]) -> dict[str, Any]:
    """The common head of a data study's ``results.json``: ``study``,
    ``source``, ``name`` / ``name_std`` of every value and ``units``.

    Raises ``KeyError`` naming a value without a unit (every reported value
    carries one; ``-`` for a dimensionless value)."""
    missing = [n for n in values if n not in units]
    if missing:
        raise KeyError(f"no unit for {', '.join(missing)}")
    return {"study": study, "source": str(source), **with_std(values, std),
            "units": {n: units[n] for n in values}}


def parameter_table(values: Mapping[str, float], std: Mapping[str, float | None], units: Mapping[str, str],
                    *, indent: str = "", no_std: str = "held") -> str:
    """One line per value: ``name  value  std  unit``, with a header (a value
    without a standard deviation shows ``no_std``)."""
    width = max([len("parameter"), *map(len, values)]) + 2
    lines = [f"{indent}{'parameter':<{width}}{'value':>13}{'std':>11}  unit"]
    for name, value in values.items():
        s = std.get(name)
        s_text = no_std if s is None else f"{s:.2e}"
        lines.append(f"{indent}{name:<{width}}{value:>13.5e}{s_text:>11}  {units.get(name, '')}")
    return "\n".join(lines)


def held_out_lines(validation: Mapping[str, Mapping[str, float]], units: Mapping[str, str]) -> str:
    """One line per channel of a held-out prediction error: ``rms`` [SI],
    ``rms_over_sigma`` (over the fit's residual standard deviation: 1 is
    the noise level) and ``rms_over_measured`` (over the channel's measured
    RMS), after a header line that says what sigma is; ``''`` when none."""
    if not validation:
        return ""
    width = max([0, *map(len, validation)])
    header = "held-out prediction error (sigma: the fit's residual standard deviation, 1 sigma = the noise level)"
    return "\n".join([header] + [
        f"held-out {ch:<{width}}  rms {v['rms']:.3e} {units.get(ch, '')} ({v['rms_over_sigma']:.2f} sigma, "
        f"{100 * v['rms_over_measured']:.2f} % of the measured RMS)"
        for ch, v in validation.items()])


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
