"""Rigid body of the flight-log identification under the cycle-averaged
model: the state derivative, RK4 on the sample grid and the pose a motion
capture system measures; the robot's mass and inertia.

The state (13,) is position (3) [m], velocity (3) [m/s] (world frame, z
up), the quaternion R_WB (w, x, y, z) and the body rates (3) [rad/s].
The quaternion and Euler helpers are :mod:`flapjax.math`'s.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams, cycle_averaged_wrench
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
