"""``flapjax identify --robot R --data HOVER``: fit a multirotor hover log
(:func:`~flapjax.identify.multirotor.run.fit_hover`) and write
``results.json`` with the residual and proximity plots."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from flapjax import rotor
from flapjax.identify.fit_report import FitReport
from flapjax.identify.multirotor import model as M
from flapjax.data.hover_log import describe_scene, read_hover_log, scene_sources, sidecar_path
from flapjax.identify.multirotor.run import REPORTED, UNITS, fit_hover
from flapjax.identify.fit_report import parameter_table
from flapjax.runs.outputs import pyplot, save_figure, write_record
from flapjax.files import lock_output_dir

__all__ = ["hover_summary", "plot_proximity", "plot_residuals", "run_hover_identification"]


def plot_residuals(a: Mapping[str, np.ndarray], path: str | Path) -> Path:
    """Measured and predicted specific force and the residuals per axis
    against time (validation segment shaded), from the arrays of
    :func:`~flapjax.identify.multirotor.run.fit_hover`'s report: ``time``
    (n,) [s], ``measured`` and ``predicted`` (n, 3) [m/s^2], ``fit`` and
    ``validation`` (n,) bool."""
    plt = pyplot()
    t, m, p = a["time"], a["measured"], a["predicted"]
    fig, axes = plt.subplots(3, 2, figsize=(12, 8), sharex="col")
    for j, name in enumerate(M.AXES):
        ax = axes[j, 0]
        ax.plot(t, m[:, j], ",", color="0.6", label="measured")
        ax.plot(t, p[:, j], "-", lw=0.8, color="C0", label="predicted")
        ax.set_ylabel(f"a_{name} [m/s^2]")
        ax = axes[j, 1]
        r = m[:, j] - p[:, j]
        ax.plot(t[a["fit"]], r[a["fit"]], ",", color="C1")
        ax.plot(t[a["validation"]], r[a["validation"]], ",", color="C3")
        ax.set_ylabel(f"residual {name} [m/s^2]")
        for col in (0, 1):
            if a["validation"].any():
                axes[j, col].axvspan(t[a["validation"]][0], t[a["validation"]][-1], color="C3", alpha=0.08)
    axes[0, 0].legend(loc="upper right", markerscale=20)
    axes[0, 0].set_title("accelerometer: measured vs chain prediction")
    axes[0, 1].set_title("residuals (fit: orange, held-out validation: red)")
    axes[2, 0].set_xlabel("time [s]")
    axes[2, 1].set_xlabel("time [s]")
    return save_figure(fig, Path(path), dpi=110)


def plot_proximity(res: Mapping[str, Any], path: str | Path) -> Path:
    """Identified ground and wall thrust factors against distance (rotor
    radii), with the chain's defaults."""
    plt = pyplot()
    x = np.linspace(0.5, 6.0, 300)
    fitted = rotor.ProximityParams(
        wall_thrust_coeff=max(res["wall_thrust_coeff"], 0.0), wall_lateral_coeff=max(res["wall_lateral_coeff"], 0.0),
        wall_fade_start=res["wall_fade_start"], wall_range=res["wall_range"],
        ground_coeff=min(max(res["ground_coeff"], 0.0), 3.9))
    default = rotor.ProximityParams()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for params, label, style in ((fitted, "identified", "-"), (default, "default", "--")):
        axes[0].plot(x, np.asarray(rotor.ground_effect_factor(jnp.asarray(x), 1.0, params.ground_coeff)), style,
                     label=label)
        d = jnp.asarray(np.maximum(x, 1.0))
        factor, _ = rotor.wall_effect(jnp.ones_like(d), d, jnp.tile(jnp.array([1.0, 0.0, 0.0]), (d.shape[0], 1)),
                                      jnp.ones_like(d), params)
        axes[1].plot(np.maximum(x, 1.0), np.asarray(factor), style, label=label)
    axes[0].set_xlabel("h / R")
    axes[0].set_ylabel("T_IGE / T_OGE")
    axes[1].set_xlabel("d / R")
    axes[1].set_ylabel("near-wall thrust factor")
    for ax in axes:
        ax.legend()
        ax.grid(alpha=0.3)
    return save_figure(fig, Path(path), dpi=110)


def hover_summary(res: Mapping[str, Any]) -> str:
    """Plain-text table of a hover fit: the values (``held`` for those the
    log cannot identify), why they are held, the fit residuals over the
    log's accelerometer noise level, the held-out prediction and the notes."""
    lines = [parameter_table({k: res[k] for k in REPORTED}, {k: res[f"{k}_std"] for k in REPORTED}, UNITS)]
    lines += [f"held: {k}: {why}" for k, why in res["not_identified"].items()]
    lines += [f"weakly identified: {k}: {why}" for k, why in res["weakly_identified"].items()]
    f = res["fit"]
    if f.get("samples_dropped"):
        lines.append(f"fit: {f['rows']} rows; {f['samples_dropped']} samples dropped from the log, "
                     f"{f['rows_settling_after_gaps']} rows after the gaps not counted (the replayed actuator "
                     "settles)")
    v = res["validation"]
    if v.get("rows"):
        lines.append(f"held-out (last {100 * v['fraction']:.0f} %, {v['rows']} rows) RMS per body axis: "
                     + ", ".join(f"{x:.3f}" for x in v["rms_mps2"]) + " m/s^2 ("
                     + ", ".join(f"{x:.2f}" for x in v["rms_over_sigma"]) + " sigma; default coefficients: "
                     + ", ".join(f"{x:.3f}" for x in v["rms_default_coefficients_mps2"]) + " m/s^2)")
    if f.get("residual_over_noise"):
        lines.append("fit residual std over the log's accelerometer noise level per body axis: "
                     + ", ".join(f"{x:.2f}" for x in f["residual_over_noise"]) + " (about 1: the model explains "
                     "the log down to the noise)")
    lines += [f"note: {n}" for n in res.get("notes", [])]
    return "\n".join(lines)


def run_hover_identification(path, *, robot, out_dir, quick: bool = False, progress: bool = True,
                             echo: Callable[[str], None] = print, scene: Mapping[str, Any] | None = None,
                             validation_fraction: float = 0.2) -> FitReport:
    """Identify ground-effect, near-wall and drag coefficients from a hover log.

    Args:
      path: the hover log (CSV or NPZ; docs/data_formats.md, "Multirotor hover logs").
      robot: preset name (``quad_x``, ``hexa``, ``hexa_tilted``) or a profile
        file (``.toml`` / ``.json``).
      out_dir: where ``results.json``, ``residuals.png`` and ``proximity.png`` go.
      quick: fewer optimizer steps (a smoke run).
      progress: show a tqdm bar over the optimizer steps.
      echo: where the summary lines go.
      scene: scene keys overriding the log's (``wall_x_m``, ...).
      validation_fraction: the final part of the log held out [-].

    Returns the :class:`~flapjax.identify.fit_report.FitReport` of what
    ``results.json`` holds (its keys: docs/data_formats.md, "Multirotor
    hover logs"), the fit's arrays (time, measured and predicted specific
    force, fit and validation masks) as its ``arrays``. Load the values
    into a chain with :func:`flapjax.identify.multirotor.chain_params_from_results`.
    """
    from tqdm.auto import tqdm

    from flapjax.data.hover_log import check_thrust_carries_weight

    jax.config.update("jax_enable_x64", True)
    started = time.perf_counter()
    prof = rotor.resolve_profile(robot, field="robot")
    log = read_hover_log(path, prof.n_rotors, scene=scene)
    check_thrust_carries_weight(log, float(prof.mass), prof.name)
    out = Path(out_dir)
    with lock_output_dir(out, name="out"):
        echo(f"hover log {log.path}: {log.n_samples} rows at {1.0 / log.dt:.0f} Hz, robot {prof.name}")
        sources = scene_sources(path, scene)
        if sources:
            echo(f"scene: {describe_scene(log.scene)} (from {', '.join(sources)})")
        else:
            echo(f"warning: no scene given (no sidecar {sidecar_path(path).name}, no '# scene.KEY = VALUE' lines): "
                 f"assuming {describe_scene(log.scene)}; a wrong scene biases the ground and wall coefficients")
        bar = tqdm(desc="identify hover (fit steps)", unit="it", disable=not progress)

        def tick(k, v):
            bar.update(1)
            bar.set_postfix(loss=f"{v:.4g}")

        try:
            report = fit_hover(prof, log, quick=quick, progress=tick, validation_fraction=validation_fraction)
        finally:
            bar.close()
        res = report.to_json()
        files = [plot_residuals(report.arrays, out / "residuals.png"),
                 plot_proximity(res, out / "proximity.png")]
        res["scene_source"] = sources or ["defaults (none given)"]
        echo(hover_summary(res))
        written = write_record(out, res, files, started)
    echo(written)
    return FitReport.from_record(res, arrays=report.arrays)
