"""The flapping-wing robot on a driven base (imposed body motion), and the
robot's weight and centre of mass read from the MJCF.

The driven base slides along body x, y and hinges about body x, y, z through
the centre of mass (dofs 0..4, :data:`DRIVE_JOINTS`), each joint with a large
armature (a flywheel), so a velocity set at t = 0 stays nearly constant while
the wings flap: an imposed body velocity or angular velocity. The cycle-mean
body-frame loads against the mean drive velocity measure the damping
derivatives of the cycle-averaged model (the identification's damping study).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from jaxtyping import Array, Float

from flapjax.sim.flapper import model as flapper_model
from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot, robot_from_mjmodel
from flapjax.sim.flapper.state import init_state
from flapjax.sim.flapper.step import simulate
from flapjax.sim.flapper.sweep import cycle_window, map_in_chunks, program_key, window_steps
from flapjax.sim.rollout import window_mean
from flapjax.validation import check_positive

DRIVE_JOINTS = ("drive_x", "drive_y", "spin_x", "spin_y", "spin_z")


def _com_offset(model: mujoco.MjModel) -> np.ndarray:
    _, com, _ = flapper_model.composite_inertia(model, "base")
    return np.asarray(com - model.body("base").pos, dtype=float)


def robot_com_offset() -> np.ndarray:
    """(3,) robot centre of mass minus base origin at rest (body frame) [m]."""
    return _com_offset(flapper_model.build("fixed"))


def robot_weight() -> tuple[float, float]:
    """(mass [kg], gravity [m/s^2]) of the MJCF robot."""
    m = flapper_model.build("fixed")
    mass, _, _ = flapper_model.composite_inertia(m, "base")
    return float(mass), float(-m.opt.gravity[2])


def make_driven_robot(armature: float = 10.0) -> FlapperRobot:
    """The per-wing robot on a driven base: slides along body x, y and hinges
    about body x, y, z through the centre of mass (dofs 0..4, in that order),
    each with ``armature`` [kg or kg m^2], so a velocity set at t = 0 stays
    (nearly) constant: an imposed body velocity or angular velocity."""
    check_positive("damping.armature", armature)
    spec = flapper_model.load_spec()
    rel = _com_offset(spec.compile())
    base = spec.body("base")
    slide, hinge = mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_HINGE
    for name, kind, axis in zip(
        DRIVE_JOINTS, (slide, slide, hinge, hinge, hinge), ([1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1])
    ):
        base.add_joint(name=name, type=kind, axis=axis, pos=rel, armature=float(armature))
    m = spec.compile()
    assert [int(m.jnt_dofadr[m.joint(n).id]) for n in DRIVE_JOINTS] == list(range(5))
    return robot_from_mjmodel(m, root="fixed", aero_model="wing")


class DrivenMean(eqx.Module):
    """Cycle-mean loads of a driven-base run, body frame, about the centre of mass.

    Attributes:
      force: (3,) aerodynamic force [N]; moment: (3,) moment [N m];
      drive: (5,) mean drive velocities (v_x, v_y [m/s], omega_x,y,z [rad/s]).
    """

    force: Float[Array, "3"]
    moment: Float[Array, "3"]
    drive: Float[Array, "5"]


def driven_cycle_mean(
    robot: FlapperRobot, params: FlapperParams, drive, n_steps: int, discard_steps: int, com_offset
) -> DrivenMean:
    """One driven-base world from its (5,) initial drive velocity; cycle means
    after ``discard_steps`` (:func:`flapjax.sim.flapper.cycle_window`);
    ``com_offset`` (3,) from :func:`robot_com_offset` [m]."""
    state = init_state(robot, params)
    qvel = state.data.qvel.at[:5].set(jnp.asarray(drive, dtype=state.data.qvel.dtype))
    state = eqx.tree_at(lambda s: s.data.qvel, state, qvel)
    rel = jnp.asarray(com_offset, dtype=qvel.dtype)
    b = robot.base_body

    def observe(new, dg):
        # new.data's kinematics are those the step's aerodynamics used.
        rot = new.data.xmat[b]
        lever = rot @ rel
        moment_c = dg.moment_world - jnp.cross(lever, dg.force_world)
        return rot.T @ dg.force_world, rot.T @ moment_c, new.data.qvel[:5]

    _, (force, moment, vel) = simulate(robot, params, state, n_steps, observe=observe)
    w = cycle_window(params.stroke.frequency, n_steps, discard_steps, robot.dt)
    force, moment, drive = window_mean((force, moment, vel), w)
    return DrivenMean(force=force, moment=moment, drive=drive)


@eqx.filter_jit
def _driven_batch(robot, params, drives, n_steps: int, discard_steps: int, com_offset):
    return jax.vmap(lambda d: driven_cycle_mean(robot, params, d, n_steps, discard_steps, com_offset))(drives)


def driven_sweep(
    robot: FlapperRobot,
    params: FlapperParams,
    drives,
    *,
    duration: float,
    discard: float,
    batch_size: int = 4,
    com_offset=None,
) -> DrivenMean:
    """Cycle means of driven-base worlds, one per row of ``drives`` (n, 5),
    run in chunks of ``batch_size`` (one compilation).

    Args:
      drives: (n, 5) initial drive velocities (v_x, v_y [m/s], omega_x,y,z [rad/s]).
      duration: run length [s]; discard: transient dropped before averaging [s].
      com_offset: (3,) centre of mass minus base origin [m]; default
        :func:`robot_com_offset`.
    """
    n_steps, discard_steps = window_steps(robot, duration, discard)
    lever = jnp.asarray(robot_com_offset() if com_offset is None else com_offset)
    drives = jnp.asarray(np.asarray(drives, dtype=float))
    return map_in_chunks(lambda d: _driven_batch(robot, params, d, n_steps, discard_steps, lever), drives, batch_size,
                         key=program_key("driven", robot, params, n_steps, discard_steps, lever, per_world=drives))
