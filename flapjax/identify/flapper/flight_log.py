"""Flight-log identification: the cycle-averaged model fitted to a free-flight
log (motion-capture pose and the logged commands) by multiple shooting:
the log (docs/data_formats.md, "Flapper flight logs") is cut into segments,
each flown by the model from its own fitted start state over the logged
commands; the model parameters, a roll/pitch offset of the motion-capture
attitude and the start states are fitted together (Levenberg-Marquardt,
Gauss-Newton standard deviations), and the held-out tail is predicted.

Modules: :mod:`flapjax.data.flight_log` (the log: columns, reading, writing, noise
levels), :mod:`flapjax.sim.flapper.averaged_body` (the rigid body under the averaged model),
:mod:`.flight_parameters` (the identified parameters and their normalized
form), :mod:`.flight_shooting` (segments, compiled residuals and
Jacobians), :mod:`flapjax.identify.levenberg_marquardt`, :mod:`.flight_fit`
(:func:`identify_flight_log`), :mod:`.flight_report` (plots, summary),
:func:`flapjax.sim.flapper.averaged_body.synthetic_flight_log` (synthetic
logs); this module re-exports the names its users read and holds the driver
:func:`run_flight_identification`.
"""

from __future__ import annotations

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
from flapjax.data.flight_log import (
    LOG_COLUMNS,
    noise_levels,
    on_grid,
    read_flight_log,
    sample_steps,
    write_flight_log,
)
from flapjax.identify.flapper.flight_parameters import FLIGHT_PARAMETERS
from flapjax.identify.flapper.flight_report import body_line, summary, write_flight_plots
from flapjax.identify.flapper.flight_shooting import logged_segments
from flapjax.data.sampling import with_dropouts
from flapjax.identify.fit_report import FitReport
from flapjax.identify.outputs import write_record
from flapjax.safe_io import check_fit_memory
from flapjax.sim.flapper.averaged_body import body, start_model
from flapjax.identify.results import lock_output_dir, write_json

__all__ = [
    "DEFAULTS",
    "FLIGHT_PARAMETERS",
    "LOG_COLUMNS",
    "QUICK",
    "flight_fit_bytes",
    "identify_flight_log",
    "logged_segments",
    "noise_levels",
    "on_grid",
    "read_flight_log",
    "run_flight_identification",
    "sample_steps",
    "summary",
    "with_dropouts",
    "write_flight_log",
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
