"""One wing's wrench in the world frame about its centre of mass (seed 7.3, 8)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.aero.quasi_steady import WingLoads, check_side
from flapjax.validation import check_shape


class WingWrench(eqx.Module):
    """World-frame wrench of one wing and where it acts.

    Attributes:
      wrench: (6,) ``[F; tau]`` to write into ``xfrc_applied`` (world frame,
        torque about the wing's centre of mass) [N, N m]; zero if read-only.
      force_world: (3,) aerodynamic force in the world frame [N].
      torque_world: (3,) torque about the wing's centre of mass, world frame,
        including the damping moment [N m].
      cop_world: (3,) centre of pressure in the world frame [m].
    """

    wrench: Float[Array, "6"]
    force_world: Float[Array, "3"]
    torque_world: Float[Array, "3"]
    cop_world: Float[Array, "3"]


def wing_wrench(
    loads: WingLoads,
    *,
    side: int,
    rot_world_wing: Float[Array, "3 3"],
    pos_world_origin: Float[Array, "3"],
    pos_world_com: Float[Array, "3"],
    read_only: bool = False,
) -> WingWrench:
    """World wrench of one wing, MuJoCo order ``[F_x, F_y, F_z, tau_x, tau_y, tau_z]``.

    The normal force ``[F_N, 0, 0]`` (aerodynamic frame) acts at the centre of
    pressure ``[0, s r_cp, -c_cp]``; the damping moment ``[0, M_rd, 0]`` is a
    pure moment. No sign flip is applied: the wing frame follows the
    aerodynamic convention, so this is the wrench to inject.

    Args:
      loads: output of :func:`~flapjax.aero.wing_loads`.
      side: +1 left wing, -1 right wing.
      rot_world_wing: (3, 3) rotation R_WA from the wing's aerodynamic frame to
        the world frame.
      pos_world_origin: (3,) world position of the aerodynamic frame's origin
        (on the feathering axis at the root, the leading edge) [m].
      pos_world_com: (3,) world position of the wing's centre of mass [m].
      read_only: if True the returned ``wrench`` is zero; every diagnostic is
        still computed.
    """
    s = check_side(side)
    check_shape("rot_world_wing", rot_world_wing, (3, 3))
    check_shape("pos_world_origin", pos_world_origin, (3,))
    check_shape("pos_world_com", pos_world_com, (3,))
    zero = jnp.zeros_like(loads.normal_force)
    cop_local = jnp.stack([zero, s * loads.span_cop, -loads.chord_cop])
    force_local = jnp.stack([loads.normal_force, zero, zero])
    damping_local = jnp.stack([zero, loads.damping_moment, zero])
    cop_world = pos_world_origin + rot_world_wing @ cop_local
    force_world = rot_world_wing @ force_local
    torque_world = jnp.cross(cop_world - pos_world_com, force_world) + rot_world_wing @ damping_local
    wrench = jnp.concatenate([force_world, torque_world])
    if read_only:
        wrench = jnp.zeros_like(wrench)
    return WingWrench(wrench=wrench, force_world=force_world, torque_world=torque_world, cop_world=cop_world)
