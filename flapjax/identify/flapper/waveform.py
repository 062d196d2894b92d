"""Per-wing physical parameters from a phase-resolved stand record.

Cycle means hide what the wing's pitch dynamics do within a cycle: over 15 to
45 Hz the cycle-mean F_z changes by 0.2-2.6 % of itself per unit of log hinge
stiffness and its shape in frequency is nearly that of a lift scale plus a
sensor offset, so a table of cycle means with a millinewton of noise leaves
the hinge stiffness and the wing inertia undetermined (relative standard
deviations of several hundred and tens of percent). The force a sensor under
the fixed robot reads *within* the cycle is another matter: the passive pitch
sets the phase and height of the lift peaks, the wings' inertia the shape of
the reaction between them; phase-averaged into bins, a few conditions fix the
lift scale, the hinge stiffness and the wings' rotational inertia to a few
percent or better.

:class:`WaveformRollout` is that reading as a differentiable function of the
parameters: fixed-base worlds (one per condition) run from a periodic start;
at every step the sensor reads the aerodynamic force minus the rate of change
of the robot's linear momentum (``F_aero - dP/dt``, ``P = sum_i m_i v_i``, what a
tared force sensor under the robot measures) and, about the robot's centre
of mass at rest, the aerodynamic moment minus the rate of change of the
angular momentum plus the moment of the weight shifted by the moving plate
and wings;
the readings are averaged in the record's phase bins over the whole cycles
after a transient.
:func:`fit_waveform` fits the parameters (log space) and one sensor offset per
channel by Levenberg-Marquardt with forward-mode Jacobians, weighting each
channel by its residual standard deviation, with Gauss-Newton standard
deviations and the prediction error on held-out conditions.
:func:`flapjax.identify.flapper.waveform_report.run_waveform_identification`
is ``flapjax identify --data FILE`` for such a record.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.data import DataError
from flapjax.identify.flapper.physical import (
    nominal_physical,
    with_physical,
    with_wing_inertia,
)
from flapjax.identify.flapper.waveform_format import StandWaveform
from flapjax.identify.levenberg_marquardt import levenberg_marquardt
from flapjax.identify.losses import gauss_newton_covariance
from flapjax.sim import flapper as fl
from flapjax.sim.rollout import remat
from flapjax.validation import ConfigError

__all__ = [
    "READING_COLUMNS",
    "WAVEFORM_PARAMETERS",
    "Momenta",
    "WaveformRollout",
    "bin_edges",
    "fit_waveform",
    "momenta",
    "sensor_waveform",
]

#: Parameters :func:`fit_waveform` can fit (positive, fitted in log space):
#: the per-wing model's lift scale, hinge stiffness and damping, moment scale
#: and ``wing_inertia_scale``, a factor on the wings' rotational inertia [-].
WAVEFORM_PARAMETERS = ("lift_scale", "hinge_stiffness", "wing_inertia_scale", "hinge_damping", "moment_scale")

#: Most fitting passes (each reweighs the channels by the last residuals).
MAX_PASSES = 6

#: A pass whose channel weights are within this fraction of its residual
#: standard deviations ends the reweighting.
WEIGHT_TOLERANCE = 0.05

#: Units of the parameters in reports.
UNITS = {"lift_scale": "-", "hinge_stiffness": "N m/rad", "wing_inertia_scale": "-",
         "hinge_damping": "N m s/rad", "moment_scale": "-"}


#: Output columns of :func:`sensor_waveform` (body axes at rest; moments
#: about the robot's centre of mass at rest).
READING_COLUMNS = ("fx_n", "fy_n", "fz_n", "mx_nm", "my_nm")


class WaveformRollout(eqx.Module):
    """Phase-binned sensor reading of fixed-base worlds as a differentiable
    function of per-wing physical parameters.

    Attributes:
      robot: fixed-base per-wing robot.
      params: batched FlapperParams, one world per condition (m).
      centres: (m, B) phase-bin centres per condition [rad]; NaN pads
        conditions with fewer bins.
      lever: (3,) robot centre of mass at rest minus base origin [m] (the
        moments' reference point).
      n_steps, discard_steps: run length and transient (static).
    """

    robot: fl.FlapperRobot
    params: fl.FlapperParams
    centres: jax.Array
    lever: jax.Array
    n_steps: int = eqx.field(static=True)
    discard_steps: int = eqx.field(static=True)

    @classmethod
    def make(cls, frequencies, plates, centres, *, duration: float, discard: float, robot=None) -> WaveformRollout:
        robot = fl.make_robot("fixed", "wing", backend="rigid") if robot is None else robot
        n_steps = round(duration / robot.dt)
        discard_steps = round(discard / robot.dt)
        if not 1 <= discard_steps < n_steps:
            raise ConfigError(f"discard: must lie in (0, duration={duration}) s, got {discard}")
        params = fl.sweep_params(np.asarray(frequencies, dtype=float), plate=np.asarray(plates, dtype=float),
                                 robot=robot)
        dtype = robot.model.body_mass.dtype
        centres = jnp.asarray(centres, dtype=dtype)
        lever = jnp.asarray(fl.robot_com_offset(), dtype=dtype)
        return cls(robot=robot, params=params, centres=centres, lever=lever, n_steps=n_steps,
                   discard_steps=discard_steps)

    def __call__(self, values: Mapping[str, jax.Array]) -> jax.Array:
        """(m, B, 5) bin means of the sensor reading (:data:`READING_COLUMNS`:
        F_x, F_y, F_z [N], M_x, M_y [N m]); NaN where a condition has no bin."""
        values = dict(values)
        robot = self.robot
        if "wing_inertia_scale" in values:
            robot = with_wing_inertia(robot, values.pop("wing_inertia_scale"))
        params = with_physical(self.params, values)
        return sensor_waveform(robot, params, self.centres, self.n_steps, self.discard_steps, self.lever)


def sensor_waveform(robot: fl.FlapperRobot, params: fl.FlapperParams, centres: jax.Array, n_steps: int,
                    discard_steps: int, lever: jax.Array) -> jax.Array:
    """(m, B, 5) phase-bin means of what a tared six-axis sensor under the
    fixed robot reads (:data:`READING_COLUMNS`), for the m worlds of
    ``params`` (leading axis m) and bin centres ``centres`` (m, B) [rad]:

    - force ``F_aero - dP/dt`` [N], with ``P = sum_i m_i v_i`` the bodies'
      linear momentum;
    - moment about ``c``, the robot's centre of mass at rest (base origin
      plus ``lever`` (3,) [m]): ``M_aero,c - dH_c/dt + (sum_i m_i x_i - M c)
      x g`` [N m], with ``H_c`` the bodies' angular momentum about ``c`` and
      the last term the moment of the weight moved by the plate and the
      wings (zero at rest with level plates, where the sensor is tared); x
      and y components.

    Step k stands for the stroke drive phases ``theta_k +- pi f dt``
    (``theta_k = 2 pi frac(f dt k + offset) + phase``), shared among the
    bins (:func:`bin_edges`) it overlaps, so a bin mean is the average over
    the bin's phase interval, not over the steps that happen to fall in it;
    only the whole cycles after ``discard_steps`` count
    (:func:`flapjax.sim.flapper.cycle_window`).
    The momentum rates are central differences; over a periodic cycle they
    average to zero, so the bins average to the cycle-mean aerodynamic load
    (plus the cycle-mean moment of the wings' weight).
    """
    dt = robot.dt
    m = robot.model
    state = jax.vmap(lambda p: fl.init_state(robot, p))(params)
    one_step = jax.vmap(lambda p, s: fl.step(robot, p, s))

    def about_c(d):  # the base is fixed: c = base origin + lever at every step
        return momenta(m, d, d.xpos[robot.base_body] + lever.astype(d.xpos.dtype))

    def body(s, _):
        new, dg = one_step(params, s)
        # new.data holds the kinematics and velocities of the step's start, when the loads were computed
        return new, (dg.force_world, dg.moment_world, jax.vmap(about_c)(new.data))

    _, (force, moment, mom) = jax.lax.scan(remat(body), state, None, length=n_steps + 1)
    rate = lambda x: (x[2:] - x[:-2]) / (2.0 * dt)  # steps 1 .. n_steps - 1
    f = force[1:n_steps]
    m_c = moment[1:n_steps] - jnp.cross(lever, f)  # aero moment about c (from the base origin)
    weight = jnp.cross(mom.first_moment[1:n_steps], m.opt.gravity.astype(f.dtype))
    moment_reading = m_c - rate(mom.angular) + weight
    reading = jnp.concatenate([f - rate(mom.linear), moment_reading[..., :2]], axis=-1)
    reading = jnp.concatenate([jnp.zeros_like(reading[:1]), reading], axis=0)  # step 0: outside the window
    k = jnp.arange(n_steps)
    lo, hi = bin_edges(centres)

    def bins(f, phase0, offset, lo_b, hi_b, r):
        theta = 2.0 * jnp.pi * jnp.mod(f * dt * k + offset, 1.0) + phase0
        half = jnp.pi * f * dt  # each step stands for the phase interval theta +- half
        w = sum(jnp.clip(jnp.minimum(hi_b[None], theta[:, None] + s + half)
                         - jnp.maximum(lo_b[None], theta[:, None] + s - half), 0.0, None)
                for s in (-2.0 * jnp.pi, 0.0, 2.0 * jnp.pi))  # (T, B) phase overlap [rad]
        w = w * fl.cycle_window(f, n_steps, discard_steps, dt).astype(r.dtype)[:, None]
        count = jnp.sum(w, axis=0)
        mean = (w.T @ r) / jnp.where(count > 0, count, 1.0)[:, None]
        return jnp.where((count > 0)[:, None], mean, jnp.nan)

    return jax.vmap(bins, in_axes=(0, 0, 0, 0, 0, 1))(params.stroke.frequency, params.stroke.phase,
                                                      state.phase_offset, lo, hi, reading)


class Momenta(NamedTuple):
    """Momenta of a world's bodies (world frame) about a point ``c``."""

    linear: jax.Array        # (3,) P = sum_i m_i v_i [kg m/s]
    angular: jax.Array       # (3,) H_c = sum_i (I_i w_i + m_i (x_i - c) x v_i) [kg m^2/s]
    first_moment: jax.Array  # (3,) sum_i m_i (x_i - c) [kg m]


def momenta(m, d, point=None) -> Momenta:
    """:class:`Momenta` about ``point`` (3,) [m] (default the world origin)
    of the bodies' centres of mass ``x_i`` (``d.xipos``), from ``d.cvel``
    (``[w; v]``, ``v`` the velocity at the subtree CoM of the body's root,
    MJX's convention), with ``I_i`` the body inertia (``m.body_inertia``,
    principal axes ``d.ximat``) in the world frame. A point near the bodies
    keeps ``H_c`` free of the round-off of a large ``c x P``."""
    root = np.asarray(m.body_rootid)
    w, v = d.cvel[:, :3], d.cvel[:, 3:]
    v_com = v + jnp.cross(w, d.xipos - d.subtree_com[root])
    mass = m.body_mass.astype(v_com.dtype)
    arm = d.xipos if point is None else d.xipos - point
    rot = d.ximat.reshape(-1, 3, 3)
    spin = jnp.einsum("bij,bj->bi", rot, m.body_inertia.astype(v_com.dtype) * jnp.einsum("bji,bj->bi", rot, w))
    return Momenta(linear=mass @ v_com, angular=jnp.sum(spin, axis=0) + mass @ jnp.cross(arm, v_com),
                   first_moment=mass @ arm)


def bin_edges(centres: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(lo, hi)``, each (m, B): the phase bins around ``centres`` (m, B)
    [rad] (NaN: no bin): each bin reaches halfway to its neighbours on the
    circle (equal-width bins for equally spaced centres); ``lo`` may be
    negative and ``hi`` above 2 pi where a bin straddles 0. A missing bin
    gets ``lo = hi``."""
    c = jnp.asarray(centres)
    order = jnp.argsort(jnp.where(jnp.isnan(c), jnp.inf, c), axis=1)
    sc = jnp.take_along_axis(c, order, axis=1)
    n = jnp.sum(~jnp.isnan(c), axis=1, keepdims=True)
    idx = jnp.arange(c.shape[1])[None]
    valid = idx < n
    # neighbours on the circle among the valid sorted centres
    prev = jnp.take_along_axis(sc, jnp.where(idx == 0, n - 1, idx - 1), axis=1) - jnp.where(idx == 0, 2 * jnp.pi, 0.0)
    nxt = jnp.take_along_axis(sc, jnp.where(idx == n - 1, 0, idx + 1), axis=1) + jnp.where(idx == n - 1, 2 * jnp.pi, 0.0)
    lo_s = jnp.where(valid, 0.5 * (prev + sc), 0.0)
    hi_s = jnp.where(valid, 0.5 * (sc + nxt), 0.0)
    inverse = jnp.argsort(order, axis=1)
    return jnp.take_along_axis(lo_s, inverse, axis=1), jnp.take_along_axis(hi_s, inverse, axis=1)


# ---------------------------------------------------------------------------
# The fit
# ---------------------------------------------------------------------------


class _Problem(eqx.Module):
    """What the model's predictions need: the rollout and where each row sits."""

    rollout: WaveformRollout
    cond: jax.Array      # (n,) condition of each row
    slot: jax.Array      # (n,) bin of each row within its condition
    channel: jax.Array   # (C,) output column (x, y, z) of each channel
    names: tuple = eqx.field(static=True)
    nominal: dict

    def predict(self, log_values: jax.Array) -> jax.Array:
        """(n, C) model readings (no offsets) at log-space parameters."""
        values = {k: self.nominal[k] * jnp.exp(log_values[i]) for i, k in enumerate(self.names)}
        out = self.rollout(values)
        return out[self.cond, self.slot][:, self.channel]


@eqx.filter_jit
def _predict(x: jax.Array, prob: _Problem) -> jax.Array:
    return prob.predict(x)


@eqx.filter_jit
def _predict_jacobian(x: jax.Array, prob: _Problem) -> tuple[jax.Array, jax.Array]:
    return prob.predict(x), jax.jacfwd(prob.predict)(x)


def _split_rows(cond: np.ndarray, n_conditions: int, holdout_every: int) -> np.ndarray:
    """(n,) bool: rows of the fitted conditions; every ``holdout_every``-th
    condition (counting from 1) is held out when at least one stays."""
    if holdout_every < 1 or n_conditions < 2:
        return np.ones(cond.shape, dtype=bool)
    held = [c for c in range(n_conditions) if (c + 1) % holdout_every == 0]
    if len(held) == n_conditions:
        held = []
    return ~np.isin(cond, held)


def fit_waveform(
    data: StandWaveform,
    *,
    parameters=("lift_scale", "hinge_stiffness", "wing_inertia_scale"),
    duration: float = 0.35,
    discard: float = 0.15,
    holdout_every: int = 4,
    max_iterations: int = 20,
    start: Mapping[str, float] | None = None,
    robot=None,
    echo: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fit per-wing physical parameters and the sensor offsets to a
    phase-resolved stand record.

    Args:
      data: the record (:func:`~flapjax.identify.flapper.waveform_format.load_stand_waveform`).
      parameters: names from :data:`WAVEFORM_PARAMETERS` (positive, log space).
      duration, discard: rollout length and discarded transient per
        condition [s] (after the model's periodic start).
      holdout_every: every this-many-th condition is held out of the fit
        and predicted (0: none).
      max_iterations: Levenberg-Marquardt iterations per pass (the first
        pass weighs the channels by their spread, each next one by the
        previous residual standard deviations, until a pass's weights match
        its residuals within :data:`WEIGHT_TOLERANCE`; at most
        :data:`MAX_PASSES`).
      start: start values (default: the model's nominal ones, 1 for
        ``wing_inertia_scale``).
      robot: fixed-base per-wing robot (default: the pure-JAX joint tree).
      echo: progress messages.

    Returns a dict with ``values``, ``std``, ``relative_std`` (per
    parameter), ``offsets`` and ``offsets_std`` (per channel, ``fz_offset``
    ...), ``correlation``, ``residual_std`` (per channel, [N] or [N m]),
    ``validation`` (held-out conditions: RMS error per channel, also relative
    to the residual standard deviation and to the measured RMS), the
    measured and fitted readings, ``iterations``, ``reason``, ``seconds``.
    """
    t0 = time.perf_counter()
    say = echo or (lambda s: None)
    parameters = tuple(parameters)
    for p in parameters:
        if p not in WAVEFORM_PARAMETERS:
            raise ConfigError(f"parameters: unknown {p!r}; allowed: {list(WAVEFORM_PARAMETERS)}")
    if not parameters or len(set(parameters)) != len(parameters):
        raise ConfigError(f"parameters: need distinct names, got {list(parameters)}")
    freqs, plates = data.conditions()
    m = freqs.shape[0]
    slots = np.zeros(data.n, dtype=np.int64)
    n_bins = max(int(np.sum(data.condition == c)) for c in range(m))
    centres = np.full((m, n_bins), np.nan)
    for c in range(m):
        rows = np.nonzero(data.condition == c)[0]
        slots[rows] = np.arange(rows.size)
        centres[c, :rows.size] = data.phase[rows]
    fit_rows = _split_rows(data.condition, m, holdout_every)
    channels = data.channel_names
    y = data.targets()
    n_fit = int(fit_rows.sum()) * len(channels)
    n_unknown = len(parameters) + len(channels)
    if n_fit <= n_unknown:
        raise DataError(f"{data.source}: {n_fit} fitted value(s) for {n_unknown} unknowns (parameters and offsets); "
                        f"column 'phase_rad' needs more bins or conditions")
    rollout = WaveformRollout.make(freqs, plates, centres, duration=duration, discard=discard, robot=robot)
    nominal = nominal_physical(rollout.robot)
    nominal["wing_inertia_scale"] = 1.0
    nominal.update({k: float(v) for k, v in (start or {}).items() if k in WAVEFORM_PARAMETERS})
    for k in parameters:
        if not nominal[k] > 0:
            raise ConfigError(f"start: {k} must be > 0, got {float(nominal[k]):g}")
    column = {name: i for i, name in enumerate(READING_COLUMNS)}
    prob = _Problem(rollout=rollout, cond=jnp.asarray(data.condition), slot=jnp.asarray(slots),
                    channel=jnp.asarray([column[c] for c in channels]), names=parameters,
                    nominal={k: jnp.asarray(nominal[k]) for k in parameters})
    p = len(parameters)
    fy = y[fit_rows]

    def model(lv):
        return np.asarray(_predict(jnp.asarray(lv, dtype=jnp.float32), prob), dtype=float)[fit_rows]

    def model_jacobian(lv):
        pred, jac = _predict_jacobian(jnp.asarray(lv, dtype=jnp.float32), prob)
        return np.asarray(pred, dtype=float)[fit_rows], np.asarray(jac, dtype=float)[fit_rows]

    # The offsets are profiled out: each channel's offset is its mean
    # residual, so the residuals and the Jacobian have their channel means
    # removed and the steps move the physical parameters only.
    def residual(lv, scale):
        r = (model(lv) - fy) / scale
        return (r - r.mean(axis=0)).ravel()

    def jacobian(lv, scale):
        jc = model_jacobian(lv)[1] / scale[None, :, None]
        return (jc - jc.mean(axis=0, keepdims=True)).reshape(-1, p)

    scale = np.maximum(np.std(fy, axis=0), 1e-12)
    lv, iterations, reasons = np.zeros(p), 0, []
    # Iteratively reweighted: each pass weighs the channels by the residual
    # standard deviations of the previous one, until the weights a pass ran
    # with match its residuals (within WEIGHT_TOLERANCE); the estimate is
    # then the one whose covariance the curvature below describes.
    for pass_ in range(1, MAX_PASSES + 1):
        try:
            lv, _, _, it, _, reason = levenberg_marquardt(
                lambda z: residual(z, scale), lambda z: jacobian(z, scale), lv,
                max_iterations=max_iterations, cost_tol=None, step_tol=1e-3)
        except FloatingPointError:
            raise ConfigError("start: the fixed-base rollout gives non-finite readings at the start values "
                              f"{[float(nominal[k] * math.exp(v)) for k, v in zip(parameters, lv)]}; "
                              "choose other start values (start=...)") from None
        iterations += it
        reasons.append(reason)
        res = fy - model(lv)
        res -= res.mean(axis=0)  # the offsets take the channel means
        sigma = np.sqrt(np.sum(res**2, axis=0) / (fy.shape[0] * (1.0 - n_unknown / n_fit)))
        say(f"  pass {pass_}: {it} iteration(s), residual std " +
            ", ".join(f"{c} {s:.2e} {'N m' if c.startswith('m') else 'N'}" for c, s in zip(channels, sigma)))
        settled = pass_ > 1 and bool(np.all(np.abs(sigma / scale - 1.0) < WEIGHT_TOLERANCE))
        scale = np.maximum(sigma, 1e-12)
        if settled:
            break
    else:
        reasons.append(f"channel weights still changing after {MAX_PASSES} passes")
    # curvature at the optimum with the final weights, offsets as parameters
    pred, jac = model_jacobian(lv)
    off = np.mean(fy - pred, axis=0)
    x = np.concatenate([lv, off])
    r = ((pred + off - fy) / scale).ravel()
    E = np.kron(np.ones((fy.shape[0], 1)), np.diag(1.0 / scale))  # d r / d offset
    J = np.concatenate([(jac / scale[None, :, None]).reshape(-1, p), E], axis=1)
    cov, s2 = gauss_newton_covariance(r, J)
    std_x = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    denom = np.outer(std_x, std_x)
    corr = np.where(denom > 0, cov / np.where(denom > 0, denom, 1.0), 0.0)
    values = {k: float(nominal[k] * math.exp(x[i])) for i, k in enumerate(parameters)}
    std = {k: values[k] * float(std_x[i]) for i, k in enumerate(parameters)}
    offset_names = [f"{c.split('_')[0]}_offset" for c in channels]
    offsets = {k: float(x[p + j]) for j, k in enumerate(offset_names)}
    offsets_std = {k: float(std_x[p + j]) for j, k in enumerate(offset_names)}
    fitted = np.asarray(_predict(jnp.asarray(lv, dtype=jnp.float32), prob), dtype=float) + off
    validation = {}
    held = ~fit_rows
    if held.any():
        err = fitted[held] - y[held]
        for j, c in enumerate(channels):
            rms = float(np.sqrt(np.mean(err[:, j] ** 2)))
            meas = float(np.sqrt(np.mean(y[held, j] ** 2)))
            validation[c] = {"rms": rms, "relative_to_sigma": rms / float(sigma[j]),
                             "relative_to_measured": rms / meas if meas > 0 else float("nan")}
    return {
        "parameters": list(parameters),
        "values": values,
        "std": std,
        "relative_std": {k: float(std_x[i]) for i, k in enumerate(parameters)},
        "offsets": offsets,
        "offsets_std": offsets_std,
        "correlation": {"names": list(parameters) + offset_names, "matrix": corr.tolist()},
        "residual_std": {c: float(s) for c, s in zip(channels, sigma)},
        "residual_scale": float(math.sqrt(s2)),
        "channels": list(channels),
        "conditions": [{"frequency_hz": float(f), "pitch_plate_rad": float(pl[0]), "roll_plate_rad": float(pl[1]),
                        "held_out": bool(not fit_rows[data.condition == c][0])}
                       for c, (f, pl) in enumerate(zip(freqs, plates))],
        "validation": validation,
        "phase": data.phase.tolist(),
        "condition": data.condition.tolist(),
        "measured": y.tolist(),
        "fitted": fitted.tolist(),
        "start": {k: float(nominal[k]) for k in parameters},
        "duration": float(duration),
        "discard": float(discard),
        "iterations": int(iterations),
        "reason": "; ".join(reasons),
        "seconds": time.perf_counter() - t0,
    }


@eqx.filter_jit
def _predict_clean(rollout: WaveformRollout, values: Mapping[str, Any]) -> jax.Array:
    return rollout({k: jnp.asarray(v) for k, v in values.items()})
