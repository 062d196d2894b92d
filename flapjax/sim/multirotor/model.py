"""MJCF for a multirotor with a rigid arm, in a scene of ground, wall and box.

The model is generated from a :class:`~flapjax.rotor.RotorProfile` so the MJX
body carries the profile's mass and inertia (explicit ``<inertial>`` at the
body origin = centre of mass) and collision geoms where the profile puts the
hull, the rotor hubs, the arm and the end-effector. Rotor disks are visual
only (no contact); each hub has a small sphere guard.

The scene's ground and wall are MJX ``plane`` geoms (the wall is an infinite
plane as in :mod:`flapjax.scene`); their poses and frictions are per-world
parameters written into the ``mjx.Model`` by :func:`world_model`. The sparse
Jacobian avoids the LAPACK deadlock at >= 1024 vmapped worlds
(docs/mjx_notes.md, Dense-Jacobian deadlock). Only pairs that can touch
are checked (collision bits below), at most :data:`MAX_CONTACT_POINTS`
contacts reach the Newton solver (3 iterations, 6 line-search steps) and the
Euler step skips the implicit-damping pass, which this damping-free model
does not need (docs/mjx_notes.md, Contacts in the multirotor worlds).

:func:`probes` lists the same collision shapes for the rigid backend, which
has no contacts and watches them against the ground and wall planes.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import mujoco
import numpy as np
from jaxtyping import Array, Float
from mujoco import mjx

from flapjax import scene as sc
from flapjax.math import quat_y
from flapjax.rotor.profile import RotorProfile

GROUND = "ground"
WALL = "wall"
BASE = "base"
BOX = "box"
EE_SITE = "ee"


HUB_RADIUS_RATIO = 0.3  # hub sphere radius / rotor radius
ARM_RADIUS = 0.008  # arm capsule radius [m]

# Collision bits (docs/mjx_notes.md, Contacts in the multirotor worlds).
# Geoms a and b collide when (contype_a & conaffinity_b) | (contype_b &
# conaffinity_a) is non-zero. The planes accept bit 1, the box sends bit 1
# and accepts bit 2; the hull, hubs and end-effector send bits 1 and 2 (they
# meet the planes and the box); the arm sends bit 2 only: against a plane it
# can never touch before the hull or the end-effector (its support in every
# direction is at most theirs), against the box's edges it can.
_PLANE_BITS = 'contype="0" conaffinity="1"'
_BOX_BITS = 'contype="1" conaffinity="2"'
_ROBOT_BITS = 'contype="3" conaffinity="0"'
_ARM_BITS = 'contype="2" conaffinity="0"'
_ALL_BITS = 'contype="1" conaffinity="1"'

#: Contacts the solver sees per step (MJX keeps the deepest): the robot
#: alone against ground and wall, and with the box (which rests on the
#: ground with four contacts of its own).
MAX_CONTACT_POINTS = 8
MAX_CONTACT_POINTS_BOX = 16


def _v(x) -> str:
    return " ".join(f"{float(c):.9g}" for c in np.ravel(np.asarray(x)))


def multirotor_xml(
    prof: RotorProfile,
    *,
    with_box: bool = False,
    box_half_size=(0.05, 0.05, 0.05),
    box_mass: float = 0.3,
    timestep: float = 0.002,
    iterations: int = 3,
    ls_iterations: int = 6,
    hub_radius_ratio: float = HUB_RADIUS_RATIO,
    filtered: bool = True,
    eulerdamp: bool = False,
    cone: str = "pyramidal",
    solver: str = "Newton",
    max_contact_points: int | None = None,
) -> str:
    """MJCF text of the robot in the default scene (wall at x = 1 m, vertical).

    ``filtered=False`` lets every geom pair collide (the arm against the
    planes too) and ``eulerdamp=True`` keeps MuJoCo's implicit-damping
    factorization in the Euler step; both exist for the contact benchmark
    (``benchmarks/contacts.py``). The model has no joint damping, so the
    damping pass only refactors the same mass matrix.

    ``max_contact_points`` (MJX's contact culling: only that many contacts,
    the deepest, enter the solver each step; ``-1``: all) defaults to
    :data:`MAX_CONTACT_POINTS` or :data:`MAX_CONTACT_POINTS_BOX`.
    """
    if max_contact_points is None:
        max_contact_points = MAX_CONTACT_POINTS_BOX if with_box else MAX_CONTACT_POINTS
    custom = (f'\n  <custom>\n    <numeric name="max_contact_points" data="{int(max_contact_points)}"/>\n  </custom>'
              if max_contact_points >= 0 else "")
    robot_bits, arm_bits, plane_bits, box_bits = (
        (_ROBOT_BITS, _ARM_BITS, _PLANE_BITS, _BOX_BITS) if filtered else (_ALL_BITS,) * 4)
    pos = np.asarray(prof.positions)
    axes = np.asarray(prof.axes)
    radius = np.asarray(prof.radius)
    geoms = []
    for i in range(prof.n_rotors):
        geoms.append(f'<geom name="hub{i}" type="sphere" size="{hub_radius_ratio * radius[i]:.9g}" pos="{_v(pos[i])}" '
                     f'{robot_bits} rgba=".2 .2 .2 1"/>')
        geoms.append(
            f'<geom name="disk{i}" type="cylinder" size="{radius[i]:.9g} 0.002" pos="{_v(pos[i])}" zaxis="{_v(axes[i])}" '
            f'contype="0" conaffinity="0" mass="0" rgba=".6 .6 .9 .3"/>'
        )
    hull = np.asarray(prof.hull_half_size)
    arm_base = np.asarray(prof.arm_base)
    ee = np.asarray(prof.ee_position)
    inertia = np.asarray(prof.inertia)
    box = ""
    if with_box:
        bh = np.asarray(box_half_size)
        box = f"""
    <body name="{BOX}" pos="0.6 0 {bh[2]:.9g}">
      <freejoint/>
      <geom name="box" type="box" size="{_v(bh)}" mass="{box_mass:.9g}" {box_bits} rgba=".8 .5 .2 1"/>
    </body>"""
    return f"""<mujoco model="multirotor_{prof.name}">
  <compiler angle="radian"/>
  <option timestep="{timestep:.9g}" gravity="0 0 -9.81" jacobian="sparse" iterations="{iterations}"
          ls_iterations="{ls_iterations}" integrator="Euler" cone="{cone}" solver="{solver}">
    <flag eulerdamp="{'enable' if eulerdamp else 'disable'}"/>
  </option>{custom}
  <asset>
    <material name="default" rgba="1 1 1 1"/>
  </asset>
  <worldbody>
    <geom name="{GROUND}" type="plane" size="0 0 1" friction="1 0.005 0.0001" {plane_bits} rgba=".5 .5 .5 1"/>
    <geom name="{WALL}" type="plane" size="0 0 1" pos="1 0 0.1" zaxis="-1 0 0" friction="0.6 0.005 0.0001" {plane_bits} rgba=".7 .7 .6 1"/>
    <body name="{BASE}" pos="0 0 0.5">
      <freejoint/>
      <inertial pos="0 0 0" mass="{float(prof.mass):.9g}" diaginertia="{_v(inertia)}"/>
      <geom name="hull" type="box" size="{_v(hull)}" {robot_bits} rgba=".3 .3 .35 1"/>
      {chr(10).join('      ' + g for g in geoms).strip()}
      <geom name="arm" type="capsule" fromto="{_v(arm_base)} {_v(ee)}" size="{ARM_RADIUS:.9g}" {arm_bits} rgba=".4 .4 .4 1"/>
      <geom name="end_effector" type="sphere" size="{float(prof.ee_radius):.9g}" pos="{_v(ee)}" {robot_bits} rgba=".9 .2 .2 1"/>
      <site name="{EE_SITE}" pos="{_v(ee)}"/>
    </body>{box}
  </worldbody>
</mujoco>
"""


class Ids(NamedTuple):
    """MuJoCo ids of the geoms and body a world edits per world (-1: absent)."""

    ground: int
    wall: int
    base: int
    box_geom: int


def model_ids(mj_model: mujoco.MjModel, *, with_box: bool) -> Ids:
    """The :class:`Ids` of a model built by :func:`multirotor_xml`."""
    def geom(name):
        return mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_GEOM, name)

    return Ids(ground=geom(GROUND), wall=geom(WALL),
               base=mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, BASE),
               box_geom=geom("box") if with_box else -1)


def _plane_quat(normal):
    """Quaternion rotating +z onto a unit ``normal`` lying in the x-z plane."""
    return quat_y(jnp.arctan2(normal[0], normal[2]))


def world_model(model: mjx.Model, ids: Ids, scene: sc.Scene, prof: RotorProfile, *, with_box: bool) -> mjx.Model:
    """The MJX model of one world: wall pose, frictions, ground height, box
    size and friction, robot mass and inertia written into the nominal
    ``model``.

    Quantities MuJoCo precomputes from the mass at compile time (e.g.
    ``body_subtreemass``, ``dof_invweight0``) keep their nominal values.
    """
    m, s = model, scene
    ftype = m.geom_pos.dtype
    n_w = sc.wall_normal(s)
    wall_pos = jnp.stack([s.wall_x, jnp.zeros_like(s.wall_x), s.wall_anchor_z]).astype(ftype)
    geom_pos = m.geom_pos.at[ids.wall].set(wall_pos)
    geom_pos = geom_pos.at[ids.ground, 2].set(s.ground_height.astype(ftype))
    geom_quat = m.geom_quat.at[ids.wall].set(_plane_quat(n_w).astype(ftype))
    geom_friction = m.geom_friction.at[ids.wall, 0].set(s.wall_friction.astype(ftype))
    geom_friction = geom_friction.at[ids.ground, 0].set(s.ground_friction.astype(ftype))
    geom_size = m.geom_size
    if with_box:
        geom_friction = geom_friction.at[ids.box_geom, 0].set(s.box_friction.astype(ftype))
        geom_size = geom_size.at[ids.box_geom].set(s.box_half_size.astype(ftype))
    body_mass = m.body_mass.at[ids.base].set(prof.mass.astype(ftype))
    body_inertia = m.body_inertia.at[ids.base].set(prof.inertia.astype(ftype))
    return m.replace(geom_pos=geom_pos, geom_quat=geom_quat, geom_friction=geom_friction, geom_size=geom_size,
                     body_mass=body_mass, body_inertia=body_inertia)


def probes(prof: RotorProfile) -> tuple[Float[Array, "k 3"], Float[Array, " k"]]:
    """Body-frame centres (k, 3) [m] and radii (k,) [m] of the collision
    shapes of :func:`multirotor_xml`: hull corners, hub spheres, arm ends and
    the end-effector."""
    corners = jnp.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)],
                        dtype=prof.mass.dtype) * prof.hull_half_size
    centres = jnp.concatenate([corners, prof.positions, prof.arm_base[None], prof.ee_position[None]])
    radii = jnp.concatenate([jnp.zeros(8, prof.mass.dtype), HUB_RADIUS_RATIO * prof.radius,
                             jnp.full((1,), ARM_RADIUS, prof.mass.dtype), prof.ee_radius[None]])
    return centres, radii
