"""The plate's motion as the cycle-averaged model sees it.

The per-wing robot turns its stroke plane with servo-held plate joints. Two
effects of that turning reach the body within a few wingbeats and are not
in the seed's averaged model (docs/physics.md, Decomposition of the
plate-step response):

- the **inertial reaction**: the servo turns the plate and the wings, and
  the body turns back by ``kappa`` times the plate's turn (angular momentum
  kept; ``CycleAveragedParams.plate_reaction``);
- the **stroke-plane damping**: the flapping wings resist the turning of
  their stroke plane, so the servo pushes the body with ``-D_s delta'``
  about the joint axis (``CycleAveragedParams.stroke_plane_damping``,
  applied by :func:`flapjax.aero.cycle_averaged.stroke_plane_torque`).

The averaged robot's servo is ideal (the plate is where it was commanded),
so both are read from the change of the command between steps; the state
keeps the last one (``FlapperState.last_plate``). With both parameters at
zero (the default, and every file written before they existed) nothing
changes.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.aero.cycle_averaged import PLATE_AXES, CycleAveragedParams
from flapjax.math import quat_integrate
from flapjax.sim import rigid
from flapjax.sim.flapper.robot import FlapperRobot

Vec2 = Float[Array, "2"]


def turn_back(robot: FlapperRobot, params: CycleAveragedParams, data, change: Vec2):
    """Rotate the lumped body back by ``kappa_j * change_j`` about each
    plate joint's axis (body frame): the plate's inertial reaction. Other
    robots carry a real plate, whose reaction the physics already has, and
    are returned unchanged.

    Args:
      data: the lumped body's state (:class:`flapjax.sim.rigid.RigidState`,
        or MJX data with a free joint at ``robot.free_q``).
      change: (2,) the plate's turn over this step [rad].
    """
    if robot.root != "lumped" or robot.aero_model != "averaged":
        return data
    kappa = jnp.asarray(params.plate_reaction, dtype=change.dtype)
    turn = -(kappa * change) @ jnp.asarray(PLATE_AXES, dtype=change.dtype)
    if isinstance(data, rigid.RigidState):
        return eqx.tree_at(lambda s: s.quat, data, quat_integrate(data.quat, turn, 1.0))
    q = robot.free_q + 3
    return data.replace(qpos=data.qpos.at[q:q + 4].set(quat_integrate(data.qpos[q:q + 4], turn, 1.0)))
