"""Rigid body of the flight-log identification under the cycle-averaged
model: the state derivative, RK4 on the sample grid and the pose a motion
capture system measures; the robot's mass and inertia; synthetic flight
logs (:func:`synthetic_flight_log`: the sample data and the tests).

The state (13,) is position (3) [m], velocity (3) [m/s] (world frame, z
up), the quaternion R_WB (w, x, y, z) and the body rates (3) [rad/s].
The quaternion and Euler helpers are :mod:`flapjax.math`'s.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams, cycle_averaged_wrench, linearize_hover
from flapjax.math import quat_mul, quat_to_euler
from flapjax.math import quat_to_mat as quat_to_rot  # R_WB of (w, x, y, z)
from flapjax.validation import ConfigError, as_float_array, check_positive, check_range, inertia_matrix


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
        f = lambda x: derivative(params, inertia, x, frequency, plate)
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


def robot_body() -> tuple[float, float, np.ndarray]:
    """The robot's mass [kg], gravity [m/s^2] and (3, 3) inertia [kg m^2] (MJCF)."""
    from flapjax.sim.flapper import model as flapper_model

    mass, _, inertia = flapper_model.composite_inertia(flapper_model.build("fixed"), "base")
    model = flapper_model.build("fixed")
    return float(mass), float(-model.opt.gravity[2]), np.asarray(inertia)


#: Plausible mass of a flapping-wing robot [kg] and largest inertia entry [kg m^2].
MASS_RANGE = (1e-6, 10.0)
MAX_INERTIA = 1.0


def body(mass: float | None = None, inertia=None) -> tuple[float, float, np.ndarray]:
    """The mass [kg], gravity [m/s^2] and (3, 3) inertia [kg m^2] a flight
    log is fitted with: the given ``mass`` and ``inertia`` of the robot that
    flew, each defaulting to the nominal robot's (:func:`robot_body`).

    ``inertia`` is about the centre of mass in body axes: three principal
    moments, six values (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) or a (3, 3) matrix;
    it must be symmetric and positive definite with principal moments that
    satisfy the triangle inequality (a physical body). Raises
    :class:`ConfigError` naming ``mass`` or ``inertia``.
    """
    mass0, gravity, inertia0 = robot_body()
    if mass is not None:
        check_positive("mass", as_float_array("mass", mass, ()))
        check_range("mass", as_float_array("mass", mass, ()), *MASS_RANGE)
        mass0 = float(mass)
    if inertia is not None:
        inertia0 = inertia_matrix("inertia", inertia)
        if not np.max(np.abs(inertia0)) <= MAX_INERTIA:
            raise ConfigError(f"inertia: a flapping-wing robot's inertia is at most {MAX_INERTIA:g} kg m^2, got "
                              f"{np.asarray(inertia0).tolist()}")
    return mass0, gravity, np.asarray(inertia0, dtype=float)


def start_model(mass: float, gravity: float) -> CycleAveragedParams:
    """The seed's averaged model with this body's ``mass`` [kg] and
    ``gravity`` [m/s^2]: the flight fit's start values and fixed fields."""
    return eqx.tree_at(lambda p: (p.mass, p.gravity), CycleAveragedParams(), (jnp.asarray(mass), jnp.asarray(gravity)))


def with_values(base: CycleAveragedParams, v: dict) -> CycleAveragedParams:
    """``base`` with the model parameters of ``v`` (name -> value; the yaw
    ``D_w`` stays ``base``'s)."""
    d_w = jnp.stack([v["D_w_x"], v["D_w_y"], base.rate_damping[2]])
    fields = lambda p: (p.lift_coefficient, p.horizontal_damping, p.roll_gain, p.pitch_gain,  # noqa: E731
                        p.rate_damping, p.roll_speed_coupling, p.pitch_speed_coupling)
    new = (v["k_f"], v["k_v"], v["k_roll"], v["k_pitch"], d_w, v["L_v"], v["M_u"])
    # base's types (Python numbers would make weakly typed leaves, and a new compilation)
    new = tuple(jnp.asarray(x, dtype=jnp.result_type(old)) for x, old in zip(new, fields(base)))
    return eqx.tree_at(fields, base, new)


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
    columns of :data:`~flapjax.data.flight_log.LOG_COLUMNS`.
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
    mass, g, inertia = robot_body()
    params = with_values(start_model(mass, g), {k: jnp.asarray(x) for k, x in v.items()})
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

    def step(carry, inp):
        s, integral = carry
        target, pex, fex = inp
        integral, f, plate = control(s, integral, target, pex, fex)
        s_next = rk4(params, inertia_j, s, f, plate, dt, substeps)
        return (s_next, integral), (s, f, plate)

    s0 = jnp.array([0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    _, (states, f, plate) = jax.jit(lambda s: jax.lax.scan(step, (s, jnp.asarray(0.0)), (
        jnp.asarray(targets), jnp.asarray(plate_ex), jnp.asarray(freq_ex))))(s0)
    states, f, plate = np.asarray(states), np.asarray(f), np.asarray(plate)
    if not np.all(np.isfinite(states)):
        raise ConfigError("synthetic_flight_log: the flight diverged; check the hidden values")
    return t, states, f, plate

