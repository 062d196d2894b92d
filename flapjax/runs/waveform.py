"""``flapjax identify --data WAVEFORM.csv``: fit a phase-resolved stand
record (:func:`~flapjax.identify.flapper.waveform.fit_waveform`) and write
``results.json`` and ``waveform_fit.png``."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from flapjax.identify.flapper.waveform import fit_waveform
from flapjax.data.stand_table import CHANNEL_LABELS, CHANNEL_UNITS
from flapjax.data.stand_record import StandWaveform, load_stand_waveform
from flapjax.identify.fit_report import FitReport
from flapjax.runs.outputs import pyplot, save_figure, write_record
from flapjax.files import lock_output_dir, write_json


def write_waveform_plot(data: StandWaveform, report: FitReport, out_dir: str | Path) -> Path:
    """``waveform_fit.png`` of :func:`fit_waveform`'s report: per channel
    (rows) and condition (columns) the measured bin means, the fitted model
    and the residual with its +-2 sigma band; held-out conditions titled as
    such."""
    plt = pyplot()
    meas, fitted = np.asarray(report.arrays["measured"]), np.asarray(report.arrays["fitted"])
    channels, conds = report.details["channels"], report.details["conditions"]
    nc, m = len(channels), len(conds)
    fig, axes = plt.subplots(2 * nc, m, figsize=(2.6 * m + 0.8, 2.6 * nc + 0.6), squeeze=False, sharex=True)
    for c, cond in enumerate(conds):
        rows = np.nonzero(data.condition == c)[0]
        order = rows[np.argsort(data.phase[rows])]
        th = data.phase[order]
        title = f"{cond['frequency_hz']:g} Hz, plates ({cond['pitch_plate_rad']:g}, {cond['roll_plate_rad']:g})"
        if cond["held_out"]:
            title += "\nheld out (predicted)"
        for j, ch in enumerate(channels):
            ax, axr = axes[2 * j, c], axes[2 * j + 1, c]
            ax.plot(th, meas[order, j], "o", ms=2.5, label="measured")
            ax.plot(th, fitted[order, j], "-", lw=1.0, color="C3" if cond["held_out"] else "C1", label="model")
            s = report.details["residual_std"][ch]
            axr.axhspan(-2 * s, 2 * s, color="0.9")
            axr.axhline(0.0, color="0.5", lw=0.8)
            axr.plot(th, meas[order, j] - fitted[order, j], ".", ms=3, color="C3" if cond["held_out"] else "C0")
            if c == 0:
                ax.set_ylabel(CHANNEL_LABELS[ch], fontsize=8)
                axr.set_ylabel("residual", fontsize=8)
            if j == 0:
                ax.set_title(title, fontsize=8)
            if j == 0 and c == 0:
                ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("stroke phase [rad]")
    spread = lambda k: "held" if report.std[k] is None else f"+- {report.std[k]:.1g}"  # noqa: E731
    values = ", ".join(f"{k} {report.values[k]:.4g} {spread(k)}" for k in report.details["start"])
    fig.suptitle(f"phase-resolved stand fit: {values}", fontsize=9)
    return save_figure(fig, Path(out_dir) / "waveform_fit.png", dpi=100)


def run_waveform_identification(path: str | Path, *, out_dir: str | Path, echo: Callable[[str], None] = print,
                                **options) -> FitReport:
    """Fit the per-wing physical parameters to the phase-resolved stand
    record at ``path`` (options: :func:`fit_waveform`) and write into
    ``out_dir`` ``results.json``, ``per_wing.json`` (the fitted values alone,
    for :func:`flapjax.sim.flapper.stand.apply_physical`) and
    ``waveform_fit.png`` (docs/data_formats.md, "Phase-resolved stand
    records"); returns the :class:`~flapjax.identify.fit_report.FitReport`
    whose ``to_json()`` is what ``results.json`` holds."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    with lock_output_dir(out, name="out"):
        data = load_stand_waveform(path)
        freqs, _ = data.conditions()
        echo(f"stand waveform {path}: {data.n} rows, {data.n_conditions} conditions "
             f"({', '.join(f'{f:g}' for f in freqs)} Hz), channels {list(data.channel_names)}")
        echo("per-wing physical parameters through the fixed-base rollout ...")
        report = fit_waveform(data, echo=echo, **options)
        echo(report.summary(channel_units=CHANNEL_UNITS))
        plot = write_waveform_plot(data, report, out)
        write_json(out / "per_wing.json", {k: report.values[k] for k in report.details["start"]})  # the parameters
        results = report.to_json()
        written = write_record(out, results, [plot, "per_wing.json"], t0)
    echo(written)
    return FitReport.from_record(results)
