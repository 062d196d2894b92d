"""MJCF for a multirotor with a rigid arm, in a scene of ground, wall and box.

The model is generated from a :class:`~flapjax.rotor.RotorProfile` so the MJX
body carries the profile's mass and inertia (explicit ``<inertial>`` at the
body origin = centre of mass) and collision geoms where the profile puts the
hull, the rotor hubs, the arm and the end-effector. Rotor disks are visual
only (no contact); each hub has a small sphere guard.

The scene's ground and wall are MJX ``plane`` geoms (the wall is an infinite
plane as in :mod:`flapjax.sim.scene`); their poses and frictions are
per-world parameters written into the ``mjx.Model`` by
:func:`flapjax.sim.multirotor.world_model`. The sparse Jacobian avoids the
LAPACK deadlock at >= 1024 vmapped worlds (MJX_NOTES.md); few solver
iterations are enough for these contacts.
"""

from __future__ import annotations

import numpy as np

from flapjax.rotor.profile import RotorProfile

GROUND = "ground"
WALL = "wall"
BASE = "base"
BOX = "box"
EE_SITE = "ee"


HUB_RADIUS_RATIO = 0.3  # hub sphere radius / rotor radius
ARM_RADIUS = 0.008  # arm capsule radius [m]


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
) -> str:
    """MJCF text of the robot in the default scene (wall at x = 1 m, vertical)."""
    pos = np.asarray(prof.positions)
    axes = np.asarray(prof.axes)
    radius = np.asarray(prof.radius)
    geoms = []
    for i in range(prof.n_rotors):
        geoms.append(f'<geom name="hub{i}" type="sphere" size="{hub_radius_ratio * radius[i]:.9g}" pos="{_v(pos[i])}" rgba=".2 .2 .2 1"/>')
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
      <geom name="box" type="box" size="{_v(bh)}" mass="{box_mass:.9g}" rgba=".8 .5 .2 1"/>
    </body>"""
    return f"""<mujoco model="multirotor_{prof.name}">
  <compiler angle="radian"/>
  <option timestep="{timestep:.9g}" gravity="0 0 -9.81" jacobian="sparse" iterations="{iterations}"
          ls_iterations="{ls_iterations}" integrator="Euler" cone="pyramidal"/>
  <asset>
    <material name="default" rgba="1 1 1 1"/>
  </asset>
  <worldbody>
    <geom name="{GROUND}" type="plane" size="0 0 1" friction="1 0.005 0.0001" rgba=".5 .5 .5 1"/>
    <geom name="{WALL}" type="plane" size="0 0 1" pos="1 0 0.1" zaxis="-1 0 0" friction="0.6 0.005 0.0001" rgba=".7 .7 .6 1"/>
    <body name="{BASE}" pos="0 0 0.5">
      <freejoint/>
      <inertial pos="0 0 0" mass="{float(prof.mass):.9g}" diaginertia="{_v(inertia)}"/>
      <geom name="hull" type="box" size="{_v(hull)}" rgba=".3 .3 .35 1"/>
      {chr(10).join('      ' + g for g in geoms).strip()}
      <geom name="arm" type="capsule" fromto="{_v(arm_base)} {_v(ee)}" size="{ARM_RADIUS:.9g}" rgba=".4 .4 .4 1"/>
      <geom name="end_effector" type="sphere" size="{float(prof.ee_radius):.9g}" pos="{_v(ee)}" rgba=".9 .2 .2 1"/>
      <site name="{EE_SITE}" pos="{_v(ee)}"/>
    </body>{box}
  </worldbody>
</mujoco>
"""
