"""Flight-log identification: the cycle-averaged model fitted to a free-flight
log (motion-capture pose and the logged commands) by multiple shooting:
the log (docs/data_formats.md, "Flapper flight logs") is cut into segments,
each flown by the model from its own fitted start state over the logged
commands; the model parameters, a roll/pitch offset of the motion-capture
attitude and the start states are fitted together (Levenberg-Marquardt,
Gauss-Newton standard deviations), and the held-out tail is predicted.

Modules: :mod:`flapjax.data.flight_log` (the log: columns, reading, writing,
noise levels: import them from there), :mod:`flapjax.sim.flapper.averaged_body`
(the rigid body under the averaged model), :mod:`flapjax.identify.flapper.flight_parameters` (the
identified parameters and their normalized form), :mod:`flapjax.identify.flapper.flight_shooting`
(segments, compiled residuals and Jacobians),
:mod:`flapjax.identify.levenberg_marquardt`, :mod:`flapjax.identify.flapper.flight_fit`
(:func:`identify_flight_log`),
:func:`flapjax.sim.flapper.averaged_body.synthetic_flight_log` (synthetic
logs); this module holds the plots, the summary and the driver
:func:`run_flight_identification`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
from tqdm.auto import tqdm

from flapjax.identify.flapper.flight_fit import (
    DEFAULTS,
    QUICK,
    check_command_delay,
    command_delay_scan,
    identify_flight_log,
)
from flapjax.data.flight_log import read_flight_log
from flapjax.identify.flapper.flight_parameters import FLIGHT_PARAMETERS
from flapjax.identify.fit_report import FitReport
from flapjax.identify.fit_report import parameter_table
from flapjax.runs.outputs import pyplot, save_figure, write_record
from flapjax.safe_io import check_fit_memory
from flapjax.sim.flapper.averaged_body import body, start_model
from flapjax.files import lock_output_dir, write_json

__all__ = [
    "body_line",
    "flight_fit_bytes",
    "run_flight_identification",
    "summary",
    "write_flight_plots",
]


#: Working copies of the fit's Jacobian (the Jacobian, its rows kept for the
#: covariance, the normal equations' workspace) in :func:`flight_fit_bytes`.
JACOBIAN_COPIES = 3


def flight_fit_bytes(time_s: np.ndarray) -> float:
    """Estimated peak bytes of the flight-log fit of samples at ``time_s``
    (n,) [s]: the dense multiple-shooting Jacobian, 6 residuals per sample
    by the fitted parameters plus 12 start states per segment of
    ``DEFAULTS["segment"]`` seconds, in float64, times
    :data:`JACOBIAN_COPIES`. It grows as n^2: a long log at a high rate
    needs terabytes."""
    n = int(np.size(time_s))
    dt = float(np.median(np.diff(time_s))) if n > 1 else 1.0
    seg_len = max(1, int(round(DEFAULTS["segment"] / max(dt, 1e-12))))
    n_segments = n / seg_len
    return JACOBIAN_COPIES * 8.0 * 6 * n * (len(FLIGHT_PARAMETERS) + 12 * n_segments)


def write_flight_plots(out: Path, report: FitReport) -> list[Path]:
    """``flight_residuals.png`` (residuals of the fitted segments) and
    ``flight_validation.png`` (held-out prediction) of the report of
    :func:`~flapjax.identify.flapper.flight_fit.identify_flight_log` (its
    arrays and validation)."""
    plt = pyplot()
    d = report.arrays
    names = ("x [mm]", "y [mm]", "z [mm]", "roll [deg]", "pitch [deg]", "yaw [deg]")
    conv = np.array([1e3, 1e3, 1e3, *(3 * [math.degrees(1.0)])])
    files = []
    fig, axes = plt.subplots(6, 1, figsize=(9, 10), sharex=True)
    for c in range(6):
        for k in range(d["fit_time"].shape[0]):
            axes[c].plot(d["fit_time"][k], d["residuals"][k, :, c] * conv[c], lw=0.5, color=f"C{k % 2}")
        axes[c].set_ylabel(names[c], fontsize=8)
        axes[c].axhline(0, color="k", lw=0.5)
    axes[0].set_title(f"flight log: residuals (measured - identified model), {d['fit_time'].shape[0]} shooting segments")
    axes[-1].set_xlabel("t [s]")
    files.append(save_figure(fig, out / "flight_residuals.png", dpi=100))
    fig, axes = plt.subplots(5, 1, figsize=(9, 9), sharex=True)
    v = report.validation
    for c in range(5):
        for k in range(d["hold_time"].shape[0]):
            tt = d["hold_time"][k]
            axes[c].plot(tt, d["hold_meas"][k, :, c] * conv[c], "k.", ms=1.5, label="log" if k == 0 else None)
            axes[c].plot(tt, d["hold_pred"]["identified"][k, :, c] * conv[c], "C0-", lw=1,
                         label="identified model" if k == 0 else None)
            axes[c].plot(tt, d["hold_pred"]["start"][k, :, c] * conv[c], "C3--", lw=0.8,
                         label="start (seed) model" if k == 0 else None)
            axes[c].axvspan(tt[0], tt[0] + d["init_window"], color="0.9", zorder=0)
        axes[c].set_ylabel(names[c], fontsize=8)
    axes[0].legend(fontsize=7)
    axes[0].set_title(
        f"held-out prediction (shaded: start fitted): identified RMS {1e3 * v['identified']['position_rms']:.2f} mm, "
        f"{v['identified']['attitude_rms_deg']:.2f} deg; start model {1e3 * v['start']['position_rms']:.1f} mm, "
        f"{v['start']['attitude_rms_deg']:.1f} deg", fontsize=8)
    axes[-1].set_xlabel("t [s]")
    files.append(save_figure(fig, out / "flight_validation.png", dpi=100))
    return files


def summary(results: dict) -> str:
    """Plain-text table of a flight identification's results."""
    lines = [parameter_table({n: results[n] for n in FLIGHT_PARAMETERS},
                             {n: results[n + "_std"] for n in FLIGHT_PARAMETERS}, FLIGHT_PARAMETERS,
                             no_std="at bound")]
    f, v = results["fit"], results["validation"]
    dropped = f" ({f['samples_dropped']} samples dropped from the log)" if f.get("samples_dropped") else ""
    lines.append(f"fit: {f['segments']} segments of {f['segment']:g} s{dropped}, {f['iterations']} iterations "
                 f"over two passes (last: {f['reason']})")
    if "residual_over_noise" in f:
        ratios = ", ".join(f"{c.rsplit('_', 1)[0]} {r:.2f}" for c, r in f["residual_over_noise"].items())
        lines.append("residual RMS over the log's noise level (second differences; about 1: the model explains the "
                     f"log): {ratios}")
    lines.append(f"held-out ({v['segments']} segments, {v['horizon']:.2f} s predicted after a "
                 f"{v['init_window']:.2f} s start): position RMS {1e3 * v['identified']['position_rms']:.2f} mm "
                 f"({v['identified']['position_rms_over_sigma']:.2f} sigma), attitude RMS "
                 f"{v['identified']['attitude_rms_deg']:.2f} deg ({v['identified']['attitude_rms_over_sigma']:.2f} "
                 f"sigma), sigma = the fit's residual level; start model: "
                 f"{1e3 * v['start']['position_rms']:.1f} mm, {v['start']['attitude_rms_deg']:.1f} deg")
    lines += [f"note: {n}" for n in results.get("notes", [])]
    if f["reason"].startswith("max_iterations"):
        lines.append("note: the fit stopped at its iteration limit without converging: the values and "
                     "uncertainties above are not to be trusted (check the log's units: metres, radians, "
                     "seconds)")
    return "\n".join(lines)


def body_line(mass: float, inertia, given: list[str]) -> str:
    """The line saying which mass [kg] and (3, 3) inertia [kg m^2] a flight
    log is fitted with and where they come from (``given``: the names the
    user gave, ``mass`` and/or ``inertia``; the rest are the nominal robot's)."""
    moments = ", ".join(f"{x:.4g}" for x in np.linalg.eigvalsh(np.asarray(inertia, dtype=float)) * 1e9)
    if len(given) == 2:
        source = "given"
    else:
        source = (f"{given[0]} given, the rest the nominal robot's" if given else "the nominal robot's")
        source += ": give those of the robot that flew, --mass and --inertia"
    return f"body: mass {mass * 1e3:.4g} g, principal inertia {moments} g mm^2 ({source})"


def run_flight_identification(
    path: str | Path,
    *,
    out_dir: str | Path,
    quick: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
    mass: float | None = None,
    inertia=None,
    command_delay: int | str = 0,
) -> FitReport:
    """Identify the cycle-averaged model from the flight log at ``path``
    (:func:`identify_flight_log`) and write into ``out_dir`` ``results.json``,
    ``cycle_averaged.json`` (loads with :meth:`CycleAveragedParams.from_json`)
    and the residual and validation plots (docs/data_formats.md, "Flapper
    flight logs"). Returns the :class:`~flapjax.identify.fit_report.FitReport`
    whose ``to_json()`` is what ``results.json`` holds.

    ``quick`` caps the Levenberg-Marquardt iterations; ``progress`` shows a
    bar over them. ``mass`` [kg] and ``inertia`` [kg m^2] are those of the
    robot that flew (:func:`~flapjax.sim.flapper.averaged_body.body`;
    default the nominal robot's), recorded under ``body``.
    ``command_delay``: samples by which the logged commands lag, or
    ``"auto"`` (:func:`~flapjax.identify.flapper.flight_fit.command_delay_scan`;
    the scores go under ``fit.command_delay_scan``).

    Raises :class:`DataError` for a bad log (naming file, column, row) and
    :class:`ConfigError` for an unusable output folder, before any fit.
    """
    jax.config.update("jax_enable_x64", True)
    started = time.perf_counter()
    path = Path(path)
    body_mass, gravity, body_inertia = body(mass, inertia)
    if command_delay != "auto":
        check_command_delay(command_delay)
    log = read_flight_log(path)
    check_fit_memory(str(path), f"the flight-log fit of {log['time_s'].size} samples",
                     flight_fit_bytes(log["time_s"]))
    out = Path(out_dir)
    with lock_output_dir(out, name="out"):
        echo(f"flight log {path}: {log['time_s'].size} samples at "
             f"{1.0 / float(np.median(np.diff(log['time_s']))):.0f} Hz; fitting ...")
        settings = {**DEFAULTS, **(QUICK if quick else {})}
        bar = tqdm(desc="identify flight log (Levenberg-Marquardt)", unit="it", disable=not progress)

        def tick(_, cost):
            bar.update(1)
            bar.set_postfix(cost=f"{cost:.4g}")

        given = [k for k, v in (("mass", mass), ("inertia", inertia)) if v is not None]
        echo(body_line(body_mass, body_inertia, given))
        model = {"base": start_model(body_mass, gravity), "inertia": body_inertia, "where": path.name}
        scan = None
        if command_delay == "auto":
            echo("command delay: fitting with 0-10 samples of delay ...")
            command_delay, scan = command_delay_scan(log, **model, **settings)
            echo("command delay: residual over noise, mean square per delay: "
                 + ", ".join(f"{d} {v:.3f}" for d, v in scan.items()) + f"; keeping {command_delay} "
                 f"({1e3 * command_delay * float(np.median(np.diff(log['time_s']))):.0f} ms)")
        try:
            report = identify_flight_log(log, **model, **settings, command_delay=command_delay, callback=tick)
        finally:
            bar.close()
        results = report.to_json()
        results["source"] = str(path)
        if scan is not None:
            results["fit"] = {**results["fit"], "command_delay_scan": {str(d): v for d, v in scan.items()}}
        results.update({"settings": settings,
                        "body": {"mass_kg": body_mass, "inertia_kgm2": body_inertia.tolist(), "given": given}})
        write_json(out / "cycle_averaged.json", {
            "comment": f"Cycle-averaged model identified from the flight log {path.name}; load with "
                       "CycleAveragedParams.from_json.", **results["cycle_averaged"]})
        files = write_flight_plots(out, report)
        written = write_record(out, results, ["cycle_averaged.json", *files], started)
        echo(summary(results) + "\n" + written)
        return FitReport.from_record(results)
