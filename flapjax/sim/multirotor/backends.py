"""The two physics backends of a multirotor world, chosen once at construction.

Each backend knows three things: the model of one world (:meth:`model`), the
robot at rest (:meth:`at_rest`) and one step under the realized world wrench
(:meth:`advance`, which also reports contact). Everything else in a step is
shared (:mod:`flapjax.sim.multirotor.step`).

- :class:`MjxPhysics`: the MJX model with the world's scene and mass,
  ``xfrc_applied`` + ``mjx.step`` (:func:`flapjax.sim.backend.advance_mjx`),
  real contacts;
- :class:`RigidPhysics`: the pure-JAX free body
  (:func:`flapjax.sim.backend.advance_rigid`), same semi-implicit Euler, no
  contacts: a world whose hull, hubs, arm or end-effector reaches the ground
  or the wall is flagged ``touching``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from flapjax import scene as sc
from flapjax.math import quat_z
from flapjax.sim import backend, rigid
from flapjax.sim.multirotor import model as mm
from flapjax.sim.multirotor.gradient import step_fixed_iterations
from flapjax.sim.multirotor.types import Prepared, WorldParams, WorldStructure


def cast(tree, dtype):
    """``tree`` with every floating JAX array cast to ``dtype``."""
    def f(x):
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating):
            return jnp.asarray(x, dtype=dtype)
        return x

    return jax.tree.map(f, tree)


class MjxPhysics:
    """MuJoCo MJX: contacts with the ground, the wall and the box."""

    name = "mjx"

    @staticmethod
    def model(world: WorldStructure, params: WorldParams):
        return mm.world_model(world.model, world.ids, params.scene, params.profile, with_box=world.with_box)

    @staticmethod
    def at_rest(world: WorldStructure, params: WorldParams, position, yaw, box_position=None):
        data = world.data0
        qpos = data.qpos
        position = jnp.asarray(position, dtype=qpos.dtype)
        qpos = qpos.at[0:3].set(position).at[3:7].set(quat_z(jnp.asarray(yaw, dtype=qpos.dtype)))
        if world.with_box:
            if box_position is None:  # resting on the ground, 0.6 m ahead of the origin
                box_position = jnp.stack([jnp.asarray(0.6), jnp.asarray(0.0),
                                          params.scene.ground_height + params.scene.box_half_size[2]])
            bp = jnp.asarray(box_position, dtype=qpos.dtype)
            qpos = qpos.at[7:10].set(bp).at[10:14].set(jnp.array([1.0, 0, 0, 0], dtype=qpos.dtype))
        return data.replace(qpos=qpos)

    @staticmethod
    def advance(world: WorldStructure, prepared: Prepared, data: Any, wrench_world: Float[Array, "6"]
                ) -> tuple[Any, Bool[Array, ""], Float[Array, "3"]]:
        """Next data, whether a contact force acts on the robot, and the total
        contact force on it (world frame) [N]."""
        dtype = prepared.params.profile.mass.dtype
        if world.unrolled_solver:
            new = step_fixed_iterations(prepared.model, backend.with_body_wrench(data, world.ids.base, wrench_world),
                                        world.iterations)
        else:
            new = backend.advance_mjx(prepared.model, data, world.ids.base, wrench_world)
        if world.dtype is not None:
            new = cast(new, world.dtype)
        return new, jnp.any(new.qfrc_constraint[0:6] != 0), new.qfrc_constraint[0:3].astype(dtype)


class RigidPhysics:
    """Pure-JAX rigid body: contact-free, several times cheaper per world-step."""

    name = "rigid"

    @staticmethod
    def model(world: WorldStructure, params: WorldParams):
        prof = params.profile
        gravity = jnp.asarray(world.mj_model.opt.gravity, prof.mass.dtype)
        return rigid.prepare(rigid.RigidBody(prof.mass, prof.inertia, gravity=gravity))

    @staticmethod
    def at_rest(world: WorldStructure, params: WorldParams, position, yaw, box_position=None):
        ftype = world.dtype if world.dtype is not None else params.profile.mass.dtype
        position = jnp.asarray(position, dtype=ftype)
        return rigid.RigidState.at_rest(position, quat_z(jnp.asarray(yaw, dtype=ftype)))

    @staticmethod
    def advance(world: WorldStructure, prepared: Prepared, data: rigid.RigidState, wrench_world: Float[Array, "6"]
                ) -> tuple[rigid.RigidState, Bool[Array, ""], Float[Array, "3"]]:
        """Next state, whether a collision shape reached the ground or the
        wall, and a zero contact force."""
        params = prepared.params
        dtype = params.profile.mass.dtype
        ftype = wrench_world.dtype
        new = backend.advance_rigid(prepared.model, data, wrench_world.astype(dtype), world.dt)
        new = jax.tree.map(lambda x: x.astype(ftype), new)
        planes = jnp.stack([jnp.concatenate([n, c[None]]) for n, c in
                            (sc.ground_plane(params.scene), sc.wall_plane(params.scene))]).astype(ftype)
        centres, radii = mm.probes(params.profile)
        touching = rigid.touching(centres.astype(ftype), radii.astype(ftype), new, planes)
        return new, touching, jnp.zeros(3, dtype)


#: The physics of each of :data:`flapjax.sim.backend.BACKENDS`.
PHYSICS = {"mjx": MjxPhysics, "rigid": RigidPhysics}
