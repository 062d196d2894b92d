"""Hover controller of the flapping-wing robot (seed section 10.3, improved).

Altitude: a PID on the altitude error corrects the flapping frequency around
the hover frequency ``f_h = sqrt(m g / k_f)``, divided by ``sqrt(n_z)`` (the
vertical share of the thrust direction) so a tilted robot keeps its weight:

    f = f_h / sqrt(max(n_z, 0.5)) + K_p e_z + K_i int e_z - K_d v_z

Linearized, ``z'' = (2 k_f f_h / m) df ~ 0.465 m/s^2 per Hz``; the default
gains (60 Hz/m, 40 Hz/(m s), 20 Hz s/m) place the vertical poles near
-1, -3.5 and -4.8 rad/s. The seed's controller flew at a nominal 42 Hz and
ended 2.4 cm low; the f_h feed-forward removes that offset.

Horizontal: a PD on position (9 1/s^2, 4 1/s, plus the model's own damping
k_v / m = 2 1/s; a double pole near -3 rad/s) asks for an acceleration, i.e. a body tilt
``a / g`` (clipped to ``tilt_limit``), expressed in the heading frame.

Attitude: plate angles from the tilt error. The naming is crossed:
roll_joint (delta_r) makes the pitch moment and tilts the thrust toward -x;
pitch_joint (delta_p) makes the roll moment and tilts the thrust toward -y.
So ``delta_r = -(K_a (bx* - bx) - K_w q)``, ``delta_p = -(K_a (by* - by) + K_w p)``
with bx, by the tilt of the body z axis toward +x, +y. With the seed's moment
gains (~5.5e-4 N m/rad at f_h) and inertia ~5e-6 kg m^2, ``K_a = 5`` puts the
attitude poles at about -22 +/- 16j rad/s, well above the position loop.
Yaw is not actuated by this robot; only rate damping acts on it.

The controller is pure (no MuJoCo); the bridge feeds it the base pose
(:func:`flapjax.sim.flapper.hover_rollout`). Formulas and the feed-forward's
departure from the seed: docs/physics.md, Hover controller.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.validation import check_positive

Scalar = Float[Array, ""]


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


class HoverGains(eqx.Module):
    """Gains and limits of :func:`hover_command`.

    Attributes:
      altitude_p: () K_p [Hz/m].
      altitude_i: () K_i [Hz/(m s)].
      altitude_d: () K_d [Hz s/m].
      integral_limit: () clamp of the altitude-error integral [m s].
      frequency_limits: (2,) min and max flapping frequency [Hz].
      position_p: () horizontal position gain [1/s^2].
      position_d: () horizontal velocity gain [1/s].
      tilt_limit: () largest commanded body tilt [rad].
      attitude_p: () K_a, plate angle per rad of tilt error [-].
      attitude_d: () K_w, plate angle per rad/s of body rate [s].
      plate_limit: () clamp of both plate angles [rad].
    """

    altitude_p: Scalar = eqx.field(converter=_as_array, default=60.0)
    altitude_i: Scalar = eqx.field(converter=_as_array, default=40.0)
    altitude_d: Scalar = eqx.field(converter=_as_array, default=20.0)
    integral_limit: Scalar = eqx.field(converter=_as_array, default=0.05)
    frequency_limits: Float[Array, "2"] = eqx.field(converter=_as_array, default=(20.0, 60.0))
    position_p: Scalar = eqx.field(converter=_as_array, default=9.0)
    position_d: Scalar = eqx.field(converter=_as_array, default=4.0)
    tilt_limit: Scalar = eqx.field(converter=_as_array, default=0.3)
    attitude_p: Scalar = eqx.field(converter=_as_array, default=5.0)
    attitude_d: Scalar = eqx.field(converter=_as_array, default=0.0)
    plate_limit: Scalar = eqx.field(converter=_as_array, default=0.35)

    def __check_init__(self):
        for name in ("altitude_p", "altitude_i", "altitude_d", "position_p", "position_d", "attitude_p", "attitude_d"):
            check_positive(f"HoverGains.{name}", getattr(self, name), allow_zero=True)
        for name in ("integral_limit", "tilt_limit", "plate_limit"):
            check_positive(f"HoverGains.{name}", getattr(self, name))
        check_positive("HoverGains.frequency_limits", self.frequency_limits)


class HoverState(eqx.Module):
    """Controller memory.

    Attributes:
      altitude_integral: () int (z* - z) dt [m s].
    """

    altitude_integral: Scalar = eqx.field(converter=_as_array, default=0.0)


class HoverCommand(eqx.Module):
    """Controller output.

    Attributes:
      frequency: () flapping frequency [Hz].
      plate: (2,) plate angles (pitch_joint, roll_joint) [rad].
      tilt_target: (2,) commanded tilt of body z toward +x, +y [rad].
    """

    frequency: Scalar
    plate: Float[Array, "2"]
    tilt_target: Float[Array, "2"]


def body_tilt(rot_world_body: Float[Array, "3 3"]) -> Float[Array, "2"]:
    """Tilt of the body z axis toward world +x and +y [rad]."""
    z = rot_world_body[:, 2]
    return jnp.stack([jnp.arctan2(z[0], z[2]), jnp.arctan2(z[1], z[2])])


def hover_command(
    gains: HoverGains,
    state: HoverState,
    *,
    hover_frequency: Scalar,
    gravity: Scalar,
    target: Float[Array, "3"],
    position: Float[Array, "3"],
    velocity: Float[Array, "3"],
    rot_world_body: Float[Array, "3 3"],
    w_body: Float[Array, "3"],
    dt: float,
) -> tuple[HoverState, HoverCommand]:
    """One controller update; pure, no batch axis.

    Args:
      gains: gains and limits.
      state: controller memory.
      hover_frequency: () f_h = sqrt(m g / k_f) [Hz].
      gravity: () g [m/s^2].
      target: (3,) hover position, world frame [m].
      position: (3,) measured position, world frame [m].
      velocity: (3,) measured velocity, world frame [m/s].
      rot_world_body: (3, 3) body attitude R_WB.
      w_body: (3,) body angular velocity (p, q, r), body frame [rad/s].
      dt: controller period [s].
    """
    err = target - position
    integral = jnp.clip(state.altitude_integral + err[2] * dt, -gains.integral_limit, gains.integral_limit)
    n_z = jnp.maximum(rot_world_body[2, 2], 0.5)
    f = hover_frequency / jnp.sqrt(n_z) + gains.altitude_p * err[2] + gains.altitude_i * integral - gains.altitude_d * velocity[2]
    f = jnp.clip(f, gains.frequency_limits[0], gains.frequency_limits[1])

    acc = gains.position_p * err[:2] - gains.position_d * velocity[:2]
    # Tilt wanted in the heading frame (yaw is free): rotate by -yaw.
    yaw = jnp.arctan2(rot_world_body[1, 0], rot_world_body[0, 0])
    c, s = jnp.cos(yaw), jnp.sin(yaw)
    acc_h = jnp.stack([c * acc[0] + s * acc[1], -s * acc[0] + c * acc[1]])
    tilt_target = jnp.clip(acc_h / gravity, -gains.tilt_limit, gains.tilt_limit)
    tilt_world = body_tilt(rot_world_body)
    tilt = jnp.stack([c * tilt_world[0] + s * tilt_world[1], -s * tilt_world[0] + c * tilt_world[1]])
    u_x = gains.attitude_p * (tilt_target[0] - tilt[0]) - gains.attitude_d * w_body[1]
    u_y = gains.attitude_p * (tilt_target[1] - tilt[1]) + gains.attitude_d * w_body[0]
    plate = jnp.clip(jnp.stack([-u_y, -u_x]), -gains.plate_limit, gains.plate_limit)
    return HoverState(altitude_integral=integral), HoverCommand(frequency=f, plate=plate, tilt_target=tilt_target)
