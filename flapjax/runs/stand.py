"""Identification from a measured thrust-stand table: the cycle-averaged
model's stand part (fixed base, cycle means of ``fz_n`` and optionally
``fx_n``, ``fy_n``, ``mx_nm``, ``my_nm`` against the frequency and the plate
angles; the model, the terms a table identifies, the held gains and the fit
are in docs/data_formats.md, "Thrust-stand tables").

Modules: :mod:`flapjax.data.stand_table` (the table: columns, :class:`StandData`,
reading: import them from there), :mod:`flapjax.identify.flapper.stand_prediction`
(the model, its parameters and regressors),
:mod:`flapjax.identify.flapper.stand_fit` (:func:`fit_stand`,
:class:`StandFit`); this module holds the plots, the summary and the driver
:func:`run_stand_identification`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from flapjax.identify.flapper.stand_fit import StandFit, fit_stand
from flapjax.data.stand_table import CHANNEL_LABELS, CHANNEL_UNITS, StandData, load_stand_table
from flapjax.identify.flapper.stand_prediction import PARAMETERS
from flapjax.identify.fit_report import FitReport
from flapjax.identify.fit_report import held_out_lines, parameter_table
from flapjax.runs.outputs import pyplot, save_figure, write_record
from flapjax.files import lock_output_dir, write_json

__all__ = [
    "run_stand_identification",
    "stand_report",
    "stand_summary",
    "write_stand_plots",
]


def stand_report(path: str | Path, data, res: StandFit) -> FitReport:
    """The :class:`~flapjax.identify.fit_report.FitReport` of a stand fit:
    every reported value (fitted, or held with std None), then the rows,
    the closed-form check, residual noise, R^2, held-out error, correlation,
    how the fit stopped and the notes."""
    reported = res.reported()
    return FitReport.of("stand", path, reported, res.std, {n: PARAMETERS[n][1] for n in reported}, {
        "not_identified": res.not_identified,
        "rows": data.n,
        "rows_fitted": int(res.fit_rows.size),
        "rows_held_out": [int(i) + 1 for i in res.validation_rows],
        "reference_frequency": res.f_ref,
        "least_squares": res.least_squares,
        "residual_std": res.sigma,
        "r2": res.r2,
        "validation": res.validation,
        "correlation": {"names": res.names, "matrix": res.correlation},
        "converged": res.converged,
        "fit_reason": res.reason,
        "fit_steps": res.steps,
        "notes": res.notes,
    })


def write_stand_plots(data: StandData, result: StandFit, out_dir: str | Path) -> list[Path]:
    """``stand_residuals.png`` (residual of every channel against frequency,
    fitted and held-out rows, +-2 sigma band) and ``stand_fit.png`` (measured
    against predicted, and F_z against f^2 with the fitted curve)."""
    plt = pyplot()
    out = Path(out_dir)
    files = []
    pred = result.predict(data)
    meas = np.stack([data.channels[ch] for ch in result.channels], axis=1)
    held = np.zeros(data.n, dtype=bool)
    held[result.validation_rows] = True
    nc = len(result.channels)
    fig, axes = plt.subplots(nc, 1, figsize=(6.5, 2.2 * nc + 0.4), squeeze=False, sharex=True)
    for j, ch in enumerate(result.channels):
        ax = axes[j, 0]
        r = meas[:, j] - pred[:, j]
        s = result.sigma[ch]
        ax.axhspan(-2 * s, 2 * s, color="0.9", label="+-2 sigma (fitted rows)")
        ax.axhline(0.0, color="0.5", lw=0.8)
        ax.plot(data.frequency[~held], r[~held], "o", ms=3.5, label="fitted rows")
        if held.any():
            ax.plot(data.frequency[held], r[held], "x", ms=6, color="C3", label="held-out rows")
        ax.set_ylabel(f"residual {CHANNEL_LABELS[ch]}", fontsize=8)
        if j == 0:
            ax.legend(fontsize=7, loc="best")
    axes[-1, 0].set_xlabel("frequency [Hz]")
    fig.suptitle("stand fit: measured minus model", fontsize=10)
    files.append(save_figure(fig, out / "stand_residuals.png", dpi=110))

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    zero = np.all(data.plate == 0, axis=1)
    f2 = data.frequency**2
    axes[0].plot(f2[zero], data.channels["fz_n"][zero], "o", label="measured, plate level")
    if (~zero).any():
        axes[0].plot(f2[~zero], data.channels["fz_n"][~zero], ".", color="0.6", label="measured, plate tilted")
    ff = np.linspace(0.0, data.frequency.max() * 1.05, 100)
    k_f = result.values["k_f"]
    axes[0].plot(ff**2, k_f * ff**2 + result.values.get("fz_offset", 0.0), "-",
                 label=f"k_f = {k_f:.5e} +- {result.std['k_f']:.1e} N/Hz^2")
    axes[0].set_xlabel("f^2 [Hz^2]")
    axes[0].set_ylabel("F_z [N]")
    axes[0].legend(fontsize=8)
    for j, ch in enumerate(result.channels):
        scale = np.sqrt(np.mean(meas[:, j] ** 2)) or 1.0
        axes[1].plot(meas[:, j] / scale, pred[:, j] / scale, "o", ms=3, label=ch)
    lim = axes[1].get_xlim()
    axes[1].plot(lim, lim, "k--", lw=0.8)
    axes[1].set_xlabel("measured / channel RMS")
    axes[1].set_ylabel("model / channel RMS")
    axes[1].legend(fontsize=8)
    files.append(save_figure(fig, out / "stand_fit.png", dpi=110))
    return files


def stand_summary(result: StandFit) -> str:
    """Plain-text table of the fitted values and of the moment gains held
    (``held`` in the std column; the notes say why)."""
    reported = result.reported()
    table = parameter_table(reported, result.std, {n: PARAMETERS[n][1] for n in reported})
    lines = [table]
    if result.validation:
        lines.append(held_out_lines(result.validation, CHANNEL_UNITS))
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)


def _physical(data, res: StandFit, out: Path, physical_options: Mapping[str, Any] | None,
              echo: Callable[[str], None]) -> dict[str, Any]:
    """Per-wing physical parameters through the fixed-base rollout
    (:func:`~flapjax.identify.flapper.stand_physical.fit_physical_to_stand`,
    weighted by the averaged fit's channel noise, its sensor offsets
    removed); writes ``per_wing.json`` and returns the body of
    ``results.json``'s ``physical``: ``values``, ``std``, the fit's details
    and the notes, when there are any."""
    from flapjax.identify.flapper.stand_physical import fit_physical_to_stand

    echo("per-wing physical parameters through the fixed-base rollout (slow) ...")
    opts = {"sigma": res.sigma,  # the channels' noise and the sensor offsets of the averaged fit
            "offsets": {k: v for k, v in res.values.items() if k.endswith("_offset")}}
    opts.update(physical_options or {})
    report = fit_physical_to_stand(data, **opts)
    phys = {"values": report.values, "std": report.std, **report.details}
    write_json(out / "per_wing.json", report.values)  # as a phase-resolved record's: apply_physical
    echo(parameter_table(report.values, report.std, report.units, indent="  "))
    loose = [n for n, r in phys["relative_std"].items() if r > 0.5]
    notes = []
    if loose:
        notes.append(f"{', '.join(loose)}: standard deviation above half the value; cycle means do "
                     "not determine it. A phase-resolved stand record (a phase_rad column, see "
                     "docs/data_formats.md) does.")
    if not phys["converged"]:
        notes.append(f"the per-wing fit stopped before converging ({phys['reason']}): the values are the "
                     "best reached, their standard deviations from the curvature there")
    if notes:
        phys["notes"] = notes
        for note in notes:
            echo(f"note: {note}")
    return phys


def run_stand_identification(path: str | Path, *, out_dir: str | Path, echo: Callable[[str], None] = print,
                             physical: bool = False, holdout_every: int = 5,
                             physical_options: Mapping[str, Any] | None = None) -> FitReport:
    """Identify the stand model from the table at ``path`` (every ``holdout_every``-th
    row held out) and write into ``out_dir`` ``results.json``,
    ``cycle_averaged.json`` (loadable by
    :meth:`flapjax.aero.cycle_averaged.CycleAveragedParams.from_json`) and the
    plots of :func:`write_stand_plots` (contents: docs/data_formats.md,
    "Thrust-stand tables"); returns the
    :class:`~flapjax.identify.fit_report.FitReport` whose ``to_json()`` is
    what ``results.json`` holds.

    ``physical=True`` also fits per-wing physical parameters through the
    fixed-base per-wing rollout (slow: minutes;
    :func:`flapjax.identify.flapper.stand_physical.fit_physical_to_stand`, options
    in ``physical_options``), adds them under ``"physical"`` and writes
    them alone to ``per_wing.json`` (for
    :func:`flapjax.sim.flapper.stand.apply_physical`).
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    with lock_output_dir(out, name="out"):
        data = load_stand_table(path)
        echo(f"stand table {path}: {data.n} rows, channels {list(data.channel_names)}")
        res = fit_stand(data, holdout_every=holdout_every)
        echo(stand_summary(res))
        plots = write_stand_plots(data, res, out)
        results = stand_report(path, data, res).to_json()
        averaged = {"lift_coefficient": res.values["k_f"], "reference_frequency": res.f_ref}
        if res.values.get("k_roll", 0.0) > 0:
            averaged["roll_gain"] = res.values["k_roll"]
        if res.values.get("k_pitch", 0.0) > 0:
            averaged["pitch_gain"] = res.values["k_pitch"]
        write_json(out / "cycle_averaged.json", averaged)
        extra = ["cycle_averaged.json"]
        if physical:
            results["physical"] = _physical(data, res, out, physical_options, echo)
            extra.append("per_wing.json")
        written = write_record(out, results, [*plots, *extra], t0)
    echo(written)
    return FitReport.from_record(results)
