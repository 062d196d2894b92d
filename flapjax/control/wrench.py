"""Geometric SE(3) tracking controller producing a desired body wrench.

Lee, Leok & McClamroch, "Geometric tracking control of a quadrotor UAV on
SE(3)", CDC 2010, with an integral term on the position error. World z is up.
The controller reads a :class:`flapjax.noise.StateEstimate` (what the
sensors report, :func:`flapjax.noise.sense`).

    F_des = -k_x e_x - k_v e_v - k_i int(e_x) + m g e_3 + m a_d       (world)

Under-actuated layouts (rotors coplanar): the desired attitude puts the body
z axis along ``F_des`` with heading ``yaw``; the body force is
``(0, 0, F_des . R e_3)``. Fully actuated layouts: the desired attitude is
level at heading ``yaw`` and the whole force ``R^T F_des`` is requested.
In both cases::

    e_R = 1/2 vee(R_d^T R - R^T R_d),   e_W = W - R^T R_d W_d   (W_d = 0)
    tau = -k_R e_R - k_W e_W + W x J W                                (body)
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.math import GRAVITY, safe_norm
from flapjax.noise import StateEstimate
from flapjax.rotor.profile import RotorProfile
from flapjax.validation import ConfigError, as_float_array, check_range, is_traced

Scalar = Float[Array, ""]


class WrenchGains(eqx.Module):
    """Controller gains (diagonal, per axis).

    Attributes:
      position: (3,) k_x [N/m].
      velocity: (3,) k_v [N s/m].
      integral: (3,) k_i [N/(m s)].
      attitude: (3,) k_R [N m/rad].
      rate: (3,) k_W [N m s/rad].
      integral_limit: () bound on each integrated position error [m s].
    """

    position: Float[Array, "3"]
    velocity: Float[Array, "3"]
    integral: Float[Array, "3"]
    attitude: Float[Array, "3"]
    rate: Float[Array, "3"]
    integral_limit: Scalar

    def __init__(self, position, velocity, integral, attitude, rate, integral_limit=0.5):
        vals = dict(position=position, velocity=velocity, integral=integral, attitude=attitude, rate=rate)
        for k, v in vals.items():
            if not is_traced(v):
                as_float_array(k, v, (3,))
                check_range(k, v, 0.0, None)
            setattr(self, k, jnp.asarray(v, dtype=float))
        if not is_traced(integral_limit):
            check_range("integral_limit", integral_limit, 0.0, None)
        self.integral_limit = jnp.asarray(integral_limit, dtype=float)

    @classmethod
    def for_profile(cls, prof: RotorProfile, *, position_bandwidth: float = 3.0, attitude_bandwidth: float = 16.0,
                    damping: float = 0.9, integral_time: float = 1.5) -> "WrenchGains":
        """Gains placing the position and attitude loops at the given natural
        frequencies [rad/s] with damping ratio ``damping``, scaled by mass and
        inertia; integral action ``k_i = k_x / integral_time``."""
        m = prof.mass
        j = prof.inertia
        kx = m * position_bandwidth**2
        kv = 2.0 * damping * m * position_bandwidth
        return cls(
            position=jnp.full(3, kx), velocity=jnp.full(3, kv), integral=jnp.full(3, kx / integral_time),
            attitude=j * attitude_bandwidth**2, rate=2.0 * damping * j * attitude_bandwidth,
        )


class Reference(eqx.Module):
    """Desired flat outputs.

    Attributes:
      position: (3,) world position x_d [m].
      velocity: (3,) world velocity v_d [m/s].
      acceleration: (3,) world feed-forward acceleration a_d [m/s^2].
      yaw: () heading psi_d [rad].
    """

    position: Float[Array, "3"]
    velocity: Float[Array, "3"]
    acceleration: Float[Array, "3"]
    yaw: Scalar

    @classmethod
    def hover(cls, position, yaw=0.0) -> "Reference":
        """Hold ``position`` (3,) [m] at heading ``yaw`` [rad] (either may
        carry leading axes, e.g. one per world or per step)."""
        p = jnp.asarray(position, dtype=float)
        if p.ndim == 0 or p.shape[-1] != 3:
            raise ConfigError(f"position: expected shape (..., 3), got shape {p.shape}")
        return cls(position=p, velocity=jnp.zeros_like(p), acceleration=jnp.zeros_like(p),
                   yaw=jnp.broadcast_to(jnp.asarray(yaw, dtype=p.dtype), p.shape[:-1]))


class ControllerState(eqx.Module):
    """Integrator state.

    Attributes:
      integral: (3,) integrated position error [m s].
    """

    integral: Float[Array, "3"]

    @classmethod
    def zero(cls) -> "ControllerState":
        return cls(integral=jnp.zeros(3))


def _vee(m: Float[Array, "3 3"]) -> Float[Array, "3"]:
    return jnp.stack([m[2, 1], m[0, 2], m[1, 0]])


def desired_rotation(force_world: Float[Array, "3"], yaw: Scalar, *, fully_actuated: bool) -> Float[Array, "3 3"]:
    """Desired body-to-world rotation R_d (3, 3) for ``force_world`` and heading."""
    c, s = jnp.cos(yaw), jnp.sin(yaw)
    b1c = jnp.stack([c, s, jnp.zeros_like(c)])
    if fully_actuated:
        b3 = jnp.array([0.0, 0.0, 1.0], dtype=b1c.dtype)
    else:
        norm = safe_norm(force_world)
        ok = norm > 1e-9
        b3 = jnp.where(ok, force_world / jnp.where(ok, norm, 1.0), jnp.array([0.0, 0.0, 1.0]))
    b2 = jnp.cross(b3, b1c)
    n2 = safe_norm(b2)
    ok2 = n2 > 1e-9
    # Heading along b3 (singular): keep any b2 orthogonal to b3.
    b2 = jnp.where(ok2, b2 / jnp.where(ok2, n2, 1.0), jnp.array([0.0, 1.0, 0.0]))
    b1 = jnp.cross(b2, b3)
    return jnp.stack([b1, b2, b3], axis=1)


def wrench_command(
    gains: WrenchGains,
    prof: RotorProfile,
    estimate: StateEstimate,
    reference: Reference,
    state: ControllerState,
    *,
    dt,
    fully_actuated: bool | None = None,
    gravity: float = GRAVITY,
) -> tuple[Float[Array, "6"], ControllerState]:
    """Desired body wrench ``[F; tau]`` (6,) [N, N m] about the CoM and the next state.

    ``fully_actuated`` defaults to ``prof.fully_actuated``.
    """
    fa = prof.fully_actuated if fully_actuated is None else fully_actuated
    e_x = estimate.position - reference.position
    e_v = estimate.velocity - reference.velocity
    lim = gains.integral_limit
    integral = jnp.clip(state.integral + e_x * dt, -lim, lim)
    e3 = jnp.array([0.0, 0.0, 1.0], dtype=e_x.dtype)
    f_des = (-gains.position * e_x - gains.velocity * e_v - gains.integral * integral
             + prof.mass * (gravity * e3 + reference.acceleration))
    rot = estimate.rotation
    rot_d = desired_rotation(f_des, reference.yaw, fully_actuated=fa)
    if fa:
        force_body = rot.T @ f_des
    else:
        force_body = jnp.stack([jnp.zeros_like(f_des[0]), jnp.zeros_like(f_des[0]), jnp.dot(f_des, rot[:, 2])])
    m = rot_d.T @ rot  # rot.T @ rot_d is its transpose
    e_r = 0.5 * _vee(m - m.T)
    w = estimate.rate
    jw = prof.inertia * w
    tau = -gains.attitude * e_r - gains.rate * w + jnp.cross(w, jw)
    return jnp.concatenate([force_body, tau]), ControllerState(integral=integral)
