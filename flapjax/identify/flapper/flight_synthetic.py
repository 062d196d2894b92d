"""Synthetic flight logs (the sample data and the tests): the averaged model
with hidden values flown by a hover controller under excitation, logged
with motion-capture noise."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams, linearize_hover
from flapjax.identify.flapper.flight_parameters import with_values
from flapjax.math import quat_to_euler
from flapjax.math import quat_to_mat as quat_to_rot
from flapjax.sim.flapper.averaged_body import rk4, robot_body
from flapjax.validation import ConfigError

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
    base = eqx.tree_at(lambda p: (p.mass, p.gravity), CycleAveragedParams(), (jnp.asarray(mass), jnp.asarray(g)))
    params = with_values(base, {k: jnp.asarray(x) for k, x in v.items()})
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

