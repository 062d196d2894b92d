"""The two physics backends of a multirotor world: its implementation of
the backend protocol (:class:`flapjax.sim.backend.Backend`), chosen once at
construction.

:data:`STAGES` holds one :class:`~flapjax.sim.backend.Backend` per name of
:data:`flapjax.sim.backend.BACKENDS`, as the flapper's does
(:data:`flapjax.sim.flapper.backends.STAGES`);
:class:`~flapjax.sim.multirotor.MultirotorWorld` runs ``STAGES[world.backend]``.
Each backend gives the model of one world (``model``), the robot at rest
(``initial``), the state as the step reads it (``read``: the same
:func:`flapjax.sim.multirotor.step.read_state` of ``qpos``/``qvel`` for both)
and one step under the realized world wrench (``advance``, which also
reports contact). Everything else in a step is shared
(:mod:`flapjax.sim.multirotor.step`).

- :data:`MJX`: the MJX model with the world's scene and mass,
  ``xfrc_applied`` + ``mjx.step`` (:func:`flapjax.sim.backend.advance_mjx`),
  real contacts;
- :data:`RIGID`: the pure-JAX free body
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
from flapjax.sim.multirotor.step import BodyState, read_state
from flapjax.sim.multirotor.types import Prepared, WorldParams, WorldStructure


def cast(tree, dtype):
    """``tree`` with every floating JAX array cast to ``dtype``."""
    def f(x):
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating):
            return jnp.asarray(x, dtype=dtype)
        return x

    return jax.tree.map(f, tree)


# ---------------------------------------------------------------------------
# MJX: contacts with the ground, the wall and the box
# ---------------------------------------------------------------------------


def model_mjx(world: WorldStructure, params: WorldParams):
    """The MJX model of one world: the wall pose, frictions, ground height,
    box size and friction, robot mass and inertia from ``params``."""
    return mm.world_model(world.model, world.ids, params.scene, params.profile, with_box=world.with_box)


def initial_mjx(world: WorldStructure, params: WorldParams, position, yaw, box_position=None):
    """MJX data of the robot at rest at ``position`` (3,) [m], heading ``yaw``
    [rad]; the box (worlds with one) at ``box_position`` (3,) [m], default
    resting on the ground 0.6 m ahead of the origin."""
    data = world.data0
    qpos = data.qpos
    position = jnp.asarray(position, dtype=qpos.dtype)
    qpos = qpos.at[0:3].set(position).at[3:7].set(quat_z(jnp.asarray(yaw, dtype=qpos.dtype)))
    if world.with_box:
        if box_position is None:
            box_position = jnp.stack([jnp.asarray(0.6), jnp.asarray(0.0),
                                      params.scene.ground_height + params.scene.box_half_size[2]])
        bp = jnp.asarray(box_position, dtype=qpos.dtype)
        qpos = qpos.at[7:10].set(bp).at[10:14].set(jnp.array([1.0, 0, 0, 0], dtype=qpos.dtype))
    return data.replace(qpos=qpos)


def advance_mjx(world: WorldStructure, prepared: Prepared, data: Any, wrench_world: Float[Array, "6"]
                ) -> tuple[Any, Bool[Array, ""], Float[Array, "3"]]:
    """Next data under ``wrench_world`` (6,) [N, N m], whether a contact force
    acts on the robot, and the total contact force on it (world frame) [N]."""
    dtype = prepared.params.profile.mass.dtype
    if world.unrolled_solver:
        new = step_fixed_iterations(prepared.model, backend.with_body_wrench(data, world.ids.base, wrench_world),
                                    world.iterations)
    else:
        new = backend.advance_mjx(prepared.model, data, world.ids.base, wrench_world)
    if world.dtype is not None:
        new = cast(new, world.dtype)
    return new, jnp.any(new.qfrc_constraint[0:6] != 0), new.qfrc_constraint[0:3].astype(dtype)


# ---------------------------------------------------------------------------
# Rigid: pure JAX, contact-free, several times cheaper per world-step
# ---------------------------------------------------------------------------


def model_rigid(world: WorldStructure, params: WorldParams) -> rigid.PreparedBody:
    """The :func:`flapjax.sim.rigid.prepare`-d body of one world (its mass and inertia)."""
    prof = params.profile
    gravity = jnp.asarray(world.mj_model.opt.gravity, prof.mass.dtype)
    return rigid.prepare(rigid.RigidBody(prof.mass, prof.inertia, gravity=gravity))


def initial_rigid(world: WorldStructure, params: WorldParams, position, yaw, box_position=None) -> rigid.RigidState:
    """The free body at rest at ``position`` (3,) [m], heading ``yaw`` [rad] (no box)."""
    ftype = world.dtype if world.dtype is not None else params.profile.mass.dtype
    position = jnp.asarray(position, dtype=ftype)
    return rigid.RigidState.at_rest(position, quat_z(jnp.asarray(yaw, dtype=ftype)))


def advance_rigid(world: WorldStructure, prepared: Prepared, data: rigid.RigidState, wrench_world: Float[Array, "6"]
                  ) -> tuple[rigid.RigidState, Bool[Array, ""], Float[Array, "3"]]:
    """Next state under ``wrench_world`` (6,) [N, N m], whether a collision
    shape reached the ground or the wall, and a zero contact force."""
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


# ---------------------------------------------------------------------------
# Both
# ---------------------------------------------------------------------------


def read(world: WorldStructure, prepared: Prepared, data) -> BodyState:
    """The robot's state as the step reads it, in the profile's dtype (both
    backends: ``qpos``/``qvel`` already are the current state)."""
    return read_state(data, prepared.params.profile.mass.dtype)


MJX = backend.Backend("mjx", model=model_mjx, initial=initial_mjx, read=read, advance=advance_mjx)
RIGID = backend.Backend("rigid", model=model_rigid, initial=initial_rigid, read=read, advance=advance_rigid)
#: The multirotor's backends by name (:func:`flapjax.sim.backend.registry`).
STAGES = backend.registry(MJX, RIGID)
