"""The two physics backends of the flapping-wing robot: its implementation
of the backend protocol (:class:`flapjax.sim.backend.Backend`).

:data:`STAGES` holds one :class:`~flapjax.sim.backend.Backend` per name of
:data:`flapjax.sim.backend.BACKENDS`, as the multirotor's does
(:data:`flapjax.sim.multirotor.backends.STAGES`); :func:`flapjax.sim.flapper.step`
runs ``STAGES[robot.backend]``:

- ``model`` (:func:`model_for`): the MJX model with this world's feathering
  spring and damper (both backends: the pure-JAX joint tree reads the same
  model);
- ``initial`` (:func:`initial_mjx` / :func:`initial_rigid`): the state at
  the start pose of :func:`flapjax.sim.flapper.init_state`, stroke joints
  on the schedule;
- ``read`` (:func:`read_mjx` / :func:`read_rigid`): fresh kinematics and
  velocities of the current state and the base frame's motion;
- ``advance`` (:func:`advance_mjx` / :func:`advance_rigid`): one
  semi-implicit Euler step under the wing and body wrenches, the joint
  torques and the servo set points.

The ``"rigid"`` backend runs one of two pure-JAX integrators, chosen by the
robot's root through :attr:`FlapperRobot.dynamics` (an internal name, not a
backend name): the lumped root's single body (:mod:`flapjax.sim.rigid`:
:func:`read_body`, :func:`advance_body`; no joints, no servos), or the joint
tree of the fixed and free roots (:mod:`flapjax.sim.tree`:
:func:`read_tree`, :func:`advance_tree`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float
from mujoco import mjx

from flapjax.control.stroke import stroke_reference
from flapjax.sim import backend, rigid, tree
from flapjax.sim.flapper.channels import joint_setpoints
from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot
from flapjax.sim.flapper.step_types import Actuation, BaseFrame

Vec3 = Float[Array, "3"]


# ---------------------------------------------------------------------------
# model
# ---------------------------------------------------------------------------


def model_for(robot: FlapperRobot, params: FlapperParams) -> mjx.Model:
    """The MJX model with this world's feathering spring and damper."""
    m = robot.model
    if not robot.has_wings:
        return m
    jnt = np.array(robot.pitch_jnt)
    dof = np.array(robot.pitch_v)
    k = jnp.broadcast_to(params.hinge.stiffness, (2,)).astype(m.jnt_stiffness.dtype)
    b = jnp.broadcast_to(params.hinge.damping, (2,)).astype(m.dof_damping.dtype)
    return m.replace(jnt_stiffness=m.jnt_stiffness.at[jnt].set(k), dof_damping=m.dof_damping.at[dof].set(b))


# ---------------------------------------------------------------------------
# initial
# ---------------------------------------------------------------------------


def initial_mjx(robot: FlapperRobot, params: FlapperParams, position: Vec3 | None, quat: Float[Array, "4"] | None,
                velocity: Vec3 | None, angular_velocity: Vec3 | None) -> mjx.Data:
    """MJX data at the start pose (None: the MJCF's), the stroke joints on
    the schedule's ``psi(0)``, ``psi_dot(0)`` (at rest on the averaged
    model), the plates at their set points. Units: :func:`init_state`."""
    m = robot.model
    d = mjx.make_data(m)
    qvel = d.qvel
    qpos = jnp.asarray(m.qpos0, dtype=d.qpos.dtype)
    if robot.root in ("free", "lumped"):
        a, v = robot.free_q, robot.free_v
        if position is not None:
            qpos = qpos.at[a : a + 3].set(position)
        if quat is not None:
            q = jnp.asarray(quat, dtype=qpos.dtype)
            qpos = qpos.at[a + 3 : a + 7].set(q / jnp.linalg.norm(q))
        if velocity is not None:
            qvel = qvel.at[v : v + 3].set(velocity)
        if angular_velocity is not None:
            qvel = qvel.at[v + 3 : v + 6].set(angular_velocity)
    if robot.has_wings:
        psi, psi_dot, _ = stroke_reference(params.stroke, jnp.zeros((), dtype=qpos.dtype))
        if robot.aero_model == "averaged":
            psi, psi_dot = jnp.zeros_like(psi), jnp.zeros_like(psi_dot)
        qpos = qpos.at[jnp.array(robot.stroke_q)].set(psi)
        qvel = qvel.at[jnp.array(robot.stroke_v)].set(psi_dot)
        qpos = qpos.at[np.asarray(robot.plate_q, dtype=int)].set(joint_setpoints(robot.channel_kinds, params.plate))
    return d.replace(qpos=qpos, qvel=qvel)


def initial_body(robot: FlapperRobot, params: FlapperParams, position: Vec3 | None, quat: Float[Array, "4"] | None,
                 velocity: Vec3 | None, angular_velocity: Vec3 | None) -> rigid.RigidState:
    """The lumped body's state at the start pose (None: the MJCF's, at rest)."""
    dtype = robot.rigid_body.mass.dtype
    q0 = jnp.asarray(robot.model.qpos0, dtype=dtype)
    a = robot.free_q
    given = lambda x: jnp.asarray(x, dtype=dtype)  # noqa: E731
    return rigid.RigidState(
        position=q0[a : a + 3] if position is None else given(position),
        quat=q0[a + 3 : a + 7] if quat is None else given(quat) / jnp.linalg.norm(given(quat)),
        velocity=jnp.zeros(3, dtype) if velocity is None else given(velocity),
        angular_velocity=jnp.zeros(3, dtype) if angular_velocity is None else given(angular_velocity),
    )


def initial_rigid(robot: FlapperRobot, params: FlapperParams, *pose) -> rigid.RigidState | mjx.Data:
    """The rigid backend's start: :func:`initial_body` on the lumped root,
    else the joint tree's (MJX-shaped) data of :func:`initial_mjx`."""
    return (initial_body if robot.dynamics == "rigid_body" else initial_mjx)(robot, params, *pose)


# ---------------------------------------------------------------------------
# read
# ---------------------------------------------------------------------------


def frame_velocity(d: mjx.Data, body: int, root: int) -> tuple[Vec3, Vec3]:
    """World (linear velocity at the body origin [m/s], angular velocity [rad/s])
    from ``cvel``, which is measured at the subtree CoM of the body's root
    (docs/mjx_notes.md, Velocities)."""
    omega = d.cvel[body, :3]
    v = d.cvel[body, 3:] + jnp.cross(omega, d.xpos[body] - d.subtree_com[root])
    return v, omega


def base_frame(robot: FlapperRobot, d: mjx.Data) -> BaseFrame:
    """The base body's motion from MJX data whose kinematics and velocities are current."""
    b = robot.base_body
    rot = d.xmat[b]
    v_w, w_w = frame_velocity(d, b, robot.base_root)
    v_com = v_w + jnp.cross(w_w, d.xipos[b] - d.xpos[b])
    return BaseFrame(rot_world_body=rot, origin=d.xpos[b], com=d.xipos[b], v_com=v_com, w_body=rot.T @ w_w)


def read_mjx(robot: FlapperRobot, m: mjx.Model, d: mjx.Data) -> tuple[mjx.Data, BaseFrame, None]:
    """Fresh kinematics and velocities of the current state, and the base frame's motion."""
    d = mjx.fwd_velocity(m, mjx.fwd_position(m, d))
    return d, base_frame(robot, d), None


def read_tree(robot: FlapperRobot, m: mjx.Model, d: mjx.Data) -> tuple[mjx.Data, BaseFrame, tree.Frames]:
    """The pure-JAX tree's kinematics and velocities of the current state
    (:func:`flapjax.sim.tree.forward`), the base frame's motion, and the
    frames and Jacobians, which :func:`advance_tree` reuses."""
    fr = tree.frames(m, d.qpos)
    d = tree.forward(m, d, fr)
    return d, base_frame(robot, d), fr


def read_body(robot: FlapperRobot, m: mjx.Model, s: rigid.RigidState) -> tuple[rigid.RigidState, BaseFrame, None]:
    """The lumped body's frame (its state already is the base's motion)."""
    body = robot.rigid_body
    return s, BaseFrame(rot_world_body=s.rotation, origin=s.position, com=rigid.com_position(body, s),
                        v_com=rigid.com_velocity(body, s), w_body=s.angular_velocity), None


def read_rigid(robot: FlapperRobot, m: mjx.Model, data) -> tuple:
    """The rigid backend's read: :func:`read_body` on the lumped root, else :func:`read_tree`."""
    return (read_body if robot.dynamics == "rigid_body" else read_tree)(robot, m, data)


# ---------------------------------------------------------------------------
# advance
# ---------------------------------------------------------------------------


def advance_mjx(robot: FlapperRobot, m: mjx.Model, d: mjx.Data, xfrc: Array, act: Actuation, frames=None) -> mjx.Data:
    """MJX's constraint-free step with the applied wrenches ``xfrc`` (nbody, 6)
    [N, N m], joint torques and set points (``act``)."""
    d = d.replace(xfrc_applied=xfrc, qfrc_applied=act.qfrc, ctrl=act.ctrl)
    return backend.advance_mjx_smooth(m, d)


def advance_tree(robot: FlapperRobot, m: mjx.Model, d: mjx.Data, xfrc: Array, act: Actuation,
                 frames: tree.Frames | None = None) -> mjx.Data:
    """The pure-JAX joint-tree step with the applied wrenches, torques and
    set points (``frames``: those :func:`read_tree` computed for this state)."""
    return tree.step(m, d.replace(xfrc_applied=xfrc, qfrc_applied=act.qfrc, ctrl=act.ctrl), frames)


def advance_body(robot: FlapperRobot, m: mjx.Model, s: rigid.RigidState, xfrc: Array, act: Actuation,
                 frames=None) -> rigid.RigidState:
    """The pure-JAX rigid step under the base body's wrench (no joints, no servos)."""
    return backend.advance_rigid(robot.rigid_body, s, xfrc[robot.base_body], robot.dt)


def advance_rigid(robot: FlapperRobot, m: mjx.Model, data, xfrc: Array, act: Actuation, frames=None):
    """The rigid backend's advance: :func:`advance_body` on the lumped root, else :func:`advance_tree`."""
    return (advance_body if robot.dynamics == "rigid_body" else advance_tree)(robot, m, data, xfrc, act, frames)


#: ``read(robot, m, data) -> (data, BaseFrame, frames)``, where ``frames`` is
#: what the read computed that the advance needs again (the joint tree's
#: :class:`flapjax.sim.tree.Frames`; None otherwise);
#: ``advance(robot, m, data, xfrc, act, frames) -> data``.
MJX = backend.Backend("mjx", model=model_for, initial=initial_mjx, read=read_mjx, advance=advance_mjx)
RIGID = backend.Backend("rigid", model=model_for, initial=initial_rigid, read=read_rigid, advance=advance_rigid)
#: The flapper's backends by name (:func:`flapjax.sim.backend.registry`).
STAGES = backend.registry(MJX, RIGID)
