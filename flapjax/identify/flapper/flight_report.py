"""What a flight-log identification shows: the residual and held-out
validation plots and the plain-text summary."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from flapjax.identify.fit_report import FitReport
from flapjax.identify.flapper.flight_parameters import FLIGHT_PARAMETERS
from flapjax.identify.outputs import parameter_table, pyplot, save_figure


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
