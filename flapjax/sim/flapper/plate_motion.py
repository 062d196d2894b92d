"""The plate's motion as the cycle-averaged model sees it.

The per-wing robot turns its stroke plane with servo-held plate joints. Two
effects of that turning reach the body within a few wingbeats and are not
in the seed's averaged model (docs/physics.md, Decomposition of the
plate-step response):

- the **inertial reaction**: the servo turns the plate and the wings, and
  the body turns back by ``kappa`` times the plate's turn (angular momentum
  kept; ``CycleAveragedParams.plate_reaction``), at the rate ``-kappa``
  times the plate's rate, which the body's rate carries (a rate gyro sees
  it, as on the per-wing robot);
- the **stroke-plane damping**: the flapping wings resist the turning of
  their stroke plane, so the servo pushes the body with ``-D_s delta'``
  about the joint axis (``CycleAveragedParams.stroke_plane_damping``,
  applied by :func:`flapjax.aero.cycle_averaged.stroke_plane_torque`).

The averaged robot's servo is ideal (the plate is where it was commanded).
The wings answer the plate's turn over a wingbeat, not within a step: both
terms read the turn of the *stroke plane's plate*, which follows the
command with a first-order lag of half a wingbeat (:func:`stroke_plane_turn`;
the group delay of a one-wingbeat average). The state keeps it and its
last rate (``FlapperState.last_plate``, ``last_plate_rate``). Without the lag the stroke-plane damping
closes an algebraic loop with any controller's rate gain ``k_w``: the
plate rate it feeds back is ``-k_w`` times the angular acceleration the
damping itself makes, a loop gain ``k_w D_s / I`` (0.9 about y with the
designed gains), and the averaged closed loop oscillates at about 6 Hz
and diverges once a cycle-filter delay is added (docs/physics.md). With
both parameters at zero (the default, and every file written before they
existed) nothing changes.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.aero.cycle_averaged import PLATE_AXES, STROKE_PLANE_LAG_WINGBEATS, CycleAveragedParams
from flapjax.math import quat_integrate
from flapjax.sim import rigid
from flapjax.sim.flapper.robot import FlapperRobot

Vec2 = Float[Array, "2"]
Scalar = Float[Array, ""]


def stroke_plane_turn(plate: Float[Array, " c"], last: Float[Array, " c"], frequency: Scalar,
                      dt: float) -> Float[Array, " c"]:
    """The stroke plane's plate turn over this step [rad] (c,): the lagged
    plate ``z`` (``last``, (c,) [rad]) moves toward the commanded ``plate``
    (c,) [rad] with time constant ``STROKE_PLANE_LAG_WINGBEATS / frequency``
    [s] (``frequency`` () [Hz]), backward Euler over ``dt`` [s] (stable at
    any step). Its sum over a step input is the step: the turn-back by
    ``kappa`` is spread over the lag, not lost."""
    tau = STROKE_PLANE_LAG_WINGBEATS / jnp.maximum(jnp.abs(frequency), 1e-6)
    return (plate - last) * (dt / (tau + dt))


def plate_turn(robot: FlapperRobot, state, plate: Float[Array, " c"], frequency: Scalar):
    """This step's stroke-plane plate turn (c,) [rad] (None for the per-wing
    robot, whose plate is real, or a state without a last plate) and the
    state's next ``last_plate`` and ``last_plate_rate`` (:class:`FlapperState`)."""
    last, last_rate = state.last_plate, state.last_plate_rate
    if robot.aero_model == "wing" or last is None:
        return None, None if last is None else plate.astype(last.dtype), last_rate
    turn = stroke_plane_turn(plate, last, frequency, robot.dt)
    rate = None if last_rate is None else (turn / robot.dt).astype(last_rate.dtype)
    return turn, (last + turn).astype(last.dtype), rate


def turn_back(robot: FlapperRobot, params: CycleAveragedParams, data, change: Float[Array, " c"],
              last_rate: Float[Array, " c"] | None = None, dt: float | None = None):
    """The plate's inertial reaction on the lumped body: the body turns back
    by ``kappa_j`` times the stroke plane's plate turn about each plate
    joint's axis (body frame). Other robots carry a real plate, whose
    reaction the physics already has, and are returned unchanged.

    With ``last_rate`` (the previous step's plate rate) the reaction is
    the body's *rate*: it carries ``-kappa_j z_j'`` (angular momentum kept:
    the body turns back while the plate turns), so the body's rate changes
    by ``-kappa_j (z_j' - last_rate_j)`` and the attitude follows from it,
    as a rate gyro on the per-wing robot sees it. Without it only the
    attitude is turned, at once (states built before the rate existed).

    Args:
      data: the lumped body's state (:class:`flapjax.sim.rigid.RigidState`,
        or MJX data with a free joint at ``robot.free_q``).
      change: (c,) the stroke plane's plate turn over this step [rad].
      last_rate: (c,) its rate over the previous step [rad/s], or None.
      dt: the step [s] (with ``last_rate``).
    """
    if robot.root != "lumped" or robot.aero_model != "averaged":
        return data
    kappa = jnp.asarray(params.plate_reaction, dtype=change.dtype)
    axes = jnp.asarray(PLATE_AXES, dtype=change.dtype)
    if last_rate is not None:
        dw = -(kappa * (change / dt - last_rate)) @ axes
        if isinstance(data, rigid.RigidState):
            return eqx.tree_at(lambda s: s.angular_velocity, data, data.angular_velocity + dw)
        v = robot.free_v + 3
        return data.replace(qvel=data.qvel.at[v:v + 3].add(dw))
    turn = -(kappa * change) @ axes
    if isinstance(data, rigid.RigidState):
        return eqx.tree_at(lambda s: s.quat, data, quat_integrate(data.quat, turn, 1.0))
    q = robot.free_q + 3
    return data.replace(qpos=data.qpos.at[q:q + 4].set(quat_integrate(data.qpos[q:q + 4], turn, 1.0)))
