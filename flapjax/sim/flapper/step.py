"""One step of the flapping-wing robot, as named stages.

Per world and step (:func:`step`), top to bottom:

1. **read state** (the backend's ``read``): fresh kinematics and velocities
   of the current state (``fwd_position``, ``fwd_velocity``, or their
   pure-JAX equivalents),
   so the aerodynamics never lag a step behind (docs/mjx_notes.md, One-step
   lag); the base frame's motion; the wing and plate joint angles
   (:func:`read_joints`); the stroke reference (:func:`stroke_targets`);
2. **aero wrench**: per-wing model (:func:`wing_aero`): the plate's velocity
   in the plate frame (the frame the wings ride on) into the pure kernels
   :func:`flapjax.aero.wing_loads` and :func:`flapjax.aero.wing_wrench`, each
   wing's wrench (world frame, about its centre of mass); cycle-averaged
   model (:func:`averaged_aero`): :func:`flapjax.aero.cycle_averaged_wrench`
   on the base body;
3. **servo** (:func:`servo`): the stroke servos track
   ``psi(t) = d A sin(2 pi f t + phi0)`` with the feed-forward of
   :func:`flapjax.control.stroke.servo_setpoint`; the plate servos hold the
   commanded plate angles; the feathering stops
   (:func:`flapjax.aero.stop_torque`) are joint torques;
4. **advance** (the backend's ``advance``): MJX's constraint-free step
   (the model has no constraint rows), the pure-JAX rigid body, or the
   pure-JAX joint tree (:mod:`flapjax.sim.tree`), all semi-implicit Euler; the
   averaged model's plate motion (the plate rate's damping in stage 2, the
   lumped body's turn-back here: :mod:`flapjax.sim.flapper.plate_motion`);
5. **guard** (:func:`flapjax.sim.flapper.health.guard`): a world that turns
   unhealthy is frozen at its last healthy state, flagged, and says why.

The backend's stages (``model``, ``read``, ``advance``) come from
``STAGES[robot.backend]`` (:mod:`flapjax.sim.flapper.backends`, the
flapper's implementation of the protocol of :mod:`flapjax.sim.backend`;
the backend is chosen once, by :func:`flapjax.sim.flapper.make_robot`); the
stages in between are the same for all.

The robot has no deviation or stroke-plane joints: the kernels receive
``phi = Phi = 0`` and zero rates. (Were they added: the seed's stroke-plane
angle is antisymmetric, so a symmetric tilt of both stroke planes is
``Phi_left = Phi``, ``Phi_right = -Phi``.) Formulas, frames and units:
docs/physics.md, Flapping-wing step.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float
from mujoco import mjx

from flapjax import aero
from flapjax.aero.cycle_averaged import cycle_averaged_wrench
from flapjax.aero.hinge import stop_torque
from flapjax.control.stroke import advance_offset, servo_setpoint
from flapjax.sim import backend
from flapjax.sim.flapper import airspeed_rate, health, plate_motion
from flapjax.sim.flapper.backends import STAGES, frame_velocity
from flapjax.sim.flapper.channels import StrokeTargets, frequency_command, joint_setpoints, stroke_targets
from flapjax.sim.flapper.robot import SIDES, FlapperCommand, FlapperParams, FlapperRobot, FlapperState
from flapjax.sim.flapper.step_types import Actuation, AeroWrench, BaseFrame, FlapperDiagnostics, Joints
from flapjax.sim.rollout import rollout as scan_rollout
from flapjax.validation import ConfigError

Scalar = Float[Array, ""]
Vec2 = Float[Array, "2"]


# ---------------------------------------------------------------------------
# 1. Read state
# ---------------------------------------------------------------------------


def read_joints(robot: FlapperRobot, qpos: Float[Array, " nq"], command: FlapperCommand) -> Joints:
    """Stroke, feathering and plate angles (the plate command on the lumped body)."""
    if not robot.has_wings:
        zeros2 = jnp.zeros((2,), dtype=qpos.dtype)
        return Joints(stroke=zeros2, pitch=zeros2, plate=jnp.asarray(command.plate, dtype=qpos.dtype))
    return Joints(stroke=qpos[jnp.array(robot.stroke_q)], pitch=qpos[jnp.array(robot.pitch_q)],
                  plate=qpos[np.asarray(robot.plate_q, dtype=int)])


# ---------------------------------------------------------------------------
# 2. Aerodynamic wrench
# ---------------------------------------------------------------------------


def wing_aero(robot: FlapperRobot, params: FlapperParams, d: mjx.Data,
              wind: Float[Array, "3"] | None = None) -> AeroWrench:
    """Per-wing quasi-steady loads of both wings, written per wing body.

    ``wind``: (3,) uniform air velocity, world frame [m/s]; the kernels see
    the plate frame's velocity relative to the air, ``R^T (v - wind)``
    (a uniform wind shifts every point's velocity alike). None: still air.
    """
    x_ref = d.xpos[robot.base_body]
    rot_plate = d.xmat[robot.plate_body]
    v_w, w_w = frame_velocity(d, robot.plate_body, robot.plate_root)
    if wind is not None:
        v_w = v_w - jnp.asarray(wind, dtype=v_w.dtype)
    v_body, w_body = rot_plate.T @ v_w, rot_plate.T @ w_w
    xfrc = jnp.zeros((robot.model.nbody, 6), dtype=d.qpos.dtype)
    loads, forces, moments = [], [], []
    for k, side in enumerate(SIDES):
        kin = aero.WingKinematics(
            stroke=d.qpos[robot.stroke_q[k]],
            stroke_rate=d.qvel[robot.stroke_v[k]],
            pitch=d.qpos[robot.pitch_q[k]],
            pitch_rate=d.qvel[robot.pitch_v[k]],
        )
        ld = aero.wing_loads(robot.wing, kin, v_body=v_body, w_body=w_body, side=side, options=params.aero)
        b = robot.wing_bodies[k]
        ww = aero.wing_wrench(ld, side=side, rot_world_wing=d.xmat[b], pos_world_origin=d.xpos[b],
                              pos_world_com=d.xipos[b])
        xfrc = xfrc.at[b].set(ww.wrench)
        loads.append(ld)
        forces.append(ww.force_world)
        moments.append(ww.torque_world + jnp.cross(d.xipos[b] - x_ref, ww.force_world))
    return AeroWrench(
        xfrc=xfrc,
        force_world=forces[0] + forces[1],
        moment_world=moments[0] + moments[1],
        lift_total=jnp.abs(loads[0].normal_force) + jnp.abs(loads[1].normal_force),
        wing_force_world=jnp.stack(forces),
        wing_loads=jax.tree.map(lambda a, b: jnp.stack([a, b]), *loads),
        force_clipped=jnp.stack([loads[0].force_clipped, loads[1].force_clipped]),
    )


def averaged_aero(robot: FlapperRobot, params: FlapperParams, base: BaseFrame, f_cmd: Scalar, plate: Vec2,
                  wind: Float[Array, "3"] | None = None, plate_rate: Vec2 | None = None) -> AeroWrench:
    """Cycle-averaged wrench on the base body (seed section 10); its drag
    and speed couplings see the velocity relative to ``wind`` (3,) [m/s];
    ``plate_rate`` (2,) [rad/s] drives the stroke-plane damping."""
    v_air = base.v_com if wind is None else base.v_com - jnp.asarray(wind, dtype=base.v_com.dtype)
    avg = cycle_averaged_wrench(params.averaged, frequency=f_cmd, plate=plate, rot_world_body=base.rot_world_body,
                                v_world=v_air, w_body=base.w_body, plate_rate=plate_rate)
    dtype = base.origin.dtype
    xfrc = jnp.zeros((robot.model.nbody, 6), dtype=dtype).at[robot.base_body].set(avg.wrench)
    return AeroWrench(
        xfrc=xfrc,
        force_world=avg.force_world,
        moment_world=avg.torque_world + jnp.cross(base.com - base.origin, avg.force_world),
        lift_total=avg.thrust,
        wing_force_world=jnp.zeros((2, 3), dtype=avg.force_world.dtype),
        wing_loads=None,
        force_clipped=jnp.zeros((2,), dtype=bool),
    )


# ---------------------------------------------------------------------------
# 3. Servos and hinge stops
# ---------------------------------------------------------------------------


def servo(robot: FlapperRobot, params: FlapperParams, m: mjx.Model, ref: StrokeTargets, joints: Joints,
          command: FlapperCommand) -> Actuation:
    """Stroke servo set points with feed-forward, plate servo set points and
    the feathering-stop torques; nothing on the lumped body."""
    dtype = joints.pitch.dtype
    ctrl = jnp.zeros((m.nu,), dtype=dtype)
    qfrc = jnp.zeros((m.nv,), dtype=dtype)
    if not robot.has_wings:
        return Actuation(ctrl=ctrl, qfrc=qfrc)
    sv, sa = np.array(robot.stroke_v), np.array(robot.stroke_act)
    # Position servo kp (u - psi) whose velocity gain is the joint damping kv.
    u = servo_setpoint(ref.angle, ref.rate, ref.acceleration, kp=m.actuator_gainprm[sa, 0], kv=m.dof_damping[sv],
                       inertia=robot.stroke_inertia)
    ctrl = ctrl.at[sa].set(u).at[np.asarray(robot.plate_act, dtype=int)].set(
        joint_setpoints(robot.channel_kinds, command.plate, dtype))
    qfrc = qfrc.at[np.array(robot.pitch_v)].set(stop_torque(params.hinge, joints.pitch))
    return Actuation(ctrl=ctrl, qfrc=qfrc)


# ---------------------------------------------------------------------------
# The step
# ---------------------------------------------------------------------------


def command_from_params(params: FlapperParams) -> FlapperCommand:
    """Open-loop command: the schedule's frequency and the channel values (the seed's plate angles)."""
    return FlapperCommand(frequency=params.stroke.frequency, plate=params.plate)


def step(
    robot: FlapperRobot,
    params: FlapperParams,
    state: FlapperState,
    command: FlapperCommand | None = None,
    *,
    wind: Float[Array, "3"] | None = None,
) -> tuple[FlapperState, FlapperDiagnostics]:
    """Advance one world by one timestep (see the module docstring).

    ``command`` (frequency, plate angles) defaults to the open-loop values in
    ``params``. ``wind``: (3,) uniform air velocity over this step, world
    frame [m/s]; both aerodynamic models see the body's velocity relative to
    the air (docs/physics.md, Wind); None (default): still air, the same
    operations as before the input existed. No batch axis: ``jax.vmap`` adds it.
    """
    if jnp.ndim(params.stroke.frequency) != 0:
        raise ConfigError(f"params: one world's parameters expected (stroke.frequency has shape "
                          f"{jnp.shape(params.stroke.frequency)}); batch worlds with jax.vmap or flapper.sweep")
    command = command_from_params(params) if command is None else command
    stages = STAGES[robot.backend]
    m = stages.model(robot, params)
    d, base, frames = stages.read(robot, m, state.data)  # 1. read state
    f_cmd = frequency_command(robot, command.frequency, command.plate, d.qpos.dtype)
    joints = read_joints(robot, d.qpos, command)
    ref = stroke_targets(robot, params, state, f_cmd, command.plate)
    # the plate's turn over this step [rad], which the averaged model's plate-motion terms read
    turn, last_plate, last_plate_rate = plate_motion.plate_turn(robot, state, joints.plate, f_cmd)
    if robot.aero_model == "wing":  # 2. aerodynamic wrench
        loads = wing_aero(robot, params, d, wind)
    else:
        loads = averaged_aero(robot, params, base, f_cmd, joints.plate, wind, None if turn is None else turn / robot.dt)
    loads, last_airspeed = airspeed_rate.airspeed_moment(robot, params.averaged, state, base, wind, f_cmd, loads)
    act = servo(robot, params, m, ref, joints, command)  # 3. servos, hinge stops
    d_new = stages.advance(robot, m, d, loads.xfrc, act, frames)  # 4. advance
    if turn is not None:
        d_new = plate_motion.turn_back(robot, params.averaged, d_new, turn, state.last_plate_rate, robot.dt)
    healthy, code = health.guard(robot, params, state, d_new, base, loads.force_world, f_cmd)  # 5. guard
    new_state = FlapperState(
        data=backend.keep_good(healthy, d_new, state.data),
        step=state.step + 1, healthy=healthy, health=code,
        phase_offset=advance_offset(state.phase_offset, f_cmd, params.stroke.frequency, robot.dt),
        last_plate=last_plate, last_plate_rate=last_plate_rate, last_airspeed=last_airspeed,
    )
    return new_state, diagnostics(robot, state, loads, joints, ref, f_cmd)


def diagnostics(robot: FlapperRobot, state: FlapperState, loads: AeroWrench, joints: Joints, ref: StrokeTargets,
                f_cmd: Scalar) -> FlapperDiagnostics:
    """What the step applied and measured (see :class:`FlapperDiagnostics`)."""
    psi_ref = ref.angle if robot.has_wings else jnp.zeros_like(joints.stroke)
    return FlapperDiagnostics(
        time=state.step.astype(loads.force_world.dtype) * robot.dt,
        force_world=loads.force_world,
        moment_world=loads.moment_world,
        lift_total=loads.lift_total,
        wing_force_world=loads.wing_force_world,
        wing_loads=loads.wing_loads,
        force_clipped=loads.force_clipped,
        stroke=joints.stroke,
        stroke_reference=psi_ref,
        stroke_error=joints.stroke - psi_ref,
        pitch=joints.pitch,
        plate=joints.plate,
        frequency=f_cmd,
    )


def rollout(
    robot: FlapperRobot,
    params: FlapperParams,
    state: FlapperState,
    n_steps: int,
    *,
    observe=None,
    checkpoint: bool = True,
) -> tuple[FlapperState, Any]:
    """Open-loop rollout of one world (``jax.lax.scan``); returns (final, trace)."""
    return scan_rollout(lambda p, s: step(robot, p, s), params, state, n_steps, observe=observe, checkpoint=checkpoint)
