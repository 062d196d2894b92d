"""Wing kinematics and the affine velocity coefficients (seed section 4.1).

Every point of a rigid wing moves with ``V_O + Omega x r``; projected on the
wing's in-plane and out-of-plane directions, the velocity is affine in the
spanwise coordinate ``r_w``:

    U_i(r_w) = U_i1 r_w + U_i0,      U_o(r_w) = U_o1 r_w + U_o0.

The kinematic chain these formulas describe, for wing side ``s`` (+1 left,
-1 right) in the body frame (x forward, y left, z up): the root sits at
``(0, s d0, ds)`` and the wing frame is the body frame rotated by

    R_y(-s Phi) R_z(s psi) R_x(s phi) R_y(theta)

(stroke plane ``Phi``, stroke ``psi``, deviation ``phi``, feathering
``theta``). ``U_i`` is the wing-point velocity along the in-plane stroke
direction (the wing frame's -X before feathering) and ``U_o`` along the
stroke-plane normal (its +Z). Note the seed's stroke-plane angle enters with
``-s``: a symmetric tilt of both stroke planes is ``Phi_left = -Phi_right``.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.validation import ConfigError, check_finite, check_shape

Scalar = Float[Array, ""]


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


class WingKinematics(eqx.Module):
    """Joint angles and rates of one wing (seed section 2.2).

    Attributes:
      stroke: () psi, stroke angle [rad].
      stroke_rate: () psi_dot [rad/s].
      pitch: () theta, feathering (wing pitch) angle [rad].
      pitch_rate: () theta_dot [rad/s].
      deviation: () phi, deviation angle out of the stroke plane [rad].
      deviation_rate: () phi_dot [rad/s].
      stroke_plane: () Phi, stroke-plane angle [rad].
      stroke_plane_rate: () Phi_dot [rad/s].
    """

    stroke: Scalar = eqx.field(converter=_as_array)
    stroke_rate: Scalar = eqx.field(converter=_as_array)
    pitch: Scalar = eqx.field(converter=_as_array)
    pitch_rate: Scalar = eqx.field(converter=_as_array)
    deviation: Scalar = eqx.field(converter=_as_array, default=0.0)
    deviation_rate: Scalar = eqx.field(converter=_as_array, default=0.0)
    stroke_plane: Scalar = eqx.field(converter=_as_array, default=0.0)
    stroke_plane_rate: Scalar = eqx.field(converter=_as_array, default=0.0)


_KINEMATIC_FIELDS = ("stroke", "stroke_rate", "pitch", "pitch_rate", "deviation", "deviation_rate", "stroke_plane",
                     "stroke_plane_rate")


class AffineVelocity(eqx.Module):
    """Affine velocity coefficients of one wing (seed section 4.1).

    Attributes:
      in_plane_slope: () U_i1 [1/s].
      in_plane_offset: () U_i0 [m/s].
      out_of_plane_slope: () U_o1 [1/s].
      out_of_plane_offset: () U_o0 [m/s].
    """

    in_plane_slope: Scalar
    in_plane_offset: Scalar
    out_of_plane_slope: Scalar
    out_of_plane_offset: Scalar

    def in_plane(self, r_w):
        """U_i at spanwise coordinate ``r_w`` [m] -> [m/s]."""
        return self.in_plane_slope * r_w + self.in_plane_offset

    def out_of_plane(self, r_w):
        """U_o at spanwise coordinate ``r_w`` [m] -> [m/s]."""
        return self.out_of_plane_slope * r_w + self.out_of_plane_offset

    def speed_squared_coefficients(self) -> Float[Array, "3"]:
        """``(a_U0, a_U1, a_U2)`` with ``U^2(r_w) = a_U2 r_w^2 + a_U1 r_w + a_U0`` (seed 6)."""
        ui1, ui0 = self.in_plane_slope, self.in_plane_offset
        uo1, uo0 = self.out_of_plane_slope, self.out_of_plane_offset
        return jnp.stack(
            [ui0**2 + uo0**2, 2.0 * (ui1 * ui0 + uo1 * uo0), ui1**2 + uo1**2]
        )


def affine_velocity(
    kin: WingKinematics,
    v_body: Float[Array, "3"],
    w_body: Float[Array, "3"],
    *,
    side: float,
    shoulder_half_width: Scalar,
    stroke_plane_offset: Scalar,
) -> AffineVelocity:
    """Full affine coefficients of seed section 4.1.

    Args:
      kin: the wing's joint angles and rates.
      v_body: (3,) body linear velocity ``(u, v, w)`` in the body frame [m/s].
      w_body: (3,) body angular velocity ``(p, q, r)`` in the body frame [rad/s].
      side: s, +1 for the left wing, -1 for the right wing.
      shoulder_half_width: d0 [m].
      stroke_plane_offset: ds [m].
    """
    for name, value in (("v_body", v_body), ("w_body", w_body)):
        check_shape(name, value, (3,))
        check_finite(name, value)  # no-op under tracing
    for name in _KINEMATIC_FIELDS:
        if jnp.ndim(getattr(kin, name)) != 0:
            raise ConfigError(f"kin.{name}: expected a scalar per wing, got shape {jnp.shape(getattr(kin, name))} "
                              "(batch with jax.vmap)")
    s = side
    u, v, w = v_body[0], v_body[1], v_body[2]
    p, q, r = w_body[0], w_body[1], w_body[2]
    d0, ds = shoulder_half_width, stroke_plane_offset
    sps, cps = jnp.sin(kin.stroke), jnp.cos(kin.stroke)
    sph, cph = jnp.sin(kin.deviation), jnp.cos(kin.deviation)
    sPh, cPh = jnp.sin(kin.stroke_plane), jnp.cos(kin.stroke_plane)
    psi_dot, phi_dot, Phi_dot = kin.stroke_rate, kin.deviation_rate, kin.stroke_plane_rate
    u_s = u + q * ds  # body x-velocity of the stroke-plane point
    v_s = v - p * ds  # body y-velocity of the stroke-plane point

    uo1 = s * (p * cps * cPh - Phi_dot * sps) + q * sps + r * cps * sPh + phi_dot
    uo0 = (
        s
        * (
            -u_s * cph * sPh
            - r * d0 * sph * sps * cPh
            - v_s * sph * cps
            + w * sph * sps * sPh
            + p * d0 * cph * cPh
        )
        + u_s * sph * sps * cPh
        + r * d0 * cph * sPh
        + w * cph * cPh
        + p * d0 * sph * sps * sPh
    )
    ui1 = (
        s * (p * sph * sps * cPh + r * cph * cPh + Phi_dot * sph * cps)
        - p * cph * sPh
        - q * sph * cps
        + r * sph * sps * sPh
        + psi_dot * cph
    )
    ui0 = s * (r * d0 * cps * cPh - v_s * sps - w * cps * sPh) - u_s * cps * cPh - p * d0 * cps * sPh
    return AffineVelocity(ui1, ui0, uo1, uo0)
