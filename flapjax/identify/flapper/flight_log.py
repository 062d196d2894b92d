"""Flight-log identification: the cycle-averaged model fitted to a free-flight
log (motion-capture pose and the logged commands).

The log (:data:`LOG_COLUMNS`, documented in ``docs/data_formats.md``,
section "Flapper flight logs") holds the pose at a fixed rate and the
commands the robot flew with (flapping frequency, plate angles), each held
until the next sample. The cycle-averaged model
(:func:`flapjax.aero.cycle_averaged_wrench`) flies a rigid body of the
robot's mass and inertia (from the MJCF; not identified) over the logged
commands.

Multiple shooting: the fitted part of the log is cut into segments of
``segment`` seconds; each starts from its own initial state (position,
velocity, attitude, body rates), seeded from the log (finite differences)
and fitted with the model, so a long log never has to be flown open loop
(the open-loop hover is unstable). Fitted together: the model's ``k_f``,
``k_v``, ``k_roll``, ``k_pitch``, ``D_w`` (x and y; yaw is not actuated, its
``D_w`` keeps the nominal value), the speed-to-moment coupling ``L_v``,
``M_u``, a constant roll/pitch offset of the motion-capture attitude and
every segment's initial state. The residuals (measured minus predicted pose,
each channel divided by its noise level, estimated from the log's second
differences) are minimized by Levenberg-Marquardt steps on the Jacobian of
the residuals through the rollouts (forward-mode autodiff); standard
deviations come from the Gauss-Newton covariance ``sigma^2 (J^T J)^-1``
(nuisance states included, so the parameters' intervals account for them).

Held out: the last ``holdout`` seconds are not fitted; each of its segments
starts from a state fitted to its first ``init_window`` seconds only (model
parameters fixed), and the model predicts the rest: the RMS position and
attitude errors of that prediction are the validation, reported for the
identified and for the start (seed) model.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams, cycle_averaged_wrench, linearize_hover
from flapjax.identify.data import Column, DataError, read_table
from flapjax.identify.results import lock_output_dir, to_jsonable, versions, write_json
from flapjax.validation import ConfigError, check_range

LOG_COLUMNS = (
    Column("time_s", description="sample time [s], strictly increasing, uniform"),
    Column("x_m", description="centre-of-mass position x, world frame (z up) [m]"),
    Column("y_m", description="centre-of-mass position y [m]"),
    Column("z_m", description="centre-of-mass position z [m]"),
    Column("roll_rad", description="attitude, ZYX Euler roll [rad]"),
    Column("pitch_rad", description="attitude, ZYX Euler pitch [rad]"),
    Column("yaw_rad", description="attitude, ZYX Euler yaw [rad]"),
    Column("frequency_hz", description="commanded flapping frequency, held until the next sample [Hz]"),
    Column("pitch_plate_rad", description="commanded pitch_joint angle delta_p, held [rad]"),
    Column("roll_plate_rad", description="commanded roll_joint angle delta_r, held [rad]"),
)

#: Identified model parameters: name -> (unit, CycleAveragedParams field or None).
FLIGHT_PARAMETERS = {
    "k_f": "N/Hz^2",
    "k_v": "N s/m",
    "k_roll": "N m/rad",
    "k_pitch": "N m/rad",
    "D_w_x": "N m s/rad",
    "D_w_y": "N m s/rad",
    "L_v": "N m s/m",
    "M_u": "N m s/m",
    "roll_offset": "rad",
    "pitch_offset": "rad",
}
_POSITIVE = ("k_f", "k_v", "k_roll", "k_pitch", "D_w_x", "D_w_y")
_LINEAR_SCALE = {"L_v": 1e-3, "M_u": 1e-3, "roll_offset": 1e-2, "pitch_offset": 1e-2}
# Scales of a segment's initial-state corrections: position, velocity, attitude, rates.
_STATE_SCALE = np.concatenate([np.full(3, 1e-3), np.full(3, 0.1), np.full(3, 1e-2), np.full(3, 1.0)])

DEFAULTS = {"segment": 0.4, "holdout": 1.5, "init_window": 0.1, "substeps": 2, "max_iterations": 40}
QUICK = {"max_iterations": 25}


# ---------------------------------------------------------------------------
# Rigid body under the averaged model
# ---------------------------------------------------------------------------


def quat_mul(a, b):
    """Hamilton product of (4,) quaternions (w, x, y, z)."""
    aw, ax, ay, az = a[0], a[1], a[2], a[3]
    bw, bx, by, bz = b[0], b[1], b[2], b[3]
    return jnp.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def quat_to_rot(q):
    """(3, 3) R_WB of a unit quaternion (w, x, y, z)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    return jnp.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def euler_to_quat(roll, pitch, yaw):
    """Quaternion (w, x, y, z) of ZYX Euler angles, ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    cr, sr = jnp.cos(roll / 2), jnp.sin(roll / 2)
    cp, sp = jnp.cos(pitch / 2), jnp.sin(pitch / 2)
    cy, sy = jnp.cos(yaw / 2), jnp.sin(yaw / 2)
    return jnp.stack([
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ], axis=-1)


def quat_to_euler(q):
    """ZYX Euler (roll, pitch, yaw) [rad] of a unit quaternion (w, x, y, z)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    roll = jnp.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = jnp.arcsin(jnp.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = jnp.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return jnp.stack([roll, pitch, yaw])


def rotvec_to_quat(v):
    """Quaternion of a rotation vector (angle * axis) [rad]; exact, smooth at 0."""
    angle2 = jnp.sum(v * v)
    angle = jnp.sqrt(angle2 + 1e-30)
    half = 0.5 * angle
    s = jnp.where(angle2 > 1e-12, jnp.sin(half) / angle, 0.5 - angle2 / 48.0)
    return jnp.concatenate([jnp.cos(half)[None], s * v])


def derivative(params: CycleAveragedParams, inertia, state, frequency, plate):
    """Time derivative of the rigid-body state (13,) = position (3) [m],
    velocity (3) [m/s] (world), quaternion (4) R_WB, body rates (3) [rad/s],
    under the averaged model's wrench and gravity; ``inertia`` (3, 3) [kg m^2]."""
    v, q, w = state[3:6], state[6:10], state[10:13]
    rot = quat_to_rot(q)
    loads = cycle_averaged_wrench(params, frequency=frequency, plate=plate, rot_world_body=rot, v_world=v, w_body=w)
    acc = loads.force_world / params.mass - jnp.array([0.0, 0.0, 1.0]) * params.gravity
    w_dot = jnp.linalg.solve(inertia, loads.torque_body - jnp.cross(w, inertia @ w))
    q_dot = 0.5 * quat_mul(q, jnp.concatenate([jnp.zeros(1, dtype=w.dtype), w]))
    return jnp.concatenate([v, acc, q_dot, w_dot])


def rk4(params, inertia, state, frequency, plate, dt: float, substeps: int):
    """``substeps`` RK4 steps over ``dt`` [s] with the command held; the
    quaternion is renormalized after each."""
    h = dt / substeps

    def one(s, _):
        f = lambda x: derivative(params, inertia, x, frequency, plate)  # noqa: E731
        k1 = f(s)
        k2 = f(s + 0.5 * h * k1)
        k3 = f(s + 0.5 * h * k2)
        k4 = f(s + h * k3)
        s = s + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        return s.at[6:10].set(s[6:10] / jnp.linalg.norm(s[6:10])), None

    return jax.lax.scan(one, state, None, length=substeps)[0]


def fly(params, inertia, state0, frequency, plate, dt: float, substeps: int):
    """States at the samples: (n, 13), row k the state at sample k (row 0 =
    ``state0``) with the commands ``frequency`` (n,) [Hz] and ``plate``
    (n, 2) [rad] of sample k held over [t_k, t_k + dt)."""

    def body(s, u):
        return rk4(params, inertia, s, u[0], u[1:], dt, substeps), s

    _, states = jax.lax.scan(body, state0, jnp.concatenate([frequency[:, None], plate], axis=1))
    return states


def measure(states, offset):
    """(n, 6) predicted pose measurement: position [m] and ZYX Euler
    (roll + roll offset, pitch + pitch offset, yaw) [rad]."""
    euler = jax.vmap(quat_to_euler)(states[:, 6:10])
    return jnp.concatenate([states[:, :3], euler + jnp.array([offset[0], offset[1], 0.0])], axis=1)


# ---------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------


def _with_values(base: CycleAveragedParams, v: dict) -> CycleAveragedParams:
    d_w = jnp.stack([v["D_w_x"], v["D_w_y"], base.rate_damping[2]])
    return eqx.tree_at(
        lambda p: (p.lift_coefficient, p.horizontal_damping, p.roll_gain, p.pitch_gain, p.rate_damping,
                   p.roll_speed_coupling, p.pitch_speed_coupling),
        base,
        (v["k_f"], v["k_v"], v["k_roll"], v["k_pitch"], d_w, v["L_v"], v["M_u"]),
    )


def _start_values(base: CycleAveragedParams) -> dict[str, float]:
    return {
        "k_f": float(base.lift_coefficient), "k_v": float(base.horizontal_damping), "k_roll": float(base.roll_gain),
        "k_pitch": float(base.pitch_gain), "D_w_x": float(base.rate_damping[0]), "D_w_y": float(base.rate_damping[1]),
        "L_v": float(base.roll_speed_coupling), "M_u": float(base.pitch_speed_coupling),
        "roll_offset": 0.0, "pitch_offset": 0.0,
    }


def _decode(z, start: dict[str, float]) -> dict[str, jax.Array]:
    """Physical values from the normalized vector: positive ones
    ``start * exp(z)``, signed ones ``start + scale * z``."""
    out = {}
    for i, name in enumerate(FLIGHT_PARAMETERS):
        out[name] = start[name] * jnp.exp(z[i]) if name in _POSITIVE else start[name] + _LINEAR_SCALE[name] * z[i]
    return out


def _std_physical(values: dict[str, float], std_z: np.ndarray) -> dict[str, float]:
    return {name: float(values[name] * std_z[i]) if name in _POSITIVE else float(_LINEAR_SCALE[name] * std_z[i])
            for i, name in enumerate(FLIGHT_PARAMETERS)}


# ---------------------------------------------------------------------------
# The log
# ---------------------------------------------------------------------------


def read_flight_log(path: str | Path) -> dict[str, np.ndarray]:
    """The log's columns (:data:`LOG_COLUMNS`) as float64 arrays, checked:
    :class:`DataError` for the table errors of
    :func:`flapjax.identify.data.read_table`, a non-uniform sample rate, a
    non-positive frequency or a plate angle beyond 0.6 rad (naming the
    column and the 1-based row)."""
    path = Path(path)
    log = read_table(path, LOG_COLUMNS, time_column="time_s")
    t = log["time_s"]
    if t.size < 50:
        raise DataError(f"{path.name}: time_s: need at least 50 samples for a flight log, got {t.size}")
    dt = np.diff(t)
    med = float(np.median(dt))
    bad = np.flatnonzero(np.abs(dt - med) > 0.01 * med)
    if bad.size:
        raise DataError(f"{path.name}: time_s: samples must be uniform (median step {med:.6g} s); row {bad[0] + 2} "
                        f"comes {dt[bad[0]]:.6g} s after the previous one")
    for name, lo, hi in (("frequency_hz", 1e-9, 500.0), ("pitch_plate_rad", -0.6, 0.6), ("roll_plate_rad", -0.6, 0.6)):
        out = np.flatnonzero((log[name] < lo) | (log[name] > hi))
        if out.size:
            raise DataError(f"{path.name}: {name}: row {out[0] + 1}: value {log[name][out[0]]:.6g} outside "
                            f"[{lo:g}, {hi:g}]")
    return log


def noise_levels(meas: np.ndarray) -> np.ndarray:
    """(6,) white-noise standard deviation of each pose channel, from second
    differences: ``var(x[k+1] - 2 x[k] + x[k-1]) = 6 sigma^2`` for white
    noise on a signal smooth at the sample rate (median-based, robust)."""
    d2 = meas[2:] - 2 * meas[1:-1] + meas[:-2]
    d2[:, 3:] = np.arctan2(np.sin(d2[:, 3:]), np.cos(d2[:, 3:]))
    # median absolute value of a normal variable = 0.6745 sigma
    sigma = np.median(np.abs(d2), axis=0) / 0.6745 / math.sqrt(6.0)
    return np.maximum(sigma, 1e-9)


def _segments(n: int, length: int) -> np.ndarray:
    """Start indices of consecutive whole segments of ``length`` samples in [0, n)."""
    return np.arange(0, n - length + 1, length)


def _seed_states(log: dict, starts: np.ndarray, dt: float) -> np.ndarray:
    """(m, 13) initial states from the log: pose at the start, velocity and
    body rates from a 5-sample central difference (one-sided at the ends)."""
    pos = np.stack([log["x_m"], log["y_m"], log["z_m"]], axis=1)
    eul = np.unwrap(np.stack([log["roll_rad"], log["pitch_rad"], log["yaw_rad"]], axis=1), axis=0)
    n = pos.shape[0]
    out = []
    for k in starts:
        lo, hi = max(k - 2, 0), min(k + 2, n - 1)
        v = (pos[hi] - pos[lo]) / ((hi - lo) * dt)
        e_dot = (eul[hi] - eul[lo]) / ((hi - lo) * dt)
        r, p, _ = eul[k]
        # body rates from ZYX Euler rates
        w = np.array([
            e_dot[0] - math.sin(p) * e_dot[2],
            math.cos(r) * e_dot[1] + math.sin(r) * math.cos(p) * e_dot[2],
            -math.sin(r) * e_dot[1] + math.cos(r) * math.cos(p) * e_dot[2],
        ])
        q = np.asarray(euler_to_quat(*eul[k]))
        out.append(np.concatenate([pos[k], v, q, w]))
    return np.asarray(out)


def _apply_state(seed, dz):
    """Initial state ``seed`` (13,) corrected by the normalized ``dz`` (12,)."""
    d = dz * jnp.asarray(_STATE_SCALE)
    q = quat_mul(seed[6:10], rotvec_to_quat(d[6:9]))
    return jnp.concatenate([seed[:3] + d[:3], seed[3:6] + d[3:6], q, seed[10:13] + d[9:12]])


def _wrap(a):
    return jnp.arctan2(jnp.sin(a), jnp.cos(a))


def _segment_residuals(params, inertia, seed, dz, offset, cmd_f, cmd_p, meas, sigma, dt, substeps):
    states = fly(params, inertia, _apply_state(seed, dz), cmd_f, cmd_p, dt, substeps)
    pred = measure(states, offset)
    diff = meas - pred
    diff = diff.at[:, 3:].set(_wrap(diff[:, 3:]))
    return diff / sigma, pred


# ---------------------------------------------------------------------------
# Levenberg-Marquardt on the Jacobian through the rollouts
# ---------------------------------------------------------------------------


def levenberg_marquardt(residual_fn: Callable, x0, *, max_iterations: int, tol: float = 1e-10, args=(),
                        jac_fn: Callable | None = None):
    """Minimize ``0.5 |r(x)|^2`` from ``x0``; ``residual_fn(x, *args) -> r``
    (1-D; pass it jitted); Jacobians ``jac_fn(x, *args)`` (default
    ``jax.jacfwd`` of ``residual_fn``, jitted here: pass a module-level one
    to reuse its compilation). Returns ``(x, r, J, iterations, cost history, reason)``."""
    fn = residual_fn
    jac_fn = jax.jit(jax.jacfwd(residual_fn)) if jac_fn is None else jac_fn
    residual_fn = lambda x: fn(x, *args)  # noqa: E731
    x = jnp.asarray(x0)
    r = residual_fn(x)
    cost = 0.5 * float(jnp.sum(r * r))
    lam, history, reason = 1e-3, [cost], f"max_iterations={max_iterations}"
    J = jac_fn(x, *args)
    for it in range(max_iterations):
        jtj = np.asarray(J.T @ J)
        g = np.asarray(J.T @ r)
        diag = np.maximum(np.diag(jtj), 1e-12)
        improved = False
        for _ in range(12):
            step = np.linalg.solve(jtj + lam * np.diag(diag), -g)
            x_new = x + jnp.asarray(step)
            r_new = residual_fn(x_new)
            c_new = 0.5 * float(jnp.sum(r_new * r_new))
            if math.isfinite(c_new) and c_new < cost:
                improved = True
                break
            lam *= 10.0
        if not improved:
            reason = f"no decrease at iteration {it} (converged to the cost's resolution)"
            break
        rel = (cost - c_new) / max(cost, 1e-300)
        x, r, cost = x_new, r_new, c_new
        history.append(cost)
        lam = max(lam / 10.0, 1e-12)
        J = jac_fn(x, *args)
        if rel < tol:
            reason = f"relative cost change {rel:.1e} < {tol:g}"
            break
    return x, r, J, len(history) - 1, history, reason


class _Segments(eqx.Module):
    """Shooting segments of a log and what their residuals need (no batch axis
    beyond the segments')."""

    base: CycleAveragedParams
    inertia: jax.Array
    start: dict
    seeds: jax.Array  # (m, 13) initial-state guesses
    freq: jax.Array  # (m, S) [Hz]
    plate: jax.Array  # (m, S, 2) [rad]
    meas: jax.Array  # (m, S, 6)
    weight: jax.Array  # (S, 1): 1 where a sample counts
    dt: float = eqx.field(static=True)
    substeps: int = eqx.field(static=True)


def _model(prob: _Segments, g):
    values = _decode(g, prob.start)
    return _with_values(prob.base, values), jnp.stack([values["roll_offset"], values["pitch_offset"]])


def _one(prob: _Segments, params, offset, seed, dz, f, p, mm, sig):
    return _segment_residuals(params, prob.inertia, seed, dz, offset, f, p, mm, sig, prob.dt, prob.substeps)


@eqx.filter_jit
def _fit_residuals(x, sig, prob: _Segments):
    n_par, m = len(FLIGHT_PARAMETERS), prob.seeds.shape[0]
    params, offset = _model(prob, x[:n_par])
    r = jax.vmap(lambda s, d, f, p, mm: _one(prob, params, offset, s, d, f, p, mm, sig)[0])(
        prob.seeds, x[n_par:].reshape(m, 12), prob.freq, prob.plate, prob.meas)
    return (r * prob.weight).ravel()


@eqx.filter_jit
def _fit_jacobian(x, sig, prob: _Segments):
    # Block structure: a segment's residuals depend on the model parameters
    # and its own start only (n_par + 12 tangents per segment).
    n_par, m = len(FLIGHT_PARAMETERS), prob.seeds.shape[0]
    rows = prob.meas.shape[1] * 6

    def one(gz, seed, f, p, mm):
        params, offset = _model(prob, gz[:n_par])
        return (_one(prob, params, offset, seed, gz[n_par:], f, p, mm, sig)[0] * prob.weight).ravel()

    g, dz = x[:n_par], x[n_par:].reshape(m, 12)
    jac = jax.vmap(lambda d, s_, f, p, mm: jax.jacfwd(one)(jnp.concatenate([g, d]), s_, f, p, mm))(
        dz, prob.seeds, prob.freq, prob.plate, prob.meas)  # (m, rows, n_par + 12)
    full = jnp.zeros((m, rows, n_par + 12 * m), dtype=jac.dtype)
    full = full.at[:, :, :n_par].set(jac[:, :, :n_par])
    idx = jnp.arange(m)
    cols = n_par + 12 * idx[:, None] + jnp.arange(12)[None, :]
    full = full.at[idx[:, None, None], jnp.arange(rows)[None, :, None], cols[:, None, :]].set(jac[:, :, n_par:])
    return full.reshape(m * rows, n_par + 12 * m)


def _start_residuals_raw(dz, sig, prob: _Segments, params, offset):
    m = prob.seeds.shape[0]
    r = jax.vmap(lambda s, d, f, p, mm: _one(prob, params, offset, s, d, f, p, mm, sig)[0])(
        prob.seeds, dz.reshape(m, 12), prob.freq, prob.plate, prob.meas)
    return (r * prob.weight).ravel()


_start_residuals = eqx.filter_jit(_start_residuals_raw)
_start_jacobian = eqx.filter_jit(jax.jacfwd(_start_residuals_raw))


@eqx.filter_jit
def _predict(dz, sig, prob: _Segments, params, offset):
    m = prob.seeds.shape[0]
    return jax.vmap(lambda s, d, f, p, mm: _one(prob, params, offset, s, d, f, p, mm, sig)[1])(
        prob.seeds, dz.reshape(m, 12), prob.freq, prob.plate, prob.meas)


# ---------------------------------------------------------------------------
# The study
# ---------------------------------------------------------------------------


def _robot_body() -> tuple[float, float, np.ndarray]:
    from flapjax.sim.flapper import model as flapper_model

    mass, _, inertia = flapper_model.composite_inertia(flapper_model.build("fixed"), "base")
    model = flapper_model.build("fixed")
    return float(mass), float(-model.opt.gravity[2]), np.asarray(inertia)


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
) -> dict[str, Any]:
    """Fit the averaged model to a flight log (see the module docstring).

    Args:
      log: columns of :data:`LOG_COLUMNS` (:func:`read_flight_log`).
      base: start values and the fixed fields (mass, gravity, f_ref, yaw
        ``D_w``); default the seed's model with the robot's mass and gravity.
      inertia: (3, 3) body inertia [kg m^2]; default the robot's (MJCF).
      segment: shooting segment length [s]; holdout: held-out tail [s];
      init_window: the part of a held-out segment its start is fitted to [s];
      substeps: RK4 steps per sample; max_iterations: Levenberg-Marquardt.

    Returns a dict: ``values`` and ``std`` (name -> float, SI), ``fit``,
    ``noise``, ``validation`` and ``data`` (arrays for the plots).
    """
    t0 = time.perf_counter()
    if base is None or inertia is None:
        mass, g, inertia_robot = _robot_body()
        if base is None:
            base = eqx.tree_at(lambda p: (p.mass, p.gravity), CycleAveragedParams(), (jnp.asarray(mass), jnp.asarray(g)))
        if inertia is None:
            inertia = inertia_robot
    inertia = jnp.asarray(np.asarray(inertia, dtype=float).reshape(3, 3))
    t = np.asarray(log["time_s"], dtype=float)
    dt = float(f"{np.median(np.diff(t)):.9g}")  # one compiled program per rate, not per rounding
    check_range("flight.segment", segment, 5 * dt, 5.0)
    seg_len = int(round(segment / dt))
    n_hold = int(round(holdout / dt))
    if n_hold < 2 * seg_len:
        raise ConfigError(f"flight.holdout: needs at least two segments ({2 * segment:g} s), got {holdout:g} s")
    n_fit = t.size - n_hold
    starts = _segments(n_fit, seg_len)
    if starts.size < 4:
        raise DataError(f"flight log: {t[-1] - t[0]:.3g} s hold {starts.size} fitted segment(s) of {segment:g} s "
                        f"after the {holdout:g} s held out; need at least 4")
    hold_starts = n_fit + _segments(n_hold, seg_len)
    meas = np.stack([log["x_m"], log["y_m"], log["z_m"], log["roll_rad"], log["pitch_rad"], log["yaw_rad"]], axis=1)
    sigma = noise_levels(meas)
    cmd_f = np.asarray(log["frequency_hz"], dtype=float)
    cmd_p = np.stack([log["pitch_plate_rad"], log["roll_plate_rad"]], axis=1)

    start = {k: jnp.asarray(v) for k, v in _start_values(base).items()}
    n_par = len(FLIGHT_PARAMETERS)

    def segments(idx, weight):
        sl = idx[:, None] + np.arange(seg_len)[None, :]
        return _Segments(base=base, inertia=inertia, start=start, seeds=jnp.asarray(_seed_states(log, idx, dt)),
                         freq=jnp.asarray(cmd_f[sl]), plate=jnp.asarray(cmd_p[sl]), meas=jnp.asarray(meas[sl]),
                         weight=jnp.asarray(weight, dtype=float).reshape(seg_len, 1), dt=dt, substeps=int(substeps))

    prob = segments(starts, np.ones(seg_len))
    m = starts.size
    # Pass 1 weighs the channels by the noise levels from second differences;
    # pass 2 by the RMS of each channel's residuals at the first optimum.
    x = jnp.zeros(n_par + 12 * m)
    iters, history = 0, []
    for _ in range(2):
        x, r, J, it, hist, reason = levenberg_marquardt(_fit_residuals, x, max_iterations=max_iterations,
                                                        args=(jnp.asarray(sigma), prob), jac_fn=_fit_jacobian)
        iters, history = iters + it, history + hist
        sigma = sigma * np.sqrt(np.mean(np.asarray(r).reshape(-1, 6) ** 2, axis=0))
    sig = jnp.asarray(sigma)
    r = _fit_residuals(x, sig, prob)
    J = _fit_jacobian(x, sig, prob)
    n_res, n_x = int(r.size), int(x.size)
    ssr = float(jnp.sum(r * r))
    s2 = ssr / (n_res - n_x)
    cov = s2 * np.linalg.pinv(np.asarray(J.T @ J))
    std_z = np.sqrt(np.clip(np.diag(cov)[:n_par], 0.0, None))
    values = {k: float(v) for k, v in _decode(x[:n_par], start).items()}
    std = _std_physical(values, std_z)
    corr_block = cov[:n_par, :n_par] / np.outer(std_z, std_z).clip(1e-300)
    identified = _with_values(base, {k: jnp.asarray(v) for k, v in values.items()})
    offset = np.array([values["roll_offset"], values["pitch_offset"]])

    # residuals in measurement units, per channel
    res_units = np.asarray(r).reshape(m, seg_len, 6) * sigma
    fit_time = t[starts[:, None] + np.arange(seg_len)[None, :]]

    validation = {}
    pred_hold = {}
    n_init = max(2, int(round(init_window / dt)))
    hold = segments(hold_starts, np.arange(seg_len) < n_init)
    Mh = hold.meas
    for label, model in (("identified", identified), ("start", base)):
        off = jnp.asarray(offset if label == "identified" else np.zeros(2))
        dz, *_ = levenberg_marquardt(_start_residuals, jnp.zeros(12 * hold_starts.size), max_iterations=15,
                                     args=(sig, hold, model, off), jac_fn=_start_jacobian)
        pred = np.asarray(_predict(dz, sig, hold, model, off))
        after = np.arange(seg_len) >= n_init
        err = np.asarray(Mh)[:, after] - pred[:, after]
        err[..., 3:] = np.arctan2(np.sin(err[..., 3:]), np.cos(err[..., 3:]))
        validation[label] = {
            "position_rms": float(np.sqrt(np.mean(np.sum(err[..., :3] ** 2, axis=-1)))),
            "attitude_rms_deg": float(np.degrees(np.sqrt(np.mean(np.sum(err[..., 3:5] ** 2, axis=-1))))),
        }
        pred_hold[label] = pred
    validation["segments"] = int(hold_starts.size)
    validation["horizon"] = float((seg_len - n_init) * dt)
    validation["init_window"] = float(n_init * dt)
    return {
        "values": values,
        "std": std,
        "identified": identified,
        "fit": {
            "iterations": iters, "reason": reason, "cost": history, "residual_sigma": math.sqrt(s2),
            "segments": int(m), "segment": float(seg_len * dt), "samples_fitted": int(m * seg_len),
            "sample_rate": 1.0 / dt, "parameters": n_par, "nuisance_parameters": 12 * m,
            "correlation": corr_block.tolist(), "seconds": time.perf_counter() - t0,
        },
        "noise": dict(zip(("x_m", "y_m", "z_m", "roll_rad", "pitch_rad", "yaw_rad"), map(float, sigma))),
        "validation": validation,
        "data": {"fit_time": fit_time, "residuals": res_units,
                 "hold_time": t[hold_starts[:, None] + np.arange(seg_len)[None, :]], "hold_meas": np.asarray(Mh),
                 "hold_pred": pred_hold, "init_window": float(n_init * dt)},
    }


def _plots(out: Path, result: dict) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = result["data"]
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
    fig.tight_layout()
    path = out / "flight_residuals.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    files.append(path)
    fig, axes = plt.subplots(5, 1, figsize=(9, 9), sharex=True)
    v = result["validation"]
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
    fig.tight_layout()
    path = out / "flight_validation.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    files.append(path)
    return files


def run_flight_identification(
    path: str | Path,
    out_dir: str | Path,
    *,
    quick: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
) -> dict:
    """Identify the cycle-averaged model from the flight log at ``path`` and
    write ``out_dir/results.json`` (every identified value ``name`` with
    ``name_std``, fit and noise summaries, the held-out validation),
    ``out_dir/cycle_averaged.json`` (loads with
    :meth:`CycleAveragedParams.from_json`) and the residual and validation
    plots (PNG). Returns the ``results.json`` dict. ``quick`` caps the
    Levenberg-Marquardt iterations; ``progress`` prints a line per stage.

    Raises :class:`DataError` for a bad log (naming file, column, row) and
    :class:`ConfigError` for an unusable output folder, before any fit.
    """
    jax.config.update("jax_enable_x64", True)
    path = Path(path)
    log = read_flight_log(path)
    out = Path(out_dir)
    lock = lock_output_dir(out, name="out")
    try:
        if progress:
            echo(f"flight log {path.name}: {log['time_s'].size} samples at "
                 f"{1.0 / float(np.median(np.diff(log['time_s']))):.0f} Hz; fitting ...")
        settings = {**DEFAULTS, **(QUICK if quick else {})}
        result = identify_flight_log(log, **settings)
        results = {"study": "flight_log", "data_file": str(path)}
        for name, value in result["values"].items():
            results[name] = value
            results[f"{name}_std"] = result["std"][name]
        results.update({
            "identified": result["values"], "std": result["std"], "units": FLIGHT_PARAMETERS,
            "cycle_averaged": result["identified"].to_dict(), "fit": result["fit"], "noise": result["noise"],
            "validation": result["validation"], "settings": settings, "versions": versions(),
        })
        results = to_jsonable(results)
        write_json(out / "results.json", results)
        write_json(out / "cycle_averaged.json", {
            "comment": f"Cycle-averaged model identified from the flight log {path.name}; load with "
                       "CycleAveragedParams.from_json.", **result["identified"].to_dict()})
        files = _plots(out, result)
        echo(summary(results) + f"\n  written: {out / 'results.json'}, cycle_averaged.json, "
             + ", ".join(p.name for p in files))
        return results
    finally:
        lock.release()


def summary(results: dict) -> str:
    """Plain-text table of a flight identification's results."""
    lines = ["", "flapjax identify (flight log): results",
             f"  {'name':<14} {'identified':>13} {'std':>11} {'unit':>10}"]
    for name, unit in FLIGHT_PARAMETERS.items():
        lines.append(f"  {name:<14} {results[name]:>13.5g} {results[name + '_std']:>11.3g} {unit:>10}")
    f, v = results["fit"], results["validation"]
    lines.append(f"  fit: {f['segments']} segments of {f['segment']:g} s, {f['iterations']} iterations "
                 f"({f['reason']}), residual sigma {f['residual_sigma']:.3f} (1 = the log's noise level)")
    lines.append(f"  held-out ({v['segments']} segments, {v['horizon']:.2f} s predicted after a "
                 f"{v['init_window']:.2f} s start): position RMS {1e3 * v['identified']['position_rms']:.2f} mm, "
                 f"attitude RMS {v['identified']['attitude_rms_deg']:.2f} deg (start model: "
                 f"{1e3 * v['start']['position_rms']:.1f} mm, {v['start']['attitude_rms_deg']:.1f} deg)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Synthetic logs (sample data and tests)
# ---------------------------------------------------------------------------

#: Hidden values of the sample log ``identification/data/flight_log.csv``.
SAMPLE_HIDDEN = {
    "k_f": 1.62e-4, "k_v": 0.045, "k_roll": 5.3e-4, "k_pitch": 5.1e-4, "D_w_x": 3.5e-5, "D_w_y": 2.2e-5,
    "L_v": 8.0e-4, "M_u": -4.8e-4, "roll_offset": 0.006, "pitch_offset": -0.004,
}


def synthetic_flight_log(
    hidden: dict[str, float] | None = None,
    *,
    noise_seed: int = 0,
    duration: float = 12.0,
    rate: float = 200.0,
    position_noise: float = 2e-4,
    attitude_noise: float = 3e-3,
    substeps: int = 8,
) -> dict[str, np.ndarray]:
    """A flight log of the averaged model with ``hidden`` values
    (:data:`SAMPLE_HIDDEN`), the robot's mass and inertia, flown from hover
    at z = 0.5 m by a hover controller (plate angles from an LQR state
    feedback designed on :func:`~flapjax.aero.cycle_averaged.linearize_hover`
    of the hidden model, in the heading frame; altitude PID on the frequency
    with the feed-forward ``f_h / sqrt(n_z)`` of the seed's ``k_f``) running
    at the log's ``rate`` [Hz] with its commands held (zero-order hold, as
    logged), excited by position-target steps every 1.5 s (+/-3 cm), random plate steps
    (+/-0.03 rad every 50 ms) and frequency steps (+/-0.5 Hz every 0.1 s);
    the excitation is the same for every ``noise_seed``. The logged pose is
    the true one plus white motion-capture noise (``position_noise`` [m],
    ``attitude_noise`` [rad]) and a constant roll/pitch offset
    (``roll_offset``, ``pitch_offset``: marker misalignment). Returns the
    columns of :data:`LOG_COLUMNS`.
    """
    v = {**SAMPLE_HIDDEN, **(hidden or {})}
    key = (tuple(sorted(v.items())), float(duration), float(rate), int(substeps))
    if key not in _FLIGHTS:
        _FLIGHTS[key] = _excited_flight(v, duration, rate, substeps)
    t, states, f, plate = _FLIGHTS[key]
    n = t.size
    euler = np.asarray(jax.vmap(quat_to_euler)(jnp.asarray(states[:, 6:10])))
    noise = np.random.default_rng(noise_seed)
    pos = states[:, :3] + noise.normal(0.0, position_noise, size=(n, 3))
    att = euler + np.array([v["roll_offset"], v["pitch_offset"], 0.0]) + noise.normal(0.0, attitude_noise, size=(n, 3))
    att = np.arctan2(np.sin(att), np.cos(att))
    return {
        "time_s": t, "x_m": pos[:, 0], "y_m": pos[:, 1], "z_m": pos[:, 2],
        "roll_rad": att[:, 0], "pitch_rad": att[:, 1], "yaw_rad": att[:, 2],
        "frequency_hz": f, "pitch_plate_rad": plate[:, 0], "roll_plate_rad": plate[:, 1],
    }


_FLIGHTS: dict = {}


def _excited_flight(v: dict, duration: float, rate: float, substeps: int):
    """The noise-free flight of :func:`synthetic_flight_log`: times (n,),
    states (n, 13), frequency (n,), plate (n, 2)."""
    mass, g, inertia = _robot_body()
    base = eqx.tree_at(lambda p: (p.mass, p.gravity), CycleAveragedParams(), (jnp.asarray(mass), jnp.asarray(g)))
    params = _with_values(base, {k: jnp.asarray(x) for k, x in v.items()})
    nominal = eqx.tree_at(lambda p: p.lift_coefficient, params, jnp.asarray(CycleAveragedParams().lift_coefficient))
    inertia_j = jnp.asarray(inertia)
    dt = 1.0 / rate
    n = int(round(duration * rate))
    rng = np.random.default_rng(12345)
    t = np.arange(n) * dt
    hold = int(round(1.5 * rate))
    targets = np.repeat(rng.uniform([-0.03, -0.03, 0.47], [0.03, 0.03, 0.53], size=(n // hold + 1, 3)), hold, axis=0)[:n]
    targets[:hold] = [0.0, 0.0, 0.5]
    plate_ex = np.repeat(rng.choice([-0.03, 0.03], size=(n // 10 + 1, 2)), 10, axis=0)[:n]
    freq_ex = np.repeat(rng.choice([-0.5, 0.5], size=n // 20 + 1), 20)[:n]
    f_h = float(jnp.sqrt(mass * g / nominal.lift_coefficient))
    # Lateral/longitudinal gains: LQR on the linear model about hover.
    import scipy.linalg

    a_lin, b_lin = linearize_hover(params, inertia)
    q_lqr = np.diag([25.0, 25.0, 1.0, 1.0, 1.0, 1.0, 1e-3, 1e-3])
    gain = jnp.asarray(np.linalg.solve(np.eye(2), b_lin.T @ scipy.linalg.solve_continuous_are(a_lin, b_lin, q_lqr,
                                                                                               np.eye(2))))

    def control(s, integral, target, pex, fex):
        pos, vel, q, w = s[:3], s[3:6], s[6:10], s[10:13]
        roll, pitch, yaw = quat_to_euler(q)
        e = pos - target
        integral = jnp.clip(integral - e[2] * dt, -0.05, 0.05)
        rot = quat_to_rot(q)
        f = f_h / jnp.sqrt(jnp.maximum(rot[2, 2], 0.5)) - 60.0 * e[2] + 40.0 * integral - 20.0 * vel[2] + fex
        c, sn = jnp.cos(yaw), jnp.sin(yaw)
        heading = jnp.array([[c, sn], [-sn, c]])  # world -> heading frame
        x = jnp.concatenate([heading @ e[:2], heading @ vel[:2], jnp.stack([roll, pitch]), w[:2]])
        plate = -gain @ x + pex
        return integral, jnp.clip(f, 20.0, 60.0), jnp.clip(plate, -0.35, 0.35)

    def body(carry, inp):
        s, integral = carry
        target, pex, fex = inp
        integral, f, plate = control(s, integral, target, pex, fex)
        s_next = rk4(params, inertia_j, s, f, plate, dt, substeps)
        return (s_next, integral), (s, f, plate)

    s0 = jnp.concatenate([jnp.array([0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])])
    _, (states, f, plate) = jax.jit(lambda s: jax.lax.scan(body, (s, jnp.asarray(0.0)), (
        jnp.asarray(targets), jnp.asarray(plate_ex), jnp.asarray(freq_ex))))(s0)
    states, f, plate = np.asarray(states), np.asarray(f), np.asarray(plate)
    if not np.all(np.isfinite(states)):
        raise ConfigError("synthetic_flight_log: the flight diverged; check the hidden values")
    return t, states, f, plate


def write_flight_log(path: str | Path, log: dict[str, np.ndarray], *, comment: str = "") -> Path:
    """Write ``log`` (columns of :data:`LOG_COLUMNS`) as CSV with a header
    row (and ``comment`` lines starting with ``#``)."""
    path = Path(path)
    names = [c.name for c in LOG_COLUMNS]
    lines = [f"# {line}" for line in comment.splitlines()] + [",".join(names)]
    fmt = {"time_s": "{:.4f}", "frequency_hz": "{:.5f}"}  # 1 um, 1 urad: far below motion-capture noise
    cols = [log[k] for k in names]
    for i in range(len(log["time_s"])):
        lines.append(",".join(fmt.get(k, "{:.6f}").format(c[i]) for k, c in zip(names, cols)))
    path.write_text("\n".join(lines) + "\n")
    return path
