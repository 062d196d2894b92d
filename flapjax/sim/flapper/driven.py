"""The flapping-wing robot on a driven base (imposed body motion), and the
robot's weight and centre of mass read from the MJCF.

The driven base slides along body x, y and hinges about body x, y, z through
the centre of mass (dofs 0..4, :data:`DRIVE_JOINTS`), each joint with a large
armature (a flywheel), so a velocity set at t = 0 stays nearly constant while
the wings flap: an imposed body velocity or angular velocity. The cycle-mean
body-frame loads against the mean drive velocity measure the damping
derivatives of the cycle-averaged model (the identification's damping study);
with zero drive velocity the base is held (to < 1e-5 rad/s) and plate tilts
measure the control moments (the moments study).

Moments are taken about the robot's instantaneous centre of mass (the
``subtree_com`` of the base: the stroking wings and the tilted plate move it),
the point a free robot's cycle-mean rotation obeys, not about the base origin
or the centre of mass at rest.
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from jaxtyping import Array, Float

from flapjax.sim import tree
from flapjax.sim.flapper import description_model
from flapjax.sim.flapper import model as flapper_model
from flapjax.sim.flapper.description import FlapperDescription
from flapjax.sim.flapper.description_model import resolve_description
from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot, robot_from_mjmodel
from flapjax.sim.flapper.state import init_state
from flapjax.sim.flapper.step import rollout
from flapjax.sim.flapper.chunks import map_in_chunks, program_key
from flapjax.sim.flapper.sweep import cycle_window, sweep_params, window_steps
from flapjax.sim.rollout import window_mean
from flapjax.validation import check_positive

DRIVE_JOINTS = ("drive_x", "drive_y", "spin_x", "spin_y", "spin_z")


def _com_offset(model: mujoco.MjModel, base: str = "base") -> np.ndarray:
    _, com, _ = flapper_model.composite_inertia(model, base)
    return np.asarray(com - model.body(base).pos, dtype=float)


def robot_com_offset() -> np.ndarray:
    """(3,) robot centre of mass minus base origin at rest (body frame) [m]."""
    return _com_offset(flapper_model.build("fixed"))


def robot_weight(description: FlapperDescription | str | Path | None = None) -> tuple[float, float]:
    """(mass [kg], gravity [m/s^2]) of the MJCF robot (default the seed's;
    or the robot of a description, docs/flapper_robots.md)."""
    if description is None:
        m, base = flapper_model.build("fixed"), "base"
    else:
        description = resolve_description(description)
        m, base = description_model.build(description), description.names.base
    mass, _, _ = flapper_model.composite_inertia(m, base)
    return float(mass), float(-m.opt.gravity[2])


def make_driven_robot(armature: float = 10.0, backend: str = "rigid",
                      description: FlapperDescription | str | Path | None = None) -> FlapperRobot:
    """The per-wing robot on a driven base: slides along body x, y and hinges
    about body x, y, z through the centre of mass (dofs 0..4, in that order),
    each with ``armature`` [kg or kg m^2], so a velocity set at t = 0 stays
    (nearly) constant: an imposed body velocity or angular velocity.
    ``backend``: "rigid" (the pure-JAX joint tree, :mod:`flapjax.sim.tree`;
    a fixed base with slide and hinge joints) or "mjx". ``description``:
    the robot of a description file (default the seed robot)."""
    check_positive("damping.armature", armature)
    if description is None:
        spec, base_name, extra = flapper_model.load_spec(), "base", {}
    else:
        description = resolve_description(description)
        spec, base_name = description_model.load_spec(description), description.names.base
        extra = {"names": description.names, "wing": description.wing}
    rel = _com_offset(spec.compile(), base_name)
    base = spec.body(base_name)
    slide, hinge = mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_HINGE
    for name, kind, axis in zip(
        DRIVE_JOINTS, (slide, slide, hinge, hinge, hinge), ([1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1])
    ):
        base.add_joint(name=name, type=kind, axis=axis, pos=rel, armature=float(armature))
    m = spec.compile()
    assert [int(m.jnt_dofadr[m.joint(n).id]) for n in DRIVE_JOINTS] == list(range(5))
    return robot_from_mjmodel(m, root="fixed", aero_model="wing", backend=backend, **extra)


class DrivenMean(eqx.Module):
    """Cycle-mean loads of a driven-base run, body frame, about the (moving) centre of mass.

    Attributes:
      force: (3,) aerodynamic force [N]; moment: (3,) moment [N m];
      drive: (5,) mean drive velocities (v_x, v_y [m/s], omega_x,y,z [rad/s]).
    """

    force: Float[Array, "3"]
    moment: Float[Array, "3"]
    drive: Float[Array, "5"]


def driven_cycle_mean(
    robot: FlapperRobot, params: FlapperParams, drive, n_steps: int, discard_steps: int, com_offset=None
) -> DrivenMean:
    """One driven-base world from its (5,) initial drive velocity; cycle means
    after ``discard_steps`` (:func:`flapjax.sim.flapper.cycle_window`).
    Moments about the instantaneous centre of mass of the robot, or, with
    ``com_offset`` (3,) (e.g. :func:`robot_com_offset`) [m], about that
    point fixed in the base."""
    state = init_state(robot, params)
    qvel = state.data.qvel.at[:5].set(jnp.asarray(drive, dtype=state.data.qvel.dtype))
    state = eqx.tree_at(lambda s: s.data.qvel, state, qvel)
    rel = None if com_offset is None else jnp.asarray(com_offset, dtype=qvel.dtype)
    b = robot.base_body

    def observe(new, dg):
        # new.data's kinematics are those the step's aerodynamics used; the
        # aerodynamic moment is about the base origin.
        rot = new.data.xmat[b]
        lever = new.data.subtree_com[b] - new.data.xpos[b] if rel is None else rot @ rel
        moment_c = dg.moment_world - jnp.cross(lever, dg.force_world)
        return rot.T @ dg.force_world, rot.T @ moment_c, new.data.qvel[:5]

    _, (force, moment, vel) = rollout(robot, params, state, n_steps, observe=observe)
    w = cycle_window(params.stroke.frequency, n_steps, discard_steps, robot.dt)
    force, moment, drive = window_mean((force, moment, vel), w)
    return DrivenMean(force=force, moment=moment, drive=drive)


@tree.filter_jit
def _driven_batch(robot, worlds, n_steps: int, discard_steps: int, com_offset):
    params, drives = worlds
    return jax.vmap(lambda p, d: driven_cycle_mean(robot, p, d, n_steps, discard_steps, com_offset))(params, drives)


def driven_sweep(
    robot: FlapperRobot,
    params: FlapperParams,
    drives,
    *,
    duration: float,
    discard: float,
    batch_size: int = 4,
    com_offset=None,
    frequencies=None,
    plate=None,
) -> DrivenMean:
    """Cycle means of driven-base worlds, one per row of ``drives`` (n, 5),
    run in chunks of ``batch_size`` (one compilation for any mix of drives,
    frequencies and plate angles).

    Args:
      params: shared parameters (frequency and plate unless given per world).
      drives: (n, 5) initial drive velocities (v_x, v_y [m/s], omega_x,y,z [rad/s]).
      duration: run length [s]; discard: transient dropped before averaging [s].
      com_offset: None: moments about the robot's instantaneous centre of
        mass; or (3,) a point fixed in the base (offset from its origin) [m].
      frequencies: () or (n,) flapping frequencies [Hz]; default ``params``'.
      plate: (2,) or (n, 2) plate angles (pitch_joint, roll_joint) [rad];
        default ``params``'.
    """
    n_steps, discard_steps = window_steps(robot, duration, discard)
    lever = None if com_offset is None else jnp.asarray(com_offset)
    drives = jnp.asarray(np.atleast_2d(np.asarray(drives, dtype=float)))
    n = drives.shape[0]
    f = np.broadcast_to(np.asarray(params.stroke.frequency if frequencies is None else frequencies, dtype=float), (n,))
    worlds = (sweep_params(f, plate=params.plate if plate is None else plate, params=params, robot=robot), drives)
    return map_in_chunks(lambda w: _driven_batch(robot, w, n_steps, discard_steps, lever), worlds, batch_size,
                         key=program_key("driven", robot, n_steps, discard_steps, lever, per_world=worlds))
