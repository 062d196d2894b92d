"""Gradient-safe scalar and rotation helpers shared by every kernel.

Every function here has a finite value *and* a finite gradient at its
degenerate point (zero vector, zero rotation), which is what lets ``jax.grad``
pass through stroke reversal, zero airspeed, hover and zero thrust.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

Scalar = Float[Array, ""]

#: Standard gravitational acceleration g [m/s^2] (world z up).
GRAVITY = 9.81


def safe_norm(x: Float[Array, "... n"], eps: float = 1e-24, axis: int = -1) -> Float[Array, "..."]:
    """Euclidean norm along ``axis`` with value 0 and gradient 0 at ``x = 0``.

    The double ``where`` keeps ``sqrt`` away from 0 in both the primal and the
    tangent computation, so no NaN leaks into gradients.
    """
    sq = jnp.sum(x * x, axis=axis)
    ok = sq > eps
    return jnp.where(ok, jnp.sqrt(jnp.where(ok, sq, 1.0)), 0.0)


def safe_sqrt(x: Float[Array, "..."], eps: float = 1e-24) -> Float[Array, "..."]:
    """``sqrt(max(x, 0))`` with a finite (zero) gradient at and below ``eps``."""
    ok = x > eps
    return jnp.where(ok, jnp.sqrt(jnp.where(ok, x, 1.0)), 0.0)


def safe_atan2(y: Float[Array, "..."], x: Float[Array, "..."], eps: float = 1e-30) -> Float[Array, "..."]:
    """``atan2(y, x)`` that returns 0 with a zero gradient at ``x = y = 0``."""
    ok = (x * x + y * y) > eps
    return jnp.where(ok, jnp.arctan2(jnp.where(ok, y, 0.0), jnp.where(ok, x, 1.0)), 0.0)


def clip_norm(x: Float[Array, "n"], limit: Scalar) -> Float[Array, "n"]:
    """Scale ``x`` down so that ``|x| <= limit``; identity (exact) below the limit."""
    n = safe_norm(x)
    scale = jnp.where(n > limit, limit / jnp.where(n > limit, n, 1.0), 1.0)
    return x * scale


def skew(v: Float[Array, "3"]) -> Float[Array, "3 3"]:
    """Cross-product matrix: ``skew(a) @ b == cross(a, b)``."""
    x, y, z = v[0], v[1], v[2]
    zero = jnp.zeros_like(x)
    return jnp.array([[zero, -z, y], [z, zero, -x], [-y, x, zero]])


def rot_x(a: Scalar) -> Float[Array, "3 3"]:
    """Rotation by ``a`` [rad] about +x (active, right-handed)."""
    c, s = jnp.cos(a), jnp.sin(a)
    o, z = jnp.ones_like(a), jnp.zeros_like(a)
    return jnp.array([[o, z, z], [z, c, -s], [z, s, c]])


def rot_y(a: Scalar) -> Float[Array, "3 3"]:
    """Rotation by ``a`` [rad] about +y (active, right-handed)."""
    c, s = jnp.cos(a), jnp.sin(a)
    o, z = jnp.ones_like(a), jnp.zeros_like(a)
    return jnp.array([[c, z, s], [z, o, z], [-s, z, c]])


def rot_z(a: Scalar) -> Float[Array, "3 3"]:
    """Rotation by ``a`` [rad] about +z (active, right-handed)."""
    c, s = jnp.cos(a), jnp.sin(a)
    o, z = jnp.ones_like(a), jnp.zeros_like(a)
    return jnp.array([[c, -s, z], [s, c, z], [z, z, o]])


def quat_y(a: Scalar) -> Float[Array, "4"]:
    """(4,) quaternion ``[w, x, y, z]`` of a rotation by ``a`` [rad] about y."""
    return jnp.stack([jnp.cos(0.5 * a), jnp.zeros_like(a), jnp.sin(0.5 * a), jnp.zeros_like(a)])


def quat_z(a: Scalar) -> Float[Array, "4"]:
    """(4,) quaternion ``[w, x, y, z]`` of a rotation by ``a`` [rad] about z (a heading)."""
    return jnp.stack([jnp.cos(0.5 * a), jnp.zeros_like(a), jnp.zeros_like(a), jnp.sin(0.5 * a)])


def quat_to_mat(q: Float[Array, "4"]) -> Float[Array, "3 3"]:
    """Rotation matrix of a quaternion ``q = [w, x, y, z]`` (MuJoCo order).

    ``q`` need not be exactly unit: it is normalized first (safely).
    """
    q = q / jnp.maximum(safe_norm(q), 1e-12)
    w, x, y, z = q[0], q[1], q[2], q[3]
    return jnp.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def quat_mul(a: Float[Array, "4"], b: Float[Array, "4"]) -> Float[Array, "4"]:
    """Hamilton product ``a * b`` of ``[w, x, y, z]`` quaternions."""
    aw, ax, ay, az = a[0], a[1], a[2], a[3]
    bw, bx, by, bz = b[0], b[1], b[2], b[3]
    return jnp.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


def quat_integrate(q: Float[Array, "4"], w_body: Float[Array, "3"], dt: Scalar) -> Float[Array, "4"]:
    """Advance attitude ``q`` by body rate ``w_body`` [rad/s] over ``dt`` [s].

    Exact exponential map for constant rate, renormalized; the half-angle
    ``sinc`` form keeps value and gradient finite at zero rotation.
    """
    half = 0.5 * dt * w_body
    angle = safe_norm(half)
    # sin(angle)/angle with a smooth series near zero (gradient-safe).
    small = angle < 1e-4
    a_safe = jnp.where(small, 1.0, angle)
    sinc = jnp.where(small, 1.0 - angle**2 / 6.0, jnp.sin(a_safe) / a_safe)
    dq = jnp.concatenate([jnp.cos(angle)[None], sinc * half])
    out = quat_mul(q, dq)
    return out / safe_norm(out)


def euler_to_quat(roll, pitch, yaw):
    """(..., 4) quaternion ``[w, x, y, z]`` of ZYX Euler angles ``roll``, ``pitch``,
    ``yaw`` (...) [rad], ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    cr, sr = jnp.cos(roll / 2), jnp.sin(roll / 2)
    cp, sp = jnp.cos(pitch / 2), jnp.sin(pitch / 2)
    cy, sy = jnp.cos(yaw / 2), jnp.sin(yaw / 2)
    return jnp.stack([
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ], axis=-1)


def quat_to_euler(q):
    """(3,) ZYX Euler angles (roll, pitch, yaw) [rad] of a unit quaternion ``q``
    (4,) ``[w, x, y, z]``; pitch is clipped to +-pi/2 at the singularity."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    roll = jnp.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = jnp.arcsin(jnp.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = jnp.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return jnp.stack([roll, pitch, yaw])


def rotvec_to_quat(v):
    """(4,) quaternion ``[w, x, y, z]`` of a rotation vector ``v`` (3,) (angle *
    axis) [rad]; exact, with a finite value and gradient at ``v = 0``."""
    angle2 = jnp.sum(v * v)
    angle = jnp.sqrt(angle2 + 1e-30)
    half = 0.5 * angle
    s = jnp.where(angle2 > 1e-12, jnp.sin(half) / angle, 0.5 - angle2 / 48.0)
    return jnp.concatenate([jnp.cos(half)[None], s * v])
