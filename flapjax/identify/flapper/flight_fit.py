"""The flight-log fit: multiple shooting of the cycle-averaged model over the
logged commands (:mod:`.flight_shooting`), minimized by
Levenberg-Marquardt (:mod:`flapjax.identify.levenberg_marquardt`), with Gauss-Newton standard
deviations and the held-out prediction (docs/data_formats.md, "Flapper flight logs")."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.data.tables import DataError
from flapjax.identify.fit_report import FitReport
from flapjax.identify.flapper.far_from_nominal import far_from_nominal
from flapjax.data.flight_log import POSE_NAMES as POSE_CHANNELS, noise_levels, on_grid, sample_steps
from flapjax.identify.flapper.flight_parameters import (
    FLIGHT_PARAMETERS,
    AT_BOUND,
    at_bound,
    decode,
    start_values,
    std_physical,
)
from flapjax.identify.flapper.flight_shooting import (
    Segments,
    fit_jacobian,
    fit_residuals,
    predict_segments,
    seed_states,
    logged_segments,
    start_jacobian,
    start_residuals,
)
from flapjax.identify.levenberg_marquardt import levenberg_marquardt
from flapjax.identify.solve import (
    gauss_newton_covariance,
    residual_sigma,
    reweighted_passes,
    std_and_correlation,
    unidentified,
)
from flapjax.sim.flapper.averaged_body import robot_body, start_model, with_values
from flapjax.validation import ConfigError, check_range

#: Fit residual RMS over the log's own noise level (second differences)
#: above which the model leaves part of a channel unexplained [-].
NOISE_RATIO_LIMIT = 1.25

DEFAULTS = {"segment": 0.4, "holdout": 1.5, "init_window": 0.1, "substeps": 2, "max_iterations": 40}
QUICK = {"max_iterations": 25}


def _two_passes(prob: Segments, sigma: np.ndarray, n_x: int, max_iterations: int,
                callback: Callable[[int, float], None] | None = None):
    """Pass 1 weighs the channels by the noise levels from second differences;
    pass 2 by the RMS of each channel's residuals at the first optimum.
    ``callback(iteration, cost)`` after every accepted step of either pass.
    Returns ``(x, sigma, iterations, cost history, reason)``."""

    def run_pass(state, scale):
        x, iters, history = (jnp.zeros(n_x), 0, []) if state is None else state[:3]
        sig = jnp.asarray(scale)
        try:
            x, r, _, it, hist, reason = levenberg_marquardt(lambda z: fit_residuals(z, sig, prob),
                                                            lambda z: fit_jacobian(z, sig, prob), x,
                                                            max_iterations=max_iterations, callback=callback)
        except FloatingPointError:
            raise DataError("the averaged model's rollouts over the log's segments are not finite at the start "
                            "values: check the log's units (m, rad, s, Hz) and give the mass and inertia of the robot "
                            "that flew (--mass, --inertia); from Python, shorter segments "
                            "(identify_flight_log(..., segment=0.2)) or a start model closer to the robot "
                            "(base=...)") from None
        return x, iters + it, history + hist, reason, r

    def sigma_of(state, scale):
        counted = np.asarray(prob.weight).reshape(-1) > 0  # dropped samples carry no residual
        return scale * residual_sigma(np.asarray(state[4]).reshape(-1, 6)[counted])

    done = reweighted_passes(run_pass, sigma_of, sigma, max_passes=2)
    x, iters, history, reason, _ = done.state
    return x, done.sigma, iters, history, reason


#: Largest command delay the fit takes [samples].
MAX_COMMAND_DELAY = 50


def check_command_delay(delay) -> None:
    """:class:`ConfigError` unless ``delay`` is a whole number of samples in
    [0, :data:`MAX_COMMAND_DELAY`]."""
    if isinstance(delay, bool) or not isinstance(delay, (int, np.integer)) or not 0 <= delay <= MAX_COMMAND_DELAY:
        raise ConfigError(f"command_delay: must be a whole number of samples in [0, {MAX_COMMAND_DELAY}] or "
                          f"'auto', got {delay!r}")


def advance_commands(commands: np.ndarray, delay: int) -> np.ndarray:
    """``commands`` (N, ...) moved ``delay`` samples earlier: the command
    logged at sample ``k + delay`` took effect at sample ``k``. The last
    ``delay`` samples repeat the last command (what followed is unknown)."""
    if delay == 0:
        return commands
    return np.concatenate([commands[delay:], np.repeat(commands[-1:], delay, axis=0)], axis=0)


def residual_notes(ratio: np.ndarray, limit: float = NOISE_RATIO_LIMIT) -> list[str]:
    """A note when a pose channel's fit residual RMS exceeds the log's own
    noise level (second differences) by more than ``limit`` (``ratio``
    (6,), per channel of :data:`POSE_CHANNELS`): the model leaves part of
    the log unexplained (command latency, units, mass or inertia)."""
    over = [f"{c} {r:.2f}x" for c, r in zip(POSE_CHANNELS, ratio) if np.isfinite(r) and r > limit]
    if not over:
        return []
    return [f"fit residuals above the log's noise level ({', '.join(over)}; limit {limit:g}x): the model leaves part "
            "of the log unexplained and the standard deviations are too small. Check that the commands are logged "
            "when they were sent (a delay of a few samples does this: --command-delay auto, or command_delay=, "
            "finds and removes it), the units (m, rad, s, Hz) and the robot's mass and inertia"]


def _held_out(hold: Segments, counted: np.ndarray, n_init: int, sig, models: dict) -> tuple[dict, dict]:
    """Prediction errors of each model (label -> (params, attitude offset))
    over the held-out segments ``hold``: each start is fitted to the first
    ``n_init`` samples, the rest is predicted and compared where ``counted``
    (m, S; up to a dropped sample). ``sig`` (6,) is the fit's residual
    standard deviation per pose channel: the errors are also given over it
    (``*_rms_over_sigma``; 1 is the noise level). Returns ``(validation,
    predictions)``."""
    noise_position = float(np.sqrt(np.sum(np.asarray(sig)[:3] ** 2)))
    noise_attitude = math.degrees(float(np.sqrt(np.sum(np.asarray(sig)[3:5] ** 2))))
    m, seg_len = hold.seeds.shape[0], hold.meas.shape[1]
    validation, pred_hold = {}, {}
    for label, (model, offset) in models.items():
        off = jnp.asarray(offset)
        try:
            dz, *_ = levenberg_marquardt(lambda z: start_residuals(z, sig, hold, model, off),
                                         lambda z: start_jacobian(z, sig, hold, model, off), jnp.zeros(12 * m),
                                         max_iterations=15)
        except FloatingPointError:  # this model does not fly the held-out segments: no prediction
            validation[label] = {"position_rms": math.nan, "attitude_rms_deg": math.nan,
                                 "position_rms_over_sigma": math.nan, "attitude_rms_over_sigma": math.nan,
                                 "note": "the model's rollouts over the held-out segments are not finite"}
            pred_hold[label] = np.full(np.shape(hold.meas), np.nan)
            continue
        pred = np.asarray(predict_segments(dz, sig, hold, model, off))
        after = (np.arange(seg_len) >= n_init)[None, :] & counted
        err = np.asarray(hold.meas)[after] - pred[after]
        err[..., 3:] = np.arctan2(np.sin(err[..., 3:]), np.cos(err[..., 3:]))
        position = float(np.sqrt(np.mean(np.sum(err[..., :3] ** 2, axis=-1))))
        attitude = float(np.degrees(np.sqrt(np.mean(np.sum(err[..., 3:5] ** 2, axis=-1)))))
        validation[label] = {"position_rms": position, "attitude_rms_deg": attitude,
                             "position_rms_over_sigma": position / noise_position,
                             "attitude_rms_over_sigma": attitude / noise_attitude}
        pred_hold[label] = pred
    validation["segments"] = int(m)
    return validation, pred_hold


class _Grid(NamedTuple):
    """Where the fit and the held-out prediction sit on the log's sample grid."""

    dt: float              # sample period [s]
    log: dict              # the log on its grid (dropped samples filled)
    logged: np.ndarray     # (N,) bool: the sample was logged
    seg_len: int           # samples per shooting segment
    n_init: int            # samples a held-out segment's start is fitted to
    starts: np.ndarray     # (m,) first sample of each fitted segment
    fit_counted: np.ndarray   # (m, seg_len) bool: the sample counts in the fit
    hold_starts: np.ndarray   # (h,) first sample of each held-out segment
    hold_counted: np.ndarray  # (h, seg_len) bool


def _grid(log: dict, *, segment: float, holdout: float, init_window: float, where: str) -> _Grid:
    """The log on its sample grid, cut into fitted shooting segments and
    held-out ones (the last ``holdout`` seconds); :class:`DataError` when
    too few fit."""
    dt, grid_index = sample_steps(np.asarray(log["time_s"], dtype=float), where)
    dt = float(f"{dt:.9g}")  # one compiled program per rate, not per rounding
    log, logged = on_grid(log, dt, grid_index)
    t = log["time_s"]
    check_range("flight.segment", segment, 5 * dt, 5.0)
    seg_len = int(round(segment / dt))
    n_hold = int(round(holdout / dt))
    if n_hold < 2 * seg_len:
        raise ConfigError(f"flight.holdout: needs at least two segments ({2 * segment:g} s), got {holdout:g} s")
    n_fit = t.size - n_hold
    n_init = max(2, int(round(init_window / dt)))
    # segments inside runs of logged samples (the commands of a dropped sample are unknown)
    starts, fit_counted = logged_segments(logged, n_fit, seg_len, seg_len // 2)
    if starts.size < 4:
        raise DataError(f"{where}: {t[-1] - t[0]:.3g} s hold {starts.size} fitted segment(s) of {segment:g} s "
                        f"(at least {seg_len // 2} logged samples in a row) before the {holdout:g} s held out; "
                        "need at least 4: log a longer flight")
    # held-out segments: the start window and at least as many predicted samples, up to a gap
    hold_min = min(seg_len, max(2 * n_init, seg_len // 2))
    hold_starts, hold_counted = logged_segments(logged[n_fit:], n_hold, seg_len, hold_min)
    if hold_starts.size == 0:
        raise DataError(f"{where}: the last {holdout:g} s (held out) hold no {hold_min} logged samples in a row "
                        "(too many dropped samples there); from Python, a longer holdout "
                        "(identify_flight_log(..., holdout=...)) or a shorter start window (init_window=...)")
    return _Grid(dt, log, logged, seg_len, n_init, starts, fit_counted, hold_starts + n_fit, hold_counted)


def _default_body(base, inertia):
    """``(base, inertia (3, 3))``: the robot's mass, gravity and inertia where not given."""
    if base is None or inertia is None:
        mass, g, inertia_robot = robot_body()
        base = start_model(mass, g) if base is None else base
        inertia = inertia_robot if inertia is None else inertia
    return base, jnp.asarray(np.asarray(inertia, dtype=float).reshape(3, 3))


def _fit_notes(values: dict, start_v: dict, bounded: list[str], free: list[str], ratio: np.ndarray) -> list[str]:
    notes = [f"{name} was driven to its bound, zero ({values[name]:.3g}, below {AT_BOUND:g} of its start value): "
             "the log asks for a value the model does not allow, so no standard deviation is given; check the "
             "log's units and that the robot flew on its own" for name in bounded]
    them = "it" if len(free) == 1 else "them"
    notes += [f"{', '.join(free)}: the log does not determine {them} (the residuals do not depend on {them}: a "
              "plate that never moves leaves its moment gain free); held at the start value, no standard "
              "deviation"] if free else []
    notes += far_from_nominal(values, start_v, [*bounded, *free], units="frequency in Hz, not rad/s or rpm; "
                              "positions in m")
    return notes + residual_notes(ratio)


def _uncertainty(prob: Segments, x, sigma: np.ndarray, base, start: dict):
    """Values, standard deviations and the parameters' correlation at the
    optimum ``x``: ``(values, std, correlation (p, p), residual variance,
    scaled residuals, bounded, free)``; a parameter at its bound or not
    determined gets no standard deviation and NaN correlations."""
    n_par = len(FLIGHT_PARAMETERS)
    sig = jnp.asarray(sigma)
    counted = np.repeat(np.asarray(prob.weight).reshape(-1) > 0, 6)
    r = np.asarray(fit_residuals(x, sig, prob))
    J = np.asarray(fit_jacobian(x, sig, prob))
    cov, s2 = gauss_newton_covariance(r[counted], J[counted])
    std_all, corr_all = std_and_correlation(cov)
    std_z = std_all[:n_par].copy()
    values = {k: float(v) for k, v in decode(x[:n_par], start).items()}
    bounded = at_bound(values, start_values(base))
    free = [n for n, dead in zip(FLIGHT_PARAMETERS, unidentified(J[counted])[:n_par]) if dead and n not in bounded]
    std = std_physical(values, std_z, [*bounded, *free])
    corr = corr_all[:n_par, :n_par].copy()
    idx = [list(FLIGHT_PARAMETERS).index(n) for n in free]
    corr[idx, :] = np.nan
    corr[:, idx] = np.nan
    return values, std, corr, s2, r, bounded, free


def identify_flight_log(
    log: dict[str, np.ndarray],
    *,
    base: CycleAveragedParams | None = None,
    inertia=None,
    segment: float = DEFAULTS["segment"],
    holdout: float = DEFAULTS["holdout"],
    init_window: float = DEFAULTS["init_window"],
    substeps: int = DEFAULTS["substeps"],
    max_iterations: int = DEFAULTS["max_iterations"],
    command_delay: int = 0,
    callback: Callable[[int, float], None] | None = None,
    where: str = "flight log",
) -> FitReport:
    """Fit the averaged model to a flight log (module docstring).

    Args:
      log: columns of :data:`~flapjax.data.flight_log.LOG_COLUMNS`
        (:func:`~flapjax.data.flight_log.read_flight_log`).
      base: start values and the fixed fields (mass, gravity, f_ref, yaw
        ``D_w``); default the seed's model with the robot's mass and gravity.
      inertia: (3, 3) body inertia [kg m^2]; default the robot's (MJCF).
      segment: shooting segment length [s]; holdout: held-out tail [s];
      init_window: the part of a held-out segment its start is fitted to [s];
      substeps: RK4 steps per sample; max_iterations: Levenberg-Marquardt.
      command_delay: samples by which the logged commands lag the instant
        they took effect (radio, logging); the commands are moved that many
        samples earlier (:func:`advance_commands`). See
        :func:`command_delay_scan`.
      callback: ``(iteration, cost)`` after every accepted Levenberg-Marquardt
        step of the fit (a progress bar).
      where: the log's name in error messages (its file name).

    Returns the :class:`~flapjax.identify.fit_report.FitReport` (study
    ``flight_log``, source ``where``) of the values of
    :data:`~flapjax.identify.flapper.flight_parameters.FLIGHT_PARAMETERS`
    (std ``None``: at its bound or not determined, named in the notes); its
    details are the ``results.json`` keys of docs/data_formats.md ("Flapper
    flight logs"): ``cycle_averaged``, ``fit``, ``noise``, ``validation``,
    ``notes``; arrays for the plots: ``fit_time`` (m, S) [s] and
    ``residuals`` (m, S, 6) [m, rad] of the fitted segments, ``hold_time``,
    ``hold_meas`` and ``hold_pred`` (label -> (h, S, 6)) of the held-out
    ones, and ``init_window`` [s].
    """
    t0 = time.perf_counter()
    base, inertia = _default_body(base, inertia)
    g = _grid(log, segment=segment, holdout=holdout, init_window=init_window, where=where)
    log, dt, seg_len, m = g.log, g.dt, g.seg_len, g.starts.size
    window = np.arange(seg_len)
    meas = np.stack([log["x_m"], log["y_m"], log["z_m"], log["roll_rad"], log["pitch_rad"], log["yaw_rad"]], axis=1)
    noise = noise_levels(meas, g.logged, where)
    check_command_delay(command_delay)
    cmd_f = advance_commands(np.asarray(log["frequency_hz"], dtype=float), int(command_delay))
    cmd_p = advance_commands(np.stack([log["pitch_plate_rad"], log["roll_plate_rad"]], axis=1), int(command_delay))
    start = {k: jnp.asarray(v) for k, v in start_values(base).items()}

    def segments(idx, counted):
        sl = idx[:, None] + window[None, :]
        return Segments(base=base, inertia=inertia, start=start, seeds=jnp.asarray(seed_states(log, idx, dt)),
                        freq=jnp.asarray(cmd_f[sl]), plate=jnp.asarray(cmd_p[sl]), meas=jnp.asarray(meas[sl]),
                        weight=jnp.asarray(counted, dtype=float)[..., None], dt=dt, substeps=int(substeps))

    prob = segments(g.starts, g.fit_counted)
    n_par = len(FLIGHT_PARAMETERS)
    x, sigma, iters, history, reason = _two_passes(prob, noise, n_par + 12 * m, max_iterations, callback)
    values, std, corr_block, s2, r, bounded, free = _uncertainty(prob, x, sigma, base, start)
    ratio = sigma / noise
    identified = with_values(base, {k: jnp.asarray(v) for k, v in values.items()})
    offset = np.array([values["roll_offset"], values["pitch_offset"]])
    hold = segments(g.hold_starts, g.hold_counted & (window < g.n_init)[None, :])
    models = {"identified": (identified, offset), "start": (base, np.zeros(2))}
    validation, pred_hold = _held_out(hold, g.hold_counted, g.n_init, jnp.asarray(sigma), models)
    validation["horizon"] = float((seg_len - g.n_init) * dt)
    validation["init_window"] = float(g.n_init * dt)
    t = log["time_s"]
    fit = {
        "iterations": iters, "reason": reason, "cost": history, "residual_sigma": math.sqrt(s2),
        "residual_over_noise": dict(zip(POSE_CHANNELS, map(float, ratio))), "not_identified": free,
        "command_delay_samples": int(command_delay),
        "segments": int(m), "segment": float(seg_len * dt), "samples_fitted": int(g.fit_counted.sum()),
        "samples_dropped": int((~g.logged).sum()),
        "sample_rate": 1.0 / dt, "parameters": n_par, "nuisance_parameters": 12 * m,
        "correlation": {"names": list(FLIGHT_PARAMETERS), "matrix": corr_block.tolist()},
        "seconds": time.perf_counter() - t0,
    }
    details = {"cycle_averaged": identified.to_dict(), "fit": fit, "noise": dict(zip(POSE_CHANNELS, map(float, sigma))),
               "validation": validation, "notes": _fit_notes(values, start_values(base), bounded, free, ratio)}
    # residuals in measurement units, per channel (NaN at dropped samples: gaps in the plots)
    arrays = {"fit_time": t[g.starts[:, None] + window],
              "residuals": np.where(g.fit_counted[..., None], r.reshape(m, seg_len, 6) * sigma, np.nan),
              "hold_time": t[g.hold_starts[:, None] + window],
              "hold_meas": np.where(g.hold_counted[..., None], np.asarray(hold.meas), np.nan),
              "hold_pred": pred_hold, "init_window": float(g.n_init * dt)}
    return FitReport.of("flight_log", where, values, std, FLIGHT_PARAMETERS, details, arrays)


def command_delay_scan(log: dict[str, np.ndarray], delays=range(0, 11), **options) -> tuple[int, dict[int, float]]:
    """Fit the log with each command delay of ``delays`` [samples]
    (:func:`identify_flight_log`, ``options`` passed on) and return the one
    whose residuals come closest to the log's own noise level (the lowest
    mean square of ``fit.residual_over_noise``: that level is the same for
    every delay, so the scores compare) and every delay's score. Each fit
    after the first reuses its compiled program (a few seconds each)."""
    delays = [int(d) for d in delays]
    if not delays:
        raise ConfigError("delays: need at least one command delay to try")
    scores = {}
    for d in delays:
        fit = identify_flight_log(log, command_delay=d, **options).details["fit"]
        ratio = np.array(list(fit["residual_over_noise"].values()))
        scores[d] = float(np.mean(ratio**2))
    return min(scores, key=scores.get), scores
