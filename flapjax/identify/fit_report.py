"""What a measured-data fit reports, typed: :class:`FitReport`.

Every fit of a data file (stand table, phase-resolved stand record, flapper
flight log, multirotor hover log) ends with the same parts: the reported
values, each with a standard deviation and a unit (:class:`Estimate`), the
correlation, the held-out prediction error, notes, the fit's own
diagnostics and arrays for the plots. :meth:`FitReport.to_json` is the
``results.json`` body (the arrays are not written), :meth:`FitReport.summary`
the printed lines (the table of values: :func:`parameter_table`,
:func:`held_out_lines`); the study drivers (:mod:`flapjax.runs`) return
:meth:`FitReport.from_record` of what they wrote, whose
:meth:`~FitReport.to_json` is that body again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Estimate", "FitReport", "data_record", "held_out_lines", "parameter_table", "with_std"]


@dataclass(frozen=True)
class Estimate:
    """One reported value.

    Attributes:
      value: the value [unit].
      std: one standard deviation [unit], or None for a value held (not fitted).
      unit: its unit (``-`` when dimensionless).
    """

    value: float
    std: float | None
    unit: str


@dataclass(frozen=True)
class FitReport:
    """The outcome of one measured-data fit.

    Attributes:
      study: the study's name in ``results.json`` (``stand``, ``stand_waveform``,
        ``flight_log``, ``hover``; ``stand_physical``: the per-wing fit a
        stand study writes under ``physical``).
      source: the data file.
      estimates: name -> :class:`Estimate`, in the reported order.
      details: the study's own ``results.json`` keys after the common head,
        in their order (``validation``, ``notes`` and the correlation among
        them; see the properties).
      arrays: name -> array for the plots (not written).
    """

    study: str
    source: str
    estimates: Mapping[str, Estimate]
    details: Mapping[str, Any] = field(default_factory=dict)
    arrays: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, study: str, source: str | Path, values: Mapping[str, float], std: Mapping[str, float | None],
           units: Mapping[str, str], details: Mapping[str, Any], arrays: Mapping[str, Any] | None = None
           ) -> "FitReport":
        """A report from the value, standard deviation and unit dicts (a
        value missing from ``std`` is held; each value needs a unit:
        ``KeyError`` naming the ones without)."""
        missing = [n for n in values if n not in units]
        if missing:
            raise KeyError(f"no unit for {', '.join(missing)}")
        estimates = {n: Estimate(value=v, std=std.get(n), unit=units[n]) for n, v in values.items()}
        return cls(study=study, source=str(source), estimates=estimates, details=dict(details),
                   arrays=dict(arrays or {}))

    @classmethod
    def from_record(cls, record: Mapping[str, Any], arrays: Mapping[str, Any] | None = None) -> "FitReport":
        """The report whose :meth:`to_json` is ``record``, a ``results.json``
        body (the values are those ``record["units"]`` names; every other
        key after the head goes to :attr:`details`, in order)."""
        try:
            names = list(record["units"])
            head = {"study", "source", "units", *names, *(f"{n}_std" for n in names)}
            values = {n: record[n] for n in names}
            std = {n: record[f"{n}_std"] for n in names}
            study, source = record["study"], record["source"]
        except KeyError as exc:
            raise KeyError(f"not a results.json body: no {exc.args[0]!r}") from None
        details = {k: v for k, v in record.items() if k not in head}
        return cls.of(study, source, values, std, record["units"], details, arrays)

    @property
    def files(self) -> list[str]:
        """The other files written beside ``results.json`` (names; empty before writing)."""
        return list(self.details.get("files", ()))

    @property
    def values(self) -> dict[str, float]:
        """name -> value."""
        return {n: e.value for n, e in self.estimates.items()}

    @property
    def std(self) -> dict[str, float | None]:
        """name -> standard deviation (None: held)."""
        return {n: e.std for n, e in self.estimates.items()}

    @property
    def units(self) -> dict[str, str]:
        """name -> unit."""
        return {n: e.unit for n, e in self.estimates.items()}

    @property
    def validation(self) -> dict[str, Any]:
        """The held-out prediction error (``{}`` without a hold-out)."""
        return dict(self.details.get("validation", {}))

    @property
    def notes(self) -> tuple[str, ...]:
        """What the reader should know about the fit."""
        return tuple(self.details.get("notes", ()))

    @property
    def correlation(self) -> tuple[list[str], np.ndarray] | None:
        """``(names, (p, p) matrix)`` of the fitted parameters' correlation
        (top level or under ``fit``), or None when the study reports none."""
        corr = self.details.get("correlation", self.details.get("fit", {}).get("correlation"))
        if corr is None:
            return None
        return list(corr["names"]), np.asarray(corr["matrix"], dtype=float)

    def to_json(self) -> dict[str, Any]:
        """The ``results.json`` body: ``study``, ``source``, ``name`` /
        ``name_std`` of every value, ``units``, then :attr:`details`
        (``files``, ``seconds`` and ``versions`` are added by
        :func:`flapjax.runs.outputs.write_record`)."""
        record = data_record(self.study, self.source, self.values, self.std, self.units)
        record.update(self.details)
        return record

    def summary(self, *, channel_units: Mapping[str, str] | None = None, indent: str = "") -> str:
        """The table of values, the held-out error per channel (when the
        validation is per channel: ``rms``, ``rms_over_sigma``,
        ``rms_over_measured``; ``channel_units`` label it; an empty line
        without a hold-out) and the notes, one per line."""
        lines = [parameter_table(self.values, self.std, self.units, indent=indent)]
        validation = self.validation
        if all(isinstance(v, Mapping) and "rms_over_measured" in v for v in validation.values()):
            lines.append(held_out_lines(validation, channel_units or {}))  # '' (an empty line) without a hold-out
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


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
