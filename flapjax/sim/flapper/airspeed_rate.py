"""The averaged model's moment from the rate of change of the airspeed.

A gust that reaches the flapping wings does not only change the cycle-mean
drag and the speed couplings ``L_v v_B,y``, ``M_u v_B,x``: while the
airspeed changes, the air the wings accelerate through their stroke (their
apparent mass, and the wake they shed) answers within a wingbeat or two,
and the per-wing robot tilts *before* the speed couplings have turned it
(docs/physics.md, Decomposition of the lateral-gust response). The averaged
model carries it as a body moment per rate of change of the body-frame
horizontal airspeed,

    tau_B += [A_0 a_y, A_1 a_x, 0],   a = d/dt (R_WB^T (v - wind))_{x,y} lagged,

``A = CycleAveragedParams.airspeed_rate_coupling`` (2,) [N m s^2/m] (roll
from the lateral, pitch from the forward airspeed, as ``L_v`` and ``M_u``).
The wings answer over a wingbeat, not within a step: the rate is that of
the airspeed lagged by half a wingbeat (the stroke plane's lag,
:func:`flapjax.sim.flapper.plate_motion.stroke_plane_turn`), so a step of
wind gives a moment spread over that lag whose impulse is ``A`` times the
step. The state keeps the lagged airspeed (``FlapperState.last_airspeed``);
the first step of a state (step 0) starts it at the airspeed it finds.
With ``A = 0`` (the default, and every file written before it existed) the
wrench is unchanged; the per-wing robot has no such term (its wings carry
the physics).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.sim.flapper.plate_motion import stroke_plane_turn

Vec2 = Float[Array, "2"]
Vec3 = Float[Array, "3"]


def body_airspeed(rot_world_body: Float[Array, "3 3"], v_com: Vec3, wind: Vec3 | None) -> Vec2:
    """The body-frame horizontal airspeed ``(v_B,x, v_B,y)`` [m/s] (2,) of
    the centre of mass moving at ``v_com`` (3,) [m/s, world] through
    ``wind`` (3,) [m/s, world; None: still air]; ``rot_world_body`` (3, 3)."""
    v_air = v_com if wind is None else v_com - jnp.asarray(wind, dtype=v_com.dtype)
    return (rot_world_body.T @ v_air)[:2]


def airspeed_rate(airspeed: Vec2, last: Vec2, step, frequency, dt: float) -> tuple[Vec2, Vec2]:
    """The lagged airspeed's rate over this step [m/s^2] (2,) and its next
    value [m/s] (2,): ``last`` (2,) [m/s] follows ``airspeed`` (2,) [m/s]
    with the half-wingbeat lag at ``frequency`` () [Hz] over ``dt`` [s]. At
    ``step`` () 0 it starts at ``airspeed`` with rate 0 (no history)."""
    start = step == 0
    last = jnp.where(start, airspeed, last)
    change = stroke_plane_turn(airspeed, last, frequency, dt)
    return change / dt, (last + change).astype(last.dtype)


def airspeed_rate_torque(params: CycleAveragedParams, rate: Vec2) -> Vec3:
    """Body moment ``[A_0 a_y, A_1 a_x, 0]`` [N m] (3,) of the airspeed rate
    ``a = (a_x, a_y)`` (2,) [m/s^2] (:data:`CycleAveragedParams.airspeed_rate_coupling`)."""
    a = jnp.asarray(params.airspeed_rate_coupling, dtype=rate.dtype)
    return jnp.stack([a[0] * rate[1], a[1] * rate[0], jnp.zeros((), rate.dtype)])


def add_body_torque(loads, rot_world_body: Float[Array, "3 3"], base_body: int, torque_body: Vec3):
    """``loads`` (:class:`flapjax.sim.flapper.step_types.AeroWrench`) with the body
    moment ``torque_body`` (3,) [N m] added on ``base_body`` (world frame, as
    ``xfrc_applied`` and ``moment_world`` carry it)."""
    tau_w = rot_world_body @ torque_body
    return eqx.tree_at(lambda w: (w.xfrc, w.moment_world), loads,
                       (loads.xfrc.at[base_body, 3:6].add(tau_w), loads.moment_world + tau_w))


def airspeed_moment(robot, params: CycleAveragedParams, state, base, wind: Vec3 | None, frequency, loads):
    """The averaged robot's ``loads`` with the airspeed-rate moment added, and
    the state's next ``last_airspeed`` (2,) [m/s]. ``state`` is the
    :class:`flapjax.sim.flapper.robot.FlapperState` at the start of the step,
    ``base`` its base frame (rotation, centre-of-mass velocity), ``wind`` (3,)
    [m/s] or None, ``frequency`` () [Hz]. The per-wing robot, and a state
    without ``last_airspeed``, are returned unchanged."""
    if robot.aero_model == "wing" or state.last_airspeed is None:
        return loads, state.last_airspeed
    airspeed = body_airspeed(base.rot_world_body, base.v_com, wind).astype(state.last_airspeed.dtype)
    rate, last = airspeed_rate(airspeed, state.last_airspeed, state.step, frequency, robot.dt)
    torque = airspeed_rate_torque(params, rate)
    return add_body_torque(loads, base.rot_world_body, robot.base_body, torque), last
