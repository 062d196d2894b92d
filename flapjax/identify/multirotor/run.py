"""Identify a multirotor's proximity and drag coefficients from a hover log.

:func:`fit_hover` fits the hover model of
:mod:`flapjax.identify.multirotor.model` to the accelerometer by gradient
(L-BFGS in Gauss-Newton whitened coordinates) in two passes: unit weights,
then each axis weighted by its residual standard deviation; standard
deviations from the loss curvature with the residual variance of the data;
the last ``validation_fraction`` of the log held out and predicted. The log
is padded to one of a few lengths (:func:`padded_length`, the padded rows
masked out) so that logs of different lengths share one compiled fit.
Which coefficients a log cannot excite (:func:`excitation`), which are
weakly identified and the notes of
:mod:`~flapjax.identify.multirotor.fit_checks`: docs/data_formats.md,
"Multirotor hover logs".
"""

from __future__ import annotations

import functools
import math
import time as _time
from typing import Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from flapjax import rotor
from flapjax.identify import losses as L
from flapjax.identify.fit import Convergence, Trainable, fit, make_fit_step, make_optimizer, split
from flapjax.identify.multirotor import model as M
from flapjax.identify.multirotor.model import REPORTED, UNITS
from flapjax.sim.multirotor.log_replay import HoverInputs, hover_inputs
from flapjax.data.hover_log import HoverLog
from flapjax.identify.fit_report import FitReport
from flapjax.identify.multirotor.fit_checks import accel_noise_level, correlated_parameters, fit_notes
from flapjax.identify.solve import channel_rms, residual_sigma, reweighted_passes
from flapjax.validation import ConfigError

#: Samples skipped at the start (the actuator replay settles) [s].
SETTLE_S = 0.5


def excitation(prof: rotor.RotorProfile, inputs: HoverInputs) -> dict[str, str]:
    """Parameters the rows of ``inputs`` cannot identify -> why."""
    radius = np.asarray(prof.radius)
    h = np.asarray(inputs.proximity.ground_distance) / radius
    d = np.asarray(inputs.proximity.wall_distance) / radius
    v = np.abs(np.asarray(inputs.velocity_body))
    out: dict[str, str] = {}
    if int(np.sum(np.any(h < 3.0, axis=1))) < 50:
        out["ground_coeff"] = "fewer than 50 samples with a rotor within 3 R of the ground"
    near = np.min(d, axis=1)
    if int(np.sum(near < 4.0)) < 50:
        for k in ("wall_thrust_coeff", "wall_lateral_coeff", "wall_fade_start", "wall_fade_width"):
            out[k] = "fewer than 50 samples with a rotor within 4 R of the wall"
    else:
        counts = np.histogram(near[np.isfinite(near)], bins=np.arange(1.0, 6.01, 0.5))[0]
        if int(np.sum(counts >= 50)) < 3:
            for k in ("wall_fade_start", "wall_fade_width"):
                out[k] = ("wall samples in fewer than three 0.5 R distance bands between 1 R and 6 R: the fade "
                          "range is not excited (all near-wall hovers sit in one regime)")
    for j, a in enumerate(M.AXES):
        if int(np.sum(v[:, j] > 0.3)) < 50:
            for k in (f"drag_linear_{a}", f"drag_quadratic_{a}"):
                out[k] = f"fewer than 50 samples with body speed beyond 0.3 m/s along {a}"
    return out


def gap_settle_time(prof: rotor.RotorProfile) -> float:
    """How long after a gap in a log the replayed actuator may still differ
    from the real one [s]: a full speed swing at the rate limit, then six
    time constants (the error below 0.3 % of the swing)."""
    return float(6.0 * np.max(prof.time_constant) + 1.0 / np.min(prof.rate_limit))


def after_gaps(t: np.ndarray, settle: float) -> np.ndarray:
    """(N,) bool: rows within ``settle`` [s] after a gap in the times ``t``
    (a step of more than one sample period, counted as
    :func:`~flapjax.data.sampling.sample_grid` counts it: dropped
    samples, whose commands the actuator replay does not know)."""
    steps = np.diff(t)
    gap_ends = np.flatnonzero(np.rint(steps / np.median(steps)) > 1) + 1
    out = np.zeros(t.shape[0], dtype=bool)
    for i in gap_ends:
        out[i:np.searchsorted(t, t[i] + settle)] = True
    return out


def padded_length(n: int) -> int:
    """The row count a log of ``n`` rows is padded to: one of a few sizes
    (1024 rows, then steps of a factor 2^(1/4) rounded up to 64 rows), at
    most 19 % plus 64 rows more than ``n``. Every compiled program of the
    fit depends on the row count, so logs of different lengths padded to one
    size share them (a session fitting many logs neither recompiles nor
    piles up programs)."""
    if n <= 1024:
        return 1024
    k = math.ceil(4.0 * math.log2(n / 1024.0) - 1e-9)
    return int(64 * math.ceil(1024.0 * 2.0 ** (k / 4.0) / 64.0))


class _Problem(eqx.Module):
    """One fit's fixed data: the profile, the inputs and measured specific
    force of the padded log, which rows are fitted, the held parameters and
    which names are trained."""

    prof: rotor.RotorProfile
    inputs: HoverInputs
    targets: Array
    fitted: Array
    nominal: dict[str, Array]
    names: tuple[str, ...] = eqx.field(static=True)
    log_names: tuple[str, ...] = eqx.field(static=True)


def _params(theta, pb: _Problem) -> dict[str, Array]:
    """Physical parameter dict of the trained vector ``theta`` (log space for
    :data:`~flapjax.identify.multirotor.model.LOG_SPACE`)."""
    out = dict(pb.nominal)
    for i, k in enumerate(pb.names):
        out[k] = jnp.exp(theta[i]) if k in pb.log_names else theta[i]
    return out


@jax.jit
def _predict(params, prof, inputs):
    return M.predict(prof, params, inputs)


@jax.jit
def _residuals(theta, scale, pb: _Problem):
    # compiled: an eager call would run the chain's value checks, which a
    # signed coefficient passing below zero during the fit fails
    data = L.Measurements(inputs=pb.inputs, targets=pb.targets, scale=scale, valid=pb.fitted)
    return L.residuals(lambda p, x: M.predict(pb.prof, p, x), _params(theta, pb), data)


@functools.partial(jax.jit, static_argnames="diagonal")
def _whitening(theta, scale, pb: _Problem, diagonal: bool = False):
    """(p, p) map z -> theta offset with unit Gauss-Newton curvature at
    ``theta`` (``diagonal``: unit diagonal only, a safe first stage)."""
    jac = jax.jacfwd(_residuals)(theta, scale, pb)
    h = jac.T @ jac
    if diagonal:
        d = jnp.diag(h)
        return jnp.diag(1.0 / jnp.sqrt(jnp.maximum(d, 1e-12 * jnp.max(d))))
    w, v = jnp.linalg.eigh(h)
    w = jnp.maximum(w, 1e-9 * jnp.max(w))
    return v / jnp.sqrt(w)


def _loss_z(params, data):
    """Least squares in whitened coordinates ``theta = base + transform z``."""
    pb, base, transform, scale = data
    r = _residuals(base + transform @ params["z"], scale, pb)
    return 0.5 * jnp.sum(r**2)


@functools.cache
def _step_fn():
    """One compiled L-BFGS step shared by every fit of a session."""
    return make_fit_step(_loss_z, make_optimizer("lbfgs"))


def _split_rows(prof: rotor.RotorProfile, log: HoverLog, validation_fraction: float):
    """``(t, settling, fit_rows, val_rows)``: times from the first sample [s],
    the rows settling after a gap, and the fitted and held-out (the last
    ``validation_fraction`` of the log) row indices."""
    t = log.time - log.time[0]
    edge = 12  # samples where the velocity window is one-sided
    settling = after_gaps(t, gap_settle_time(prof))
    usable = (t >= SETTLE_S) & (np.arange(t.shape[0]) < t.shape[0] - edge) & ~settling
    t_val = t[-1] * (1.0 - validation_fraction)
    fit_rows = np.nonzero(usable & (t < t_val))[0]
    val_rows = np.nonzero(usable & (t >= t_val))[0]
    if fit_rows.size < 100:
        raise ConfigError(f"{log.path}: only {fit_rows.size} usable rows before the validation segment; "
                          "log a longer flight")
    return t, settling, fit_rows, val_rows


def _problem(prof, log: HoverLog, padded: HoverInputs, fit_rows: np.ndarray, trainable_names: list[str]):
    """``(problem, start theta)`` of the padded log with ``trainable_names`` trained."""
    start = M.initial_values()
    signed = [k for k in trainable_names if k not in M.LOG_SPACE]
    _, nominal = split(start, trainable_names, signed=signed)
    n_rows, n_padded = log.n_samples, padded.dt.shape[0]
    targets = np.zeros((n_padded, 3))
    targets[:n_rows] = log.specific_force
    names = tuple(trainable_names)
    pb = _Problem(prof=prof, inputs=padded, targets=jnp.asarray(targets), fitted=jnp.asarray(_mask(n_padded, fit_rows)),
                  nominal={k: jnp.asarray(v) for k, v in nominal.values.items()}, names=names,
                  log_names=tuple(k for k in names if k in M.LOG_SPACE))
    theta = jnp.asarray([np.log(start[k]) if k in M.LOG_SPACE else start[k] for k in names])
    return pb, theta


def _fit(pb: _Problem, theta, fit_rows: np.ndarray, steps: int, progress):
    """Pass 1 with unit weights (from each start, keeping the best), pass 2
    with each axis weighted by its residual standard deviation. Returns
    ``(theta, residual std (3,) after pass 2, the last fit's result, steps
    taken)``."""
    names = pb.names
    step_fn = _step_fn()
    history: list[float] = []
    cb = None if progress is None else (lambda k, v: (history.append(v), progress(len(history), v)))

    def stage(theta, scale, diagonal, n_steps):
        transform = _whitening(theta, scale, pb, diagonal=diagonal)
        z_train, z_nominal = split({"z": np.zeros(theta.shape[0])}, ["z"], signed=["z"])
        conv = Convergence(max_steps=n_steps, grad_tol=1e-9, rtol=1e-13, patience=4)
        res = fit(_loss_z, z_train, z_nominal, (pb, theta, transform, scale), convergence=conv,
                  step_fn=step_fn, progress=cb)
        return theta + transform @ res.params["z"], res

    # The fade window makes the loss non-convex in (d_fade, d_max): each start
    # runs a diagonally scaled stage into its basin, then a Gauss-Newton
    # whitened stage; the best start is refined with per-axis residual weights.
    starts = [None]
    if "wall_fade_start" in names and "wall_fade_width" in names:
        starts += [(1.4, 1.5), (2.6, 3.0)]

    def run_pass(state, scale):
        if state is not None:
            return stage(state[0], scale, False, steps)
        best = None
        for st in starts:
            th = theta
            if st is not None:
                th = th.at[names.index("wall_fade_start")].set(np.log(st[0]))
                th = th.at[names.index("wall_fade_width")].set(np.log(st[1]))
            th, _ = stage(th, scale, True, min(steps, 60))
            th, res = stage(th, scale, False, steps)
            value = float(jnp.sum(_residuals(th, scale, pb) ** 2))
            if best is None or value < best[0]:
                best = (value, th, res)
        return best[1], best[2]

    def sigma_of(state, scale):
        resid = np.asarray(_residuals(state[0], jnp.ones(3), pb)).reshape(-1, 3)[fit_rows]
        return jnp.asarray(residual_sigma(resid, centered=True))

    done = reweighted_passes(run_pass, sigma_of, jnp.ones(3), max_passes=2)
    return done.state[0], done.sigma, done.state[1], len(history)


def _uncertainty(pb: _Problem, theta, scale, n_fit: int):
    """``(fitted params, values, std, correlation (p, p))`` at ``theta``;
    ``wall_range`` = fade start + width, with their covariance."""
    names = pb.names
    fitted = _params(theta, pb)
    trainable, _ = split({k: float(fitted[k]) for k in names}, names,
                         signed=[k for k in names if k not in M.LOG_SPACE])

    def theta_of(tr: Trainable):  # the trained vector in the fit's order
        return jnp.stack([tr.log[k] if k in pb.log_names else tr.linear[k] for k in names])

    unc = L.gauss_newton_uncertainty(lambda tr: _residuals(theta_of(tr), scale, pb), trainable,
                                     n_residuals=3 * n_fit)
    params = {k: float(v) for k, v in fitted.items()}
    std = {k: float(v) for k, v in unc.std.items()}
    values = dict(params)
    values["wall_range"] = params["wall_fade_start"] + params["wall_fade_width"]
    if "wall_fade_start" in std and "wall_fade_width" in std:
        s1, s2 = std["wall_fade_start"], std["wall_fade_width"]
        rho = L.correlation_among(unc, ["wall_fade_start", "wall_fade_width"])[0, 1]
        std["wall_range"] = math.sqrt(max(s1 * s1 + s2 * s2 + 2.0 * rho * s1 * s2, 0.0))
    return fitted, values, std, L.correlation_among(unc, list(names))


def _weak(values: dict, std: dict, names, correlation) -> dict[str, str]:
    """Reported parameters whose std exceeds their magnitude or that correlate strongly."""
    weak = {k: f"standard deviation {std[k]:.3g} exceeds the value {values[k]:.3g}" for k in REPORTED
            if k in std and std[k] > abs(values[k]) and not k.startswith("accel_bias")}
    shown = [("wall_range" if k == "wall_fade_width" else k) for k in names]
    for k, why in correlated_parameters(shown, correlation).items():
        weak[k] = f"{weak[k]}; {why}" if k in weak else why
    return weak


def _validation(log: HoverLog, val_rows, pred_all, default_pred, sigma, noise, fraction) -> dict[str, Any]:
    """Prediction error on the held-out rows, per axis, of the fitted and the default coefficients."""
    validation: dict[str, Any] = {"fraction": fraction, "rows": int(val_rows.size)}
    if val_rows.size:
        meas = np.asarray(log.specific_force)[val_rows]
        rms = channel_rms(pred_all[val_rows] - meas)
        validation.update(
            start_s=float(log.time[val_rows[0]]), end_s=float(log.time[val_rows[-1]]),
            rms_mps2=rms.tolist(), rms_over_sigma=(rms / sigma).tolist(), rms_over_noise=(rms / noise).tolist(),
            mean_error_mps2=np.mean(pred_all[val_rows] - meas, axis=0).tolist(),
            rms_default_coefficients_mps2=channel_rms(default_pred[val_rows] - meas).tolist(),
        )
    return validation


def _mask(n: int, rows) -> np.ndarray:
    """(n,) bool, True at the indices ``rows``."""
    out = np.zeros(n, dtype=bool)
    out[rows] = True
    return out


def fit_hover(prof: rotor.RotorProfile, log: HoverLog, *, validation_fraction: float = 0.2,
              quick: bool = False, max_steps: int | None = None,
              progress: Callable[[int, float], None] | None = None) -> FitReport:
    """Fit the hover model to ``log``: the
    :class:`~flapjax.identify.fit_report.FitReport` of every reported
    coefficient (see :func:`run_hover_identification`), with the time,
    measured and predicted specific force and fit/validation masks as its arrays."""
    if not (0.0 <= validation_fraction < 0.9):
        raise ConfigError(f"validation_fraction: must be in [0, 0.9), got {validation_fraction!r}")
    if log.thrust_command.shape[1] != prof.n_rotors:
        raise ConfigError(f"robot: the log has {log.thrust_command.shape[1]} thrust columns, the profile "
                          f"{prof.name!r} has {prof.n_rotors} rotors")
    t0 = _time.perf_counter()
    n_rows = log.n_samples
    padded = hover_inputs(prof, log, length=padded_length(n_rows))
    inputs = padded.rows(slice(0, n_rows))
    t, settling, fit_rows, val_rows = _split_rows(prof, log, validation_fraction)
    held = excitation(prof, inputs.rows(fit_rows))
    trainable_names = [k for k in M.PARAMETERS if k not in held]
    pb, theta = _problem(prof, log, padded, fit_rows, trainable_names)
    steps = (40 if quick else 200) if max_steps is None else int(max_steps)
    theta, scale, result, n_steps = _fit(pb, theta, fit_rows, steps, progress)
    fitted, values, std, correlation = _uncertainty(pb, theta, scale, int(fit_rows.size))
    not_identified = {("wall_range" if k == "wall_fade_width" else k): v for k, v in held.items()}
    reported_std = {k: None if k in not_identified else std.get(k) for k in REPORTED}
    pred_all = np.asarray(_predict(fitted, prof, padded))[:n_rows]
    meas_np = np.asarray(log.specific_force)
    sigma = np.asarray(scale)
    default_pred = np.asarray(_predict({**M.initial_values(), **{f"accel_bias_{a}": values[f"accel_bias_{a}"]
                                                                 for a in M.AXES}}, prof, padded))[:n_rows]
    noise = accel_noise_level(t, meas_np)
    details = dict(
        robot=prof.name,
        not_identified=not_identified, weakly_identified=_weak(values, std, trainable_names, correlation),
        validation=_validation(log, val_rows, pred_all, default_pred, sigma, noise, validation_fraction),
        fit={"rows": int(fit_rows.size), "samples_dropped": int(round(t[-1] / log.dt)) + 1 - t.shape[0],
             "rows_settling_after_gaps": int(settling.sum()), "steps": n_steps, "converged": bool(result.converged),
             "reason": result.reason, "final_loss": float(result.final_loss) / max(int(fit_rows.size) * 3, 1),
             "residual_std_mps2": sigma.tolist(),
             "residual_rms_mps2": channel_rms(pred_all[fit_rows] - meas_np[fit_rows]).tolist(),
             "accel_noise_std_mps2": noise.tolist(), "residual_over_noise": (sigma / noise).tolist(),
             "parameters": list(trainable_names),
             "correlation": {"names": list(trainable_names), "matrix": correlation.tolist()},
             "seconds": _time.perf_counter() - t0},
        scene=dict(log.scene),
        notes=fit_notes(values, reported_std, float(prof.mass), sigma / noise),
    )
    arrays = {"time": log.time, "measured": meas_np, "predicted": pred_all, "fit": _mask(t.shape[0], fit_rows),
              "validation": _mask(t.shape[0], val_rows),
              "ground_distance": np.asarray(inputs.proximity.ground_distance),
              "wall_distance": np.asarray(inputs.proximity.wall_distance), "radius": np.asarray(prof.radius)}
    return FitReport.of("hover", log.path, {k: values[k] for k in REPORTED}, reported_std, UNITS, details, arrays)

