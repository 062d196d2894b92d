"""Analytic scene: ground plane, pitched wall plane, optional box; pure JAX.

The same scene parameters place the MJX geoms (so contacts are real) and give
the exact per-rotor distances the proximity models need, computed here in
closed form: ray casts along each rotor's downwash axis to the first surface,
and the distance and outward normal of the nearest near-vertical surface. No
MuJoCo is imported, so a pure-JAX rigid-body backend can reuse this module,
and nothing of the rotor chain: :func:`flapjax.rotor.rotor_proximity` turns
these distances into the chain's per-rotor input.

Frames: world z up; the wall crosses the anchor height ``wall_anchor_z`` at
``x = wall_x``; the free side (where the robot flies) is ``x < wall_x``. A
pitch ``beta > 0`` leans the top of the wall toward the robot (overhang);
``beta < 0`` leans it away. The wall's outward unit normal is
``n_w = (-cos beta, 0, -sin beta)``.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from flapjax.math import safe_norm
from flapjax.validation import ConfigError, as_float_array, check_positive, check_range, is_traced

Scalar = Float[Array, ""]

#: A surface counts as near-vertical (a "wall") when |n_z| <= this (45 deg).
NEAR_VERTICAL = 0.7071067811865476
_EPS = 1e-9
MAX_PITCH = 0.7853981633974483
#: Largest distance of a ground or wall plane from the origin read from a file [m]
#: (a finite wall farther away is a typo; +inf says "no wall").
MAX_EXTENT = 1e4


class Scene(eqx.Module):
    """Scene parameters of one world.

    Attributes:
      ground_height: () z of the ground plane [m].
      wall_x: () x where the wall crosses ``wall_anchor_z`` [m].
      wall_anchor_z: () anchor height of the wall pivot [m].
      wall_pitch: () beta, wall tilt from vertical about world y [rad],
        |beta| <= 45 deg; > 0 leans the top toward the robot.
      ground_friction: () sliding friction coefficient of the ground [-].
      wall_friction: () sliding friction coefficient of the wall [-].
      box_half_size: (3,) half sizes of the movable box object [m] (used
        only by worlds built with a box).
      box_friction: () sliding friction of the box [-].
    """

    ground_height: Scalar
    wall_x: Scalar
    wall_anchor_z: Scalar
    wall_pitch: Scalar
    ground_friction: Scalar
    wall_friction: Scalar
    box_half_size: Float[Array, "3"]
    box_friction: Scalar

    def __init__(self, ground_height=0.0, wall_x=1.0, wall_anchor_z=0.1, wall_pitch=0.0, ground_friction=1.0,
                 wall_friction=0.6, box_half_size=(0.05, 0.05, 0.05), box_friction=0.6):
        vals = dict(ground_height=ground_height, wall_x=wall_x, wall_anchor_z=wall_anchor_z, wall_pitch=wall_pitch,
                    ground_friction=ground_friction, wall_friction=wall_friction, box_half_size=box_half_size,
                    box_friction=box_friction)
        if not any(is_traced(v) for v in vals.values()):
            for k, v in vals.items():
                as_float_array(k, v, (3,) if k == "box_half_size" else ())
            check_range("wall_pitch", wall_pitch, -MAX_PITCH, MAX_PITCH)
            for k in ("ground_friction", "wall_friction", "box_friction", "box_half_size"):
                check_positive(k, vals[k])
        for k, v in vals.items():
            setattr(self, k, jnp.asarray(v, dtype=float))


class BoxPose(eqx.Module):
    """Pose of the box object.

    Attributes:
      position: (3,) centre, world frame [m].
      rotation: (3, 3) box-to-world rotation [-].
    """

    position: Float[Array, "3"]
    rotation: Float[Array, "3 3"]


def ground_plane(scene: Scene) -> tuple[Float[Array, "3"], Scalar]:
    """Ground as ``(n, c)``: free side ``n . x > c``."""
    n = jnp.array([0.0, 0.0, 1.0], dtype=scene.ground_height.dtype)
    return n, scene.ground_height


def wall_normal(scene: Scene) -> Float[Array, "3"]:
    """(3,) outward unit normal of the wall, world frame [-]."""
    b = scene.wall_pitch
    return jnp.stack([-jnp.cos(b), jnp.zeros_like(b), -jnp.sin(b)])


def wall_plane(scene: Scene) -> tuple[Float[Array, "3"], Scalar]:
    """Wall as ``(n, c)``: free side ``n . x > c``."""
    n = wall_normal(scene)
    anchor = jnp.stack([scene.wall_x, jnp.zeros_like(scene.wall_x), scene.wall_anchor_z])
    return n, jnp.dot(n, anchor)


def plane_distance(point: Float[Array, "3"], n: Float[Array, "3"], c: Scalar) -> Scalar:
    """Signed distance [m] of ``point`` to the plane ``n . x = c`` (> 0 on the free side)."""
    return jnp.dot(n, point) - c


def ray_plane(origin: Float[Array, "3"], direction: Float[Array, "3"], n: Float[Array, "3"], c: Scalar) -> Scalar:
    """Distance [m] along unit ``direction`` to the plane; ``inf`` if the ray
    moves away from it or runs parallel; 0 if ``origin`` is behind it."""
    s = plane_distance(origin, n, c)
    rate = jnp.dot(n, direction)
    toward = rate < -_EPS
    t = jnp.where(toward, s / jnp.where(toward, -rate, 1.0), jnp.inf)
    return jnp.where(s <= 0.0, 0.0, t)


def ray_box(origin: Float[Array, "3"], direction: Float[Array, "3"], box: BoxPose, half: Float[Array, "3"]) -> Scalar:
    """Distance [m] along unit ``direction`` to an oriented box (slab method);
    ``inf`` on a miss, 0 from inside."""
    o = box.rotation.T @ (origin - box.position)
    d = box.rotation.T @ direction
    moving = jnp.abs(d) > _EPS
    inv = 1.0 / jnp.where(moving, d, 1.0)
    t1 = jnp.where(moving, (-half - o) * inv, -jnp.inf)
    t2 = jnp.where(moving, (half - o) * inv, jnp.inf)
    inside_slab = jnp.abs(o) <= half
    # A ray parallel to a slab misses unless it starts inside it.
    t_lo = jnp.where(moving, jnp.minimum(t1, t2), jnp.where(inside_slab, -jnp.inf, jnp.inf))
    t_hi = jnp.where(moving, jnp.maximum(t1, t2), jnp.where(inside_slab, jnp.inf, -jnp.inf))
    t_near, t_far = jnp.max(t_lo), jnp.min(t_hi)
    hit = (t_far >= jnp.maximum(t_near, 0.0))
    return jnp.where(hit, jnp.maximum(t_near, 0.0), jnp.inf)


def point_box(point: Float[Array, "3"], box: BoxPose, half: Float[Array, "3"]) -> tuple[Scalar, Float[Array, "3"]]:
    """Exact distance [m] from ``point`` to an oriented box and the outward
    unit normal (world) at the closest point; distance 0 from inside."""
    q = box.rotation.T @ (point - box.position)
    diff = q - jnp.clip(q, -half, half)
    dist = safe_norm(diff)
    outside = dist > 1e-12
    # Inside: the normal of the face of least penetration.
    depth = half - jnp.abs(q)
    face = jax.nn.one_hot(jnp.argmin(depth), 3, dtype=q.dtype) * jnp.where(q >= 0, 1.0, -1.0)
    n_local = jnp.where(outside, diff / jnp.where(outside, dist, 1.0), face)
    return dist, box.rotation @ n_local


def surface_distances(
    scene: Scene,
    centres: Float[Array, "n 3"],
    downwash: Float[Array, "n 3"],
    box: BoxPose | None = None,
) -> tuple[Float[Array, " n"], Float[Array, " n"], Float[Array, "n 3"]]:
    """Distances from ``n`` points to the scene, world frame.

    Args:
      scene: the scene.
      centres: (n, 3) points (rotor centres), world frame [m].
      downwash: (n, 3) unit ray directions (each rotor's ``-a_i``), world frame.
      box: pose of the box object, or None when the world has none.

    Returns ``(h, d, n_w)``: ``h`` (n,) the ray distance [m] to the first of
    ground, wall and box (inf if none); ``d`` (n,) [m] and ``n_w`` (n, 3) the
    distance to and outward normal (world frame) of the nearest near-vertical
    surface (|n_z| <= cos 45 deg): the wall, or the box when its closest point
    lies on a side face.
    """
    n_g, c_g = ground_plane(scene)
    n_w, c_w = wall_plane(scene)

    def one(centre, direction):
        h = jnp.minimum(ray_plane(centre, direction, n_g, c_g), ray_plane(centre, direction, n_w, c_w))
        d_wall = jnp.maximum(plane_distance(centre, n_w, c_w), 0.0)
        d_wall = jnp.where(jnp.abs(n_w[2]) <= NEAR_VERTICAL, d_wall, jnp.inf)
        normal = n_w
        if box is not None:
            h = jnp.minimum(h, ray_box(centre, direction, box, scene.box_half_size))
            d_box, n_box = point_box(centre, box, scene.box_half_size)
            d_box = jnp.where(jnp.abs(n_box[2]) <= NEAR_VERTICAL, d_box, jnp.inf)
            closer = d_box < d_wall
            d_wall = jnp.where(closer, d_box, d_wall)
            normal = jnp.where(closer, n_box, normal)
        return h, d_wall, normal

    return jax.vmap(one)(centres, downwash)


def hover_position(
    scene: Scene,
    prof: Any,
    *,
    ground_clearance: float,
    wall_clearance: float,
    yaw: float = 0.0,
) -> Float[Array, "3"]:
    """CoM position (3,) [m] that puts the lowest rotor centre ``ground_clearance``
    above the ground and the rotor centre nearest the wall ``wall_clearance``
    from it (perpendicular distance, pitched wall included), for a level body
    at heading ``yaw`` [rad]. ``prof`` is any airframe with rotor centres
    ``prof.positions`` (n, 3) in the body frame [m] (a
    :class:`flapjax.rotor.RotorProfile`). Clearances must be > 0 (checked
    when they are concrete)."""
    for name, value in (("ground_clearance", ground_clearance), ("wall_clearance", wall_clearance)):
        if not is_traced(value):
            check_positive(name, value)
    c, s = jnp.cos(yaw), jnp.sin(yaw)
    rz = jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    offsets = prof.positions @ rz.T
    z0 = scene.ground_height + ground_clearance - jnp.min(offsets[:, 2])
    n, cw = wall_plane(scene)
    # n . (x0, 0, z0) + min_i n . off_i - c = wall_clearance, solved for x0.
    x0 = (wall_clearance + cw - n[2] * z0 - jnp.min(offsets @ n)) / n[0]
    return jnp.stack([x0, jnp.zeros_like(x0), z0])


class SceneRanges(eqx.Module):
    """Uniform randomization ranges (lo, hi) of scene parameters.

    Attributes:
      wall_pitch: (2,) [rad]; wall_x: (2,) offset added to the nominal [m];
      wall_friction: (2,) [-]; ground_friction: (2,) [-].
    """

    wall_pitch: Float[Array, "2"]
    wall_x: Float[Array, "2"]
    wall_friction: Float[Array, "2"]
    ground_friction: Float[Array, "2"]

    def __init__(self, wall_pitch=(0.0, 0.0), wall_x=(0.0, 0.0), wall_friction=(0.6, 0.6),
                 ground_friction=(1.0, 1.0)):
        vals = dict(wall_pitch=wall_pitch, wall_x=wall_x, wall_friction=wall_friction, ground_friction=ground_friction)
        for k, v in vals.items():
            arr = as_float_array(k, v, (2,))
            if arr[0] > arr[1]:
                raise ConfigError(f"{k}: range must be (lo, hi) with lo <= hi, got {arr.tolist()}")
            setattr(self, k, jnp.asarray(arr, dtype=float))
        check_range("wall_pitch", wall_pitch, -MAX_PITCH, MAX_PITCH)
        check_positive("wall_friction", wall_friction)
        check_positive("ground_friction", ground_friction)


def randomize_scene(key: PRNGKeyArray, nominal: Scene, ranges: SceneRanges) -> Scene:
    """Draw one scene: uniform wall pitch, wall offset and frictions from ``key``."""
    u = jax.random.uniform(key, (4,), dtype=nominal.wall_x.dtype)

    def pick(rng, ui):
        return rng[0] + ui * (rng[1] - rng[0])

    return eqx.tree_at(
        lambda s: (s.wall_pitch, s.wall_x, s.wall_friction, s.ground_friction),
        nominal,
        (pick(ranges.wall_pitch, u[0]), nominal.wall_x + pick(ranges.wall_x, u[1]),
         pick(ranges.wall_friction, u[2]), pick(ranges.ground_friction, u[3])),
    )
