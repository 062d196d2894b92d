"""MJX bridge of the flapping-wing robot.

Per world and step (:func:`step`):

1. fresh kinematics and velocities of the current state (``fwd_position``,
   ``fwd_velocity``), so the aerodynamics never lag a step behind;
2. per-wing model: each wing's stroke ``psi`` and feathering ``theta`` angles
   and rates from ``qpos``/``qvel``, the plate's linear velocity at its origin
   and angular velocity in the plate frame (the frame the wings ride on), the
   pure kernels :func:`flapjax.aero.wing_loads` and
   :func:`flapjax.aero.wing_wrench`, and each wing's wrench (world frame,
   about the wing's centre of mass) written into ``xfrc_applied``;
   cycle-averaged model: :func:`flapjax.aero.cycle_averaged.cycle_averaged_wrench`
   applied to the base body;
3. the stroke servos track ``psi(t) = d A sin(2 pi f t + phi0)`` (position
   gain from the MJCF, velocity gain = the stroke joint damping, integrated
   implicitly, plus velocity and inertia feedforward); the plate servos hold
   the commanded plate angles; the feathering stops are smooth penalty torques
   in ``qfrc_applied``;
4. actuation, smooth acceleration (the model has no constraint rows) and one
   semi-implicit Euler step.

The robot has no deviation or stroke-plane joints: the kernels receive
``phi = Phi = 0`` and zero rates. (Were they added: the seed's stroke-plane
angle is antisymmetric, so a symmetric tilt of both stroke planes is
``Phi_left = Phi``, ``Phi_right = -Phi``.)

The root (``"fixed"``/``"free"``/``"lumped"``) and the aerodynamic model
(``"wing"``/``"averaged"``) are independent choices; every pair runs except
the per-wing model on the lumped body, which has no wings.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from jaxtyping import Array, Bool, Float, Int
from mujoco import mjx

from flapjax import aero
from flapjax.aero.cycle_averaged import CycleAveragedLoads, CycleAveragedParams, cycle_averaged_wrench
from flapjax.control.stroke import StrokeSchedule, advance_offset, phase_cycles, stroke_reference
from flapjax.math import quat_to_mat
from flapjax.sim import flapper_model, rigid
from flapjax.sim.rollout import batch_rollout, pad_worlds, rollout, slice_worlds
from flapjax.validation import ConfigError, as_float_array, check_choice, check_positive, check_range

Scalar = Float[Array, ""]
AERO_MODELS = ("wing", "averaged")
BACKENDS = ("mjx", "rigid")
SIDES = (1, -1)  # left, right
PARAMS_PATH = flapper_model.ASSETS / "flapper_params.json"
AVERAGED_PATH = flapper_model.ASSETS / "flapper_cycle_averaged.json"


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


def _load_json(path: Path) -> dict[str, Any]:
    with open(path) as fh:
        return json.load(fh)


# ---------------------------------------------------------------------------
# Parameters, state, diagnostics
# ---------------------------------------------------------------------------


class FeatheringHinge(eqx.Module):
    """Passive feathering hinge of both wings.

    The linear spring and damper are the MJCF joint's ``stiffness`` and
    ``damping`` (overridden per world here); the stops are smooth penalty
    torques ``-k_s [sp(theta - theta_s) - sp(-theta - theta_s)]`` with
    ``sp(x) = w log(1 + exp(x / w))``, differentiable everywhere (no joint
    limits, so no constraint rows and reverse-mode gradients work).

    Attributes:
      stiffness: () torsional stiffness k_h [N m/rad].
      damping: () viscous damping b_h [N m s/rad].
      stop_angle: () theta_s, where the stops engage [rad].
      stop_stiffness: () k_s of the stops [N m/rad].
      stop_width: () w, smoothing width of the stops [rad].
    """

    stiffness: Scalar = eqx.field(converter=_as_array)
    damping: Scalar = eqx.field(converter=_as_array)
    stop_angle: Scalar = eqx.field(converter=_as_array)
    stop_stiffness: Scalar = eqx.field(converter=_as_array)
    stop_width: Scalar = eqx.field(converter=_as_array)

    def __check_init__(self):
        check_positive("FeatheringHinge.stiffness", self.stiffness, allow_zero=True)
        check_positive("FeatheringHinge.damping", self.damping, allow_zero=True)
        check_range("FeatheringHinge.stop_angle", self.stop_angle, 0.0, float(np.pi))
        check_positive("FeatheringHinge.stop_stiffness", self.stop_stiffness, allow_zero=True)
        check_positive("FeatheringHinge.stop_width", self.stop_width)


def stop_torque(hinge: FeatheringHinge, theta: Scalar) -> Scalar:
    """Smooth feathering-stop torque at hinge angle ``theta`` [rad] -> [N m]."""
    w = hinge.stop_width

    def sp(x):
        return w * jax.nn.softplus(x / w)

    return -hinge.stop_stiffness * (sp(theta - hinge.stop_angle) - sp(-theta - hinge.stop_angle))


class FlapperParams(eqx.Module):
    """Per-world parameters; every float leaf may carry a leading world axis.

    Attributes:
      stroke: stroke schedule (frequency [Hz], amplitude [rad], phase [rad],
        per-wing direction).
      plate: (2,) commanded plate angles (pitch_joint, roll_joint) [rad].
      hinge: feathering hinge spring, damper and stops.
      aero: options of the per-wing model (scales, clips, coefficients).
      averaged: parameters of the cycle-averaged model.
    """

    stroke: StrokeSchedule
    plate: Float[Array, "2"] = eqx.field(converter=_as_array)
    hinge: FeatheringHinge
    aero: aero.AeroOptions
    averaged: CycleAveragedParams


class FlapperCommand(eqx.Module):
    """What a controller sets each step.

    Attributes:
      frequency: () flapping frequency f [Hz].
      plate: (2,) plate angles (pitch_joint, roll_joint) [rad].
    """

    frequency: Scalar
    plate: Float[Array, "2"]


class FlapperState(eqx.Module):
    """State of one world.

    Attributes:
      data: the MJX data (qpos, qvel, ...).
      step: () integer step counter k; t = k dt [-].
      phase_offset: () accumulated stroke-phase correction of a varying
        frequency command [cycles].
      healthy: () False once the world produced a non-finite state; it is
        then frozen at its last finite state.
    """

    data: mjx.Data
    step: Int[Array, ""]
    phase_offset: Scalar
    healthy: Bool[Array, ""]


class FlapperDiagnostics(eqx.Module):
    """What one step applied and measured.

    Attributes:
      time: () t at the start of the step [s].
      force_world: (3,) vector sum of the aerodynamic forces applied [N].
      moment_world: (3,) their moment about the base-body origin, world
        frame [N m].
      lift_total: () |F_N,L| + |F_N,R| (a load-intensity diagnostic, not the
        vertical lift, which is ``force_world[2]``) [N]; thrust L of the
        averaged model.
      wing_force_world: (2, 3) each wing's applied force [N].
      wing_loads: per-wing loads, leaves of shape (2,) (left, right); None for
        the averaged model.
      force_clipped: (2,) whether each wing's |F_N| clip is active.
      stroke: (2,) stroke angles psi [rad].
      stroke_reference: (2,) servo targets [rad].
      stroke_error: (2,) psi - psi_ref [rad].
      pitch: (2,) feathering angles theta [rad].
      plate: (2,) plate joint angles (or the command on the lumped body) [rad].
      frequency: () commanded frequency [Hz].
    """

    time: Scalar
    force_world: Float[Array, "3"]
    moment_world: Float[Array, "3"]
    lift_total: Scalar
    wing_force_world: Float[Array, "2 3"]
    wing_loads: Any
    force_clipped: Bool[Array, "2"]
    stroke: Float[Array, "2"]
    stroke_reference: Float[Array, "2"]
    stroke_error: Float[Array, "2"]
    pitch: Float[Array, "2"]
    plate: Float[Array, "2"]
    frequency: Scalar


# ---------------------------------------------------------------------------
# The robot (static handle)
# ---------------------------------------------------------------------------


class FlapperRobot(eqx.Module):
    """A compiled flapper world: the MJX model and the indices the bridge reads.

    Build with :func:`make_robot`. Array leaves (the MJX model, the wing) are
    traced by ``eqx.filter_jit``; names and indices are static.

    Attributes:
      model: the MJX model.
      wing: wing geometry, air density, d0 and ds of the per-wing kernels.
      root: "fixed", "free" or "lumped" (static).
      aero_model: "wing" or "averaged" (static).
      dt: timestep [s] (static).
      stroke_inertia: stroke-servo inertia feedforward J [kg m^2] (static).
      backend: "mjx" (MuJoCo MJX) or "rigid" (the pure-JAX single-body
        integrator of :mod:`flapjax.sim.rigid`; lumped root only) (static).
      rigid_body: mass properties of the lumped body for the rigid backend.
    """

    model: mjx.Model
    wing: aero.Wing
    root: str = eqx.field(static=True)
    aero_model: str = eqx.field(static=True)
    dt: float = eqx.field(static=True)
    stroke_inertia: float = eqx.field(static=True)
    base_body: int = eqx.field(static=True)
    plate_body: int = eqx.field(static=True)
    wing_bodies: tuple = eqx.field(static=True)
    stroke_q: tuple = eqx.field(static=True)
    stroke_v: tuple = eqx.field(static=True)
    pitch_q: tuple = eqx.field(static=True)
    pitch_v: tuple = eqx.field(static=True)
    pitch_jnt: tuple = eqx.field(static=True)
    plate_q: tuple = eqx.field(static=True)
    plate_v: tuple = eqx.field(static=True)
    stroke_act: tuple = eqx.field(static=True)
    plate_act: tuple = eqx.field(static=True)
    free_q: int = eqx.field(static=True)
    free_v: int = eqx.field(static=True)
    base_root: int = eqx.field(static=True)
    plate_root: int = eqx.field(static=True)
    backend: str = eqx.field(static=True, default="mjx")
    rigid_body: Any = None

    @property
    def has_wings(self) -> bool:
        return self.root != "lumped"


def make_robot(
    root: str = "fixed",
    aero_model: str = "wing",
    *,
    wing: aero.Wing | None = None,
    wing_mass: float | None = None,
    timestep: float | None = None,
    dtype: Any = None,
    backend: str = "mjx",
) -> FlapperRobot:
    """Compile a flapper world.

    Args:
      root: "fixed" (base welded to the world), "free" (freejoint on the base)
        or "lumped" (single rigid body, averaged model only).
      aero_model: "wing" (per-wing quasi-steady) or "averaged" (seed 10).
      wing: per-wing kernel description; default :meth:`aero.Wing.flapsim`.
      wing_mass: override the MJCF wing mass [kg] (calibration).
      timestep: override the MJCF timestep [s].
      dtype: cast the MJX model's float arrays (e.g. ``jnp.float32``); default
        keeps JAX's default float type.
      backend: "mjx", or "rigid" for the pure-JAX rigid-body integrator
        (contact-free; root "lumped" only). The two agree to float32
        round-off; the rigid one is many times cheaper per step.
    """
    check_choice("root", root, flapper_model.ROOTS)
    check_choice("aero_model", aero_model, AERO_MODELS)
    check_choice("backend", backend, BACKENDS)
    if backend == "rigid" and root != "lumped":
        raise ConfigError(f"backend: 'rigid' integrates one rigid body; it needs root='lumped', got root={root!r}")
    if root == "lumped" and aero_model == "wing":
        raise ConfigError("aero_model: 'wing' needs wings; the 'lumped' root has none (use 'fixed' or 'free')")
    m = flapper_model.build(root, wing_mass=wing_mass)
    if timestep is not None:
        check_range("timestep", timestep, 1e-6, 1e-2)
        m.opt.timestep = float(timestep)
    wing = aero.Wing.flapsim() if wing is None else wing
    name = lambda obj, n: mujoco.mj_name2id(m, obj, n)  # noqa: E731
    J, B, A = mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_ACTUATOR
    base = name(B, "base")
    free_q = free_v = -1
    if root in ("free", "lumped"):
        jr = name(J, "root")
        free_q, free_v = int(m.jnt_qposadr[jr]), int(m.jnt_dofadr[jr])
    if root == "lumped":
        plate = -1
        wings = stroke_q = stroke_v = pitch_q = pitch_v = pitch_jnt = plate_q = plate_v = stroke_act = plate_act = ()
        stroke_inertia = 0.0
    else:
        plate = name(B, "plate")
        wings = tuple(name(B, n) for n in flapper_model.WING_BODIES)
        sj = [name(J, n) for n in flapper_model.STROKE_JOINTS]
        pj = [name(J, n) for n in flapper_model.PITCH_JOINTS]
        qj = [name(J, n) for n in flapper_model.PLATE_JOINTS]
        stroke_q = tuple(int(m.jnt_qposadr[j]) for j in sj)
        stroke_v = tuple(int(m.jnt_dofadr[j]) for j in sj)
        pitch_q = tuple(int(m.jnt_qposadr[j]) for j in pj)
        pitch_v = tuple(int(m.jnt_dofadr[j]) for j in pj)
        pitch_jnt = tuple(pj)
        plate_q = tuple(int(m.jnt_qposadr[j]) for j in qj)
        plate_v = tuple(int(m.jnt_dofadr[j]) for j in qj)
        stroke_act = tuple(name(A, n + "_servo") for n in flapper_model.STROKE_JOINTS)
        plate_act = tuple(name(A, n) for n in ("pitch_servo", "roll_servo"))
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        stroke_inertia = float(full[stroke_v[0], stroke_v[0]])
        # The stiff stroke servo sets the stability limit of the explicit step.
        omega = math.sqrt(float(m.actuator_gainprm[stroke_act[0], 0]) / stroke_inertia)
        if m.opt.timestep * omega > 1.0:
            raise ConfigError(
                f"timestep: {m.opt.timestep:g} s is too large for a stable step: must be <= {1.0 / omega:.3g} s "
                f"(stroke servo natural frequency {omega:.4g} rad/s)"
            )
    mx = mjx.put_model(m)
    body = None
    if backend == "rigid":
        body = rigid.RigidBody(
            float(m.body_mass[base]), m.body_inertia[base], gravity=m.opt.gravity,
            com_offset=m.body_ipos[base], inertia_quat=m.body_iquat[base],
        )
    if dtype is not None:
        cast = lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x  # noqa: E731
        mx = jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, mx)
        wing = jax.tree.map(cast, wing)
        body = jax.tree.map(cast, body)
    return FlapperRobot(
        model=mx,
        wing=wing,
        root=root,
        aero_model=aero_model,
        dt=float(m.opt.timestep),
        stroke_inertia=stroke_inertia,
        base_body=int(base),
        plate_body=int(plate),
        wing_bodies=wings,
        stroke_q=stroke_q,
        stroke_v=stroke_v,
        pitch_q=pitch_q,
        pitch_v=pitch_v,
        pitch_jnt=pitch_jnt,
        plate_q=plate_q,
        plate_v=plate_v,
        stroke_act=stroke_act,
        plate_act=plate_act,
        free_q=free_q,
        free_v=free_v,
        base_root=int(m.body_rootid[base]),
        plate_root=int(m.body_rootid[plate]) if plate >= 0 else -1,
        backend=backend,
        rigid_body=body,
    )


def default_params(
    robot: FlapperRobot | None = None,
    *,
    frequency: float = 30.0,
    amplitude: float | None = None,
    plate: Sequence[float] = (0.0, 0.0),
    aero_options: aero.AeroOptions | None = None,
    averaged: CycleAveragedParams | None = None,
) -> FlapperParams:
    """Nominal parameters: hinge values from the MJCF, stops and stroke
    defaults from ``assets/flapper_params.json``, averaged-model values from
    ``assets/flapper_cycle_averaged.json``."""
    cfg = _load_json(PARAMS_PATH)
    m = flapper_model.build("fixed")
    j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, flapper_model.PITCH_JOINTS[0])
    hinge = FeatheringHinge(
        stiffness=float(np.ravel(m.jnt_stiffness[j])[0]),
        damping=float(m.dof_damping[m.jnt_dofadr[j]]),
        stop_angle=cfg["stop_angle"],
        stop_stiffness=cfg["stop_stiffness"],
        stop_width=cfg["stop_width"],
    )
    amp = cfg["amplitude"] if amplitude is None else amplitude
    as_float_array("plate", plate, (2,))
    return FlapperParams(
        stroke=StrokeSchedule(frequency=frequency, amplitude=amp, phase=cfg["phase"], direction=(1.0, 1.0)),
        plate=np.asarray(plate, dtype=float),
        hinge=hinge,
        aero=aero.AeroOptions() if aero_options is None else aero_options,
        averaged=CycleAveragedParams.from_json(AVERAGED_PATH) if averaged is None else averaged,
    )


# ---------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------


def init_state(
    robot: FlapperRobot,
    params: FlapperParams,
    *,
    position: Float[Array, "3"] | None = None,
    quat: Float[Array, "4"] | None = None,
    velocity: Float[Array, "3"] | None = None,
    angular_velocity: Float[Array, "3"] | None = None,
) -> FlapperState:
    """Initial state on the stroke schedule (no start-up transient).

    Args (free and lumped roots only; ignored for "fixed"):
      position: (3,) base position, world frame [m] (default from the MJCF).
      quat: (4,) base orientation ``[w, x, y, z]``.
      velocity: (3,) base linear velocity, world frame [m/s].
      angular_velocity: (3,) base angular velocity, body frame [rad/s].

    Pure JAX: vmap it over batched params / initial conditions.
    """
    if robot.backend == "rigid":
        dtype = robot.rigid_body.mass.dtype
        q0 = jnp.asarray(robot.model.qpos0, dtype=dtype)
        a = robot.free_q
        body_state = rigid.RigidState(
            position=q0[a : a + 3] if position is None else jnp.asarray(position, dtype=dtype),
            quat=q0[a + 3 : a + 7] if quat is None else jnp.asarray(quat, dtype=dtype) / jnp.linalg.norm(jnp.asarray(quat, dtype=dtype)),
            velocity=jnp.zeros(3, dtype) if velocity is None else jnp.asarray(velocity, dtype=dtype),
            angular_velocity=jnp.zeros(3, dtype) if angular_velocity is None else jnp.asarray(angular_velocity, dtype=dtype),
        )
        return FlapperState(data=body_state, step=jnp.zeros((), dtype=jnp.int32),
                            phase_offset=jnp.zeros((), dtype=dtype), healthy=jnp.ones((), dtype=bool))
    m = robot.model
    d = mjx.make_data(m)
    qpos, qvel = d.qpos, d.qvel
    qpos = jnp.asarray(m.qpos0, dtype=qpos.dtype)
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
        zero = jnp.zeros((), dtype=qpos.dtype)
        psi, psi_dot, _ = stroke_reference(params.stroke, zero)
        if robot.aero_model == "averaged":
            psi, psi_dot = jnp.zeros_like(psi), jnp.zeros_like(psi_dot)
        qpos = qpos.at[jnp.array(robot.stroke_q)].set(psi)
        qvel = qvel.at[jnp.array(robot.stroke_v)].set(psi_dot)
        qpos = qpos.at[jnp.array(robot.plate_q)].set(params.plate)
    d = d.replace(qpos=qpos, qvel=qvel)
    return FlapperState(
        data=d,
        step=jnp.zeros((), dtype=jnp.int32),
        phase_offset=jnp.zeros((), dtype=qpos.dtype),
        healthy=jnp.ones((), dtype=bool),
    )


# ---------------------------------------------------------------------------
# Step
# ---------------------------------------------------------------------------


def _model_for(robot: FlapperRobot, params: FlapperParams) -> mjx.Model:
    """The MJX model with this world's feathering spring and damper."""
    m = robot.model
    if not robot.has_wings:
        return m
    jnt = np.array(robot.pitch_jnt)
    dof = np.array(robot.pitch_v)
    k = jnp.broadcast_to(params.hinge.stiffness, (2,)).astype(m.jnt_stiffness.dtype)
    b = jnp.broadcast_to(params.hinge.damping, (2,)).astype(m.dof_damping.dtype)
    return m.replace(jnt_stiffness=m.jnt_stiffness.at[jnt].set(k), dof_damping=m.dof_damping.at[dof].set(b))


def _frame_velocity(d: mjx.Data, body: int, root: int) -> tuple[Array, Array]:
    """World (linear velocity at the body origin, angular velocity)."""
    omega = d.cvel[body, :3]
    v = d.cvel[body, 3:] + jnp.cross(omega, d.xpos[body] - d.subtree_com[root])
    return v, omega


def command_from_params(params: FlapperParams) -> FlapperCommand:
    """Open-loop command: the schedule's frequency and the plate angles."""
    return FlapperCommand(frequency=params.stroke.frequency, plate=params.plate)


def step(
    robot: FlapperRobot,
    params: FlapperParams,
    state: FlapperState,
    command: FlapperCommand | None = None,
) -> tuple[FlapperState, FlapperDiagnostics]:
    """Advance one world by one timestep (see the module docstring).

    ``command`` (frequency, plate angles) defaults to the open-loop values in
    ``params``. No batch axis: ``jax.vmap`` adds it.
    """
    if command is None:
        command = command_from_params(params)
    if robot.backend == "rigid":
        return _step_rigid(robot, params, state, command)
    m = _model_for(robot, params)
    d = state.data
    dt = robot.dt
    d = mjx.fwd_position(m, d)
    d = mjx.fwd_velocity(m, d)

    f_nom = params.stroke.frequency
    f_cmd = jnp.asarray(command.frequency, dtype=d.qpos.dtype)
    cycles = phase_cycles(f_nom, state.step, dt, state.phase_offset)
    psi_ref, psi_dot_ref, psi_ddot_ref = stroke_reference(params.stroke, cycles, f_cmd)
    x_ref = d.xpos[robot.base_body]
    nbody = m.nbody
    xfrc = jnp.zeros((nbody, 6), dtype=d.qpos.dtype)
    qfrc = jnp.zeros_like(d.qvel)
    zeros2 = jnp.zeros((2,), dtype=d.qpos.dtype)

    if robot.has_wings:
        stroke = d.qpos[jnp.array(robot.stroke_q)]
        pitch = d.qpos[jnp.array(robot.pitch_q)]
        plate_angles = d.qpos[jnp.array(robot.plate_q)]
    else:
        stroke = pitch = zeros2
        plate_angles = jnp.asarray(command.plate, dtype=d.qpos.dtype)

    wing_loads = None
    if robot.aero_model == "wing":
        rot_plate = d.xmat[robot.plate_body]
        v_w, w_w = _frame_velocity(d, robot.plate_body, robot.plate_root)
        v_body, w_body = rot_plate.T @ v_w, rot_plate.T @ w_w
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
            ww = aero.wing_wrench(
                ld, side=side, rot_world_wing=d.xmat[b], pos_world_origin=d.xpos[b], pos_world_com=d.xipos[b]
            )
            xfrc = xfrc.at[b].set(ww.wrench)
            loads.append(ld)
            forces.append(ww.force_world)
            moments.append(ww.torque_world + jnp.cross(d.xipos[b] - x_ref, ww.force_world))
        wing_loads = jax.tree.map(lambda a, b: jnp.stack([a, b]), *loads)
        wing_force = jnp.stack(forces)
        force = wing_force[0] + wing_force[1]
        moment = moments[0] + moments[1]
        lift_total = jnp.abs(loads[0].normal_force) + jnp.abs(loads[1].normal_force)
        clipped = jnp.stack([loads[0].force_clipped, loads[1].force_clipped])
    else:
        b = robot.base_body
        rot = d.xmat[b]
        v_w, w_w = _frame_velocity(d, b, robot.base_root)
        v_com = v_w + jnp.cross(w_w, d.xipos[b] - d.xpos[b])
        avg = cycle_averaged_wrench(
            params.averaged, frequency=f_cmd, plate=plate_angles, rot_world_body=rot, v_world=v_com, w_body=rot.T @ w_w
        )
        xfrc = xfrc.at[b].set(avg.wrench)
        force = avg.force_world
        moment = avg.torque_world + jnp.cross(d.xipos[b] - x_ref, force)
        wing_force = jnp.zeros((2, 3), dtype=force.dtype)
        lift_total = avg.thrust
        clipped = jnp.zeros((2,), dtype=bool)
        psi_ref = psi_dot_ref = psi_ddot_ref = zeros2

    ctrl = d.ctrl
    if robot.has_wings:
        # Position servo kp(psi_ref - psi) with the joint damping kv as its
        # (implicitly integrated) velocity gain; feedforward kv psi_dot_ref + J psi_ddot_ref.
        sv = np.array(robot.stroke_v)
        sa = np.array(robot.stroke_act)
        kp = m.actuator_gainprm[sa, 0]
        kv = m.dof_damping[sv]
        ctrl = ctrl.at[sa].set(psi_ref + (kv * psi_dot_ref + robot.stroke_inertia * psi_ddot_ref) / kp)
        ctrl = ctrl.at[np.array(robot.plate_act)].set(jnp.asarray(command.plate, dtype=ctrl.dtype))
        qfrc = qfrc.at[np.array(robot.pitch_v)].set(stop_torque(params.hinge, pitch))

    d = d.replace(xfrc_applied=xfrc, qfrc_applied=qfrc, ctrl=ctrl)
    d = mjx.fwd_actuation(m, d)
    d = mjx.fwd_acceleration(m, d)
    d = d.replace(qacc=d.qacc_smooth)
    d_new = mjx.euler(m, d)

    ok = jnp.all(jnp.isfinite(d_new.qpos)) & jnp.all(jnp.isfinite(d_new.qvel))
    healthy = state.healthy & ok
    d_new = jax.tree.map(lambda new, old: jnp.where(healthy, new, old), d_new, d)
    new_state = FlapperState(
        data=d_new,
        step=state.step + 1,
        phase_offset=advance_offset(state.phase_offset, f_cmd, f_nom, dt),
        healthy=healthy,
    )
    diag = FlapperDiagnostics(
        time=state.step.astype(force.dtype) * dt,
        force_world=force,
        moment_world=moment,
        lift_total=lift_total,
        wing_force_world=wing_force,
        wing_loads=wing_loads,
        force_clipped=clipped,
        stroke=stroke,
        stroke_reference=psi_ref if robot.has_wings else zeros2,
        stroke_error=stroke - psi_ref if robot.has_wings else zeros2,
        pitch=pitch,
        plate=plate_angles,
        frequency=f_cmd,
    )
    return new_state, diag


def _step_rigid(
    robot: FlapperRobot, params: FlapperParams, state: FlapperState, command: FlapperCommand
) -> tuple[FlapperState, FlapperDiagnostics]:
    """The lumped body under the cycle-averaged wrench, integrated by
    :func:`flapjax.sim.rigid.step` (same wrench and Euler scheme as MJX)."""
    body, s = robot.rigid_body, state.data
    dtype = body.mass.dtype
    rot = s.rotation
    f_cmd = jnp.asarray(command.frequency, dtype=dtype)
    plate = jnp.asarray(command.plate, dtype=dtype)
    avg = cycle_averaged_wrench(
        params.averaged, frequency=f_cmd, plate=plate, rot_world_body=rot,
        v_world=rigid.com_velocity(body, s), w_body=s.angular_velocity,
    )
    new = rigid.step(body, s, avg.wrench, robot.dt)
    ok = jnp.all(jnp.isfinite(new.qpos)) & jnp.all(jnp.isfinite(new.qvel))
    healthy = state.healthy & ok
    new = jax.tree.map(lambda a, b: jnp.where(healthy, a, b), new, s)
    zeros2 = jnp.zeros((2,), dtype=dtype)
    moment = avg.torque_world + jnp.cross(rigid.com_position(body, s) - s.position, avg.force_world)
    new_state = FlapperState(
        data=new, step=state.step + 1,
        phase_offset=advance_offset(state.phase_offset, f_cmd, params.stroke.frequency, robot.dt), healthy=healthy,
    )
    diag = FlapperDiagnostics(
        time=state.step.astype(dtype) * robot.dt, force_world=avg.force_world, moment_world=moment,
        lift_total=avg.thrust, wing_force_world=jnp.zeros((2, 3), dtype=dtype), wing_loads=None,
        force_clipped=jnp.zeros((2,), dtype=bool), stroke=zeros2, stroke_reference=zeros2, stroke_error=zeros2,
        pitch=zeros2, plate=plate, frequency=f_cmd,
    )
    return new_state, diag


def simulate(
    robot: FlapperRobot,
    params: FlapperParams,
    state: FlapperState,
    n_steps: int,
    *,
    observe=None,
    checkpoint: bool = True,
) -> tuple[FlapperState, Any]:
    """Open-loop rollout of one world (``jax.lax.scan``); returns (final, trace)."""
    return rollout(lambda p, s: step(robot, p, s), params, state, n_steps, observe=observe, checkpoint=checkpoint)


# ---------------------------------------------------------------------------
# Cycle means and sweeps
# ---------------------------------------------------------------------------


def cycle_window(frequency: Scalar, n_steps: int, discard_steps: int, dt: float) -> Float[Array, "T"]:
    """0/1 weights of the whole cycles inside steps ``[discard_steps, n_steps)``.

    The window ends at the last step and spans ``floor((T - T0) dt f)``
    complete cycles (at least the whole window when f is 0), so cycle means
    carry no partial-cycle bias at any frequency.
    """
    t = jnp.arange(n_steps) * dt
    t_end = n_steps * dt
    span = (n_steps - discard_steps) * dt
    f = jnp.asarray(frequency)
    n_cycles = jnp.floor(span * f + 1e-9)
    safe_f = jnp.where(n_cycles > 0, f, 1.0)
    start = jnp.where(n_cycles > 0, t_end - n_cycles / safe_f, t_end - span)
    return ((t >= start - 0.5 * dt) & (t < t_end)).astype(t.dtype)


class CycleMean(eqx.Module):
    """Cycle-mean loads of one world.

    Attributes:
      force: (3,) mean applied aerodynamic force, world frame [N].
      moment: (3,) mean moment about the base origin, world frame [N m].
      lift_total: () mean |F_N,L| + |F_N,R| [N].
      stroke_error_rms: () RMS stroke tracking error over both wings [rad].
      stroke_error_max: () max |psi - psi_ref| over the window [rad].
      clip_fraction: () fraction of wing-steps with the force clip active [-].
      healthy: () the world stayed finite.
    """

    force: Float[Array, "3"]
    moment: Float[Array, "3"]
    lift_total: Scalar
    stroke_error_rms: Scalar
    stroke_error_max: Scalar
    clip_fraction: Scalar
    healthy: Bool[Array, ""]


def cycle_mean(
    robot: FlapperRobot, params: FlapperParams, n_steps: int, discard_steps: int, *, checkpoint: bool = True
) -> CycleMean:
    """Run one world open-loop from :func:`init_state` and average whole cycles
    after ``discard_steps``. Differentiable in ``params``."""
    if not 0 <= discard_steps < n_steps:
        raise ConfigError(f"discard_steps: must lie in [0, n_steps), got {discard_steps} with n_steps={n_steps}")
    state = init_state(robot, params)

    def observe(_, dg):
        return (dg.force_world, dg.moment_world, dg.lift_total, dg.stroke_error, dg.force_clipped)

    final, (force, moment, lift, err, clip) = simulate(
        robot, params, state, n_steps, observe=observe, checkpoint=checkpoint
    )
    w = cycle_window(params.stroke.frequency, n_steps, discard_steps, robot.dt).astype(force.dtype)
    tot = jnp.sum(w)
    mean = lambda x: jnp.tensordot(w, x, axes=(0, 0)) / tot  # noqa: E731
    return CycleMean(
        force=mean(force),
        moment=mean(moment),
        lift_total=mean(lift),
        stroke_error_rms=jnp.sqrt(mean(jnp.mean(err**2, axis=-1))),
        stroke_error_max=jnp.max(jnp.where(w[:, None] > 0, jnp.abs(err), 0.0)),
        clip_fraction=mean(jnp.mean(clip.astype(force.dtype), axis=-1)),
        healthy=final.healthy,
    )


@eqx.filter_jit
def _batched_cycle_mean(robot: FlapperRobot, params: FlapperParams, n_steps: int, discard_steps: int) -> CycleMean:
    return jax.vmap(lambda p: cycle_mean(robot, p, n_steps, discard_steps))(params)


class SweepResult(eqx.Module):
    """Cycle-mean loads of a fixed-base sweep, one row per world.

    Attributes:
      force: (n, 3) cycle-mean aerodynamic force, world frame [N].
      moment: (n, 3) cycle-mean moment about the base origin, world frame [N m].
      lift_total: (n,) cycle-mean |F_N,L| + |F_N,R| [N].
      frequency: (n,) flapping frequency [Hz].
      amplitude: (n,) stroke amplitude [rad].
      plate: (n, 2) plate angles (pitch_joint, roll_joint) [rad].
      stroke_error_rms: (n,) RMS stroke tracking error [rad].
      stroke_error_max: (n,) max stroke tracking error [rad].
      clip_fraction: (n,) fraction of wing-steps at the force clip [-].
      healthy: (n,) the world stayed finite.
      duration: run length [s]; discard: discarded transient [s]; dt: timestep [s].
    """

    force: Float[Array, "n 3"]
    moment: Float[Array, "n 3"]
    lift_total: Float[Array, "n"]
    frequency: Float[Array, "n"]
    amplitude: Float[Array, "n"]
    plate: Float[Array, "n 2"]
    stroke_error_rms: Float[Array, "n"]
    stroke_error_max: Float[Array, "n"]
    clip_fraction: Float[Array, "n"]
    healthy: Bool[Array, "n"]
    duration: float = eqx.field(static=True)
    discard: float = eqx.field(static=True)
    dt: float = eqx.field(static=True)

    @property
    def lift_per_f2(self) -> Float[Array, "n"]:
        """F_z / f^2 [N/Hz^2]."""
        return self.force[:, 2] / self.frequency**2


def sweep_params(
    frequencies,
    *,
    amplitude=None,
    plate=(0.0, 0.0),
    params: FlapperParams | None = None,
    robot: FlapperRobot | None = None,
) -> FlapperParams:
    """Per-world parameters with a leading world axis: frequency (n,),
    amplitude () or (n,), plate (2,) or (n, 2); the rest of ``params``
    (default :func:`default_params`) shared by every world."""
    freqs = as_float_array("frequencies", np.atleast_1d(np.asarray(frequencies, dtype=float)), (None,))
    n = freqs.shape[0]
    amp = None if amplitude is None else np.asarray(amplitude, dtype=float)
    plate_a = np.asarray(plate, dtype=float)
    if amp is not None and amp.ndim == 1:
        n = max(n, amp.shape[0])
    if plate_a.ndim == 2:
        n = max(n, plate_a.shape[0])

    def fit(name, x, tail):
        x = np.asarray(x, dtype=float)
        if x.shape == tail:
            return np.broadcast_to(x, (n,) + tail).copy()
        if x.shape == (1,) + tail or x.shape == (n,) + tail:
            return np.broadcast_to(x, (n,) + tail).copy()
        raise ConfigError(f"{name}: expected shape {tail} or ({n},{' ' if tail else ''}{', '.join(map(str, tail))}), got {x.shape}")

    freqs = fit("frequencies", freqs, ())
    check_positive("frequencies", freqs)
    base = params if params is not None else default_params(robot)
    amps = fit("amplitude", base.stroke.amplitude if amp is None else amp, ())
    check_positive("amplitude", amps, allow_zero=True)
    plates = fit("plate", plate_a, (2,))
    check_range("plate", plates, -0.6, 0.6)
    batched = jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x), (n,) + jnp.shape(x)), base)
    return eqx.tree_at(
        lambda p: (p.stroke.frequency, p.stroke.amplitude, p.plate),
        batched,
        (jnp.asarray(freqs), jnp.asarray(amps), jnp.asarray(plates)),
    )


def sweep(
    frequencies,
    *,
    duration: float = 0.6,
    discard: float = 0.3,
    plate=(0.0, 0.0),
    amplitude=None,
    params: FlapperParams | None = None,
    robot: FlapperRobot | None = None,
    batch_size: int = 4,
) -> SweepResult:
    """Fixed-base sweep: one world per row, cycle-mean force and moment.

    Frequencies, amplitudes and plate angles broadcast against each other
    (scalars / (2,) plate shared, or one value per world). Worlds run in
    chunks of ``batch_size`` through one compiled ``vmap(scan)``, so any
    number of rows reuses the same compilation (the last chunk is padded).

    Args:
      frequencies: (n,) flapping frequencies [Hz].
      duration: run length [s]; discard: transient dropped before averaging [s].
      plate: (2,) or (n, 2) plate angles (pitch_joint, roll_joint) [rad].
      amplitude: () or (n,) stroke amplitude [rad]; default from the params.
      params: shared parameters (hinge, aero options, ...).
      robot: a fixed-base robot; default ``make_robot("fixed", "wing")``.
      batch_size: worlds per compiled chunk.
    """
    check_positive("duration", duration)
    check_range("discard", discard, 0.0, duration)
    robot = make_robot("fixed", "wing") if robot is None else robot
    if robot.root != "fixed":
        raise ConfigError(f"robot: sweep needs a fixed-base robot, got root={robot.root!r}")
    n_steps = int(round(duration / robot.dt))
    discard_steps = int(round(discard / robot.dt))
    if discard_steps >= n_steps:
        raise ConfigError(f"discard: must be shorter than duration ({duration} s), got {discard}")
    batched = sweep_params(frequencies, amplitude=amplitude, plate=plate, params=params, robot=robot)
    n = int(batched.stroke.frequency.shape[0])
    size = int(batch_size)
    n_pad = -(-n // size) * size
    padded = pad_worlds(batched, n_pad)
    chunks = [
        _batched_cycle_mean(robot, slice_worlds(padded, i, i + size), n_steps, discard_steps)
        for i in range(0, n_pad, size)
    ]
    out = jax.tree.map(lambda *xs: jnp.concatenate(xs)[:n], *chunks)
    return SweepResult(
        force=out.force,
        moment=out.moment,
        lift_total=out.lift_total,
        frequency=batched.stroke.frequency,
        amplitude=batched.stroke.amplitude,
        plate=batched.plate,
        stroke_error_rms=out.stroke_error_rms,
        stroke_error_max=out.stroke_error_max,
        clip_fraction=out.clip_fraction,
        healthy=out.healthy,
        duration=float(duration),
        discard=float(discard),
        dt=robot.dt,
    )


SEED_SWEEP = {20.0: 0.0661819985, 30.0: 0.1486352297, 40.0: 0.2639114107}
"""Seed table 11.2: mean world F_z [N] of the fixed-base robot, 0.6 s runs, first 0.3 s discarded."""


def print_sweep_table(result: SweepResult, *, file=None) -> None:
    """Print mean lift vs frequency with F_z / f^2 (and the seed's value where it has one)."""
    print(f"{'f [Hz]':>8} {'F_z [N]':>11} {'F_z/f^2 [N/Hz^2]':>18} {'seed F_z [N]':>13} {'diff':>8}", file=file)
    for f, fz in zip(np.asarray(result.frequency), np.asarray(result.force[:, 2])):
        seed = SEED_SWEEP.get(float(f))
        extra = f"{seed:13.5f} {100 * (fz / seed - 1):+7.2f}%" if seed else f"{'':13} {'':8}"
        print(f"{f:8.2f} {fz:11.5f} {fz / f**2:18.5e} {extra}", file=file)
    ratio = np.asarray(result.lift_per_f2)
    if ratio.size > 1:
        spread = (ratio.max() - ratio.min()) / ratio.mean()
        print(f"F_z/f^2 spread (max - min) / mean: {100 * spread:.2f} %", file=file)


# ---------------------------------------------------------------------------
# Closed-loop hover
# ---------------------------------------------------------------------------


class BasePose(eqx.Module):
    """Measured pose of the base body (free and lumped roots).

    Attributes:
      position: (3,) base origin, world frame [m].
      velocity: (3,) base origin velocity, world frame [m/s].
      rot_world_body: (3, 3) R_WB.
      w_body: (3,) angular velocity, body frame [rad/s].
    """

    position: Float[Array, "3"]
    velocity: Float[Array, "3"]
    rot_world_body: Float[Array, "3 3"]
    w_body: Float[Array, "3"]


def base_pose(robot: FlapperRobot, data: mjx.Data) -> BasePose:
    """Base pose from the freejoint's qpos/qvel (linear velocity world frame,
    angular velocity body frame, MuJoCo's convention)."""
    if robot.free_q < 0:
        raise ConfigError(f"robot: base_pose needs a free or lumped root, got root={robot.root!r}")
    a, v = robot.free_q, robot.free_v
    return BasePose(
        position=data.qpos[a : a + 3],
        velocity=data.qvel[v : v + 3],
        rot_world_body=quat_to_mat(data.qpos[a + 3 : a + 7]),
        w_body=data.qvel[v + 3 : v + 6],
    )


class HoverRecord(eqx.Module):
    """Decimated trace of a hover run (leading axis: records).

    Attributes:
      time: () end time of the record [s].
      position: (3,) base position [m].
      velocity: (3,) base velocity [m/s].
      tilt: (2,) body z tilt toward +x, +y [rad].
      frequency: () commanded frequency [Hz].
      plate: (2,) commanded plate angles [rad].
      force_world: (3,) applied aerodynamic force [N].
      healthy: () the world is still finite.
    """

    time: Scalar
    position: Float[Array, "3"]
    velocity: Float[Array, "3"]
    tilt: Float[Array, "2"]
    frequency: Scalar
    plate: Float[Array, "2"]
    force_world: Float[Array, "3"]
    healthy: Bool[Array, ""]


def hover_rollout(
    robot: FlapperRobot,
    params: FlapperParams,
    state: FlapperState,
    n_steps: int,
    *,
    gains=None,
    target: Float[Array, "3"] | None = None,
    record_every: int = 10,
    checkpoint: bool = True,
) -> tuple[FlapperState, HoverRecord]:
    """Closed-loop hover of one world with :func:`flapjax.control.hover.hover_command`.

    The controller runs every step, with the hover frequency
    ``sqrt(m g / k_f)`` of ``params.averaged`` (for the per-wing model the
    calibration makes its F_z / f^2 equal k_f). ``target`` defaults to the
    initial position. Returns the final state and one record every
    ``record_every`` steps (``n_steps`` must be a multiple of it).
    """
    from flapjax.control.hover import HoverGains, HoverState, body_tilt, hover_command

    gains = HoverGains() if gains is None else gains
    if n_steps % record_every:
        raise ConfigError(f"n_steps: must be a multiple of record_every={record_every}, got {n_steps}")
    pose0 = base_pose(robot, state.data)
    target = pose0.position if target is None else jnp.asarray(target)
    f_h = params.averaged.hover_frequency
    g = params.averaged.gravity

    def one(carry, _):
        st, hs = carry
        pose = base_pose(robot, st.data)
        hs, cmd = hover_command(
            gains, hs, hover_frequency=f_h, gravity=g, target=target, position=pose.position,
            velocity=pose.velocity, rot_world_body=pose.rot_world_body, w_body=pose.w_body, dt=robot.dt,
        )
        st, dg = step(robot, params, st, FlapperCommand(frequency=cmd.frequency, plate=cmd.plate))
        return (st, hs), (dg.force_world, cmd.frequency, cmd.plate)

    if checkpoint:
        # prevent_cse=False: the scan already keeps the rematerialized step
        # apart (JAX's recommendation inside scan; a cheaper reverse pass).
        one = jax.checkpoint(one, prevent_cse=False)

    def block(carry, _):
        carry, (force, freq, plate) = jax.lax.scan(one, carry, None, length=record_every)
        st = carry[0]
        pose = base_pose(robot, st.data)
        rec = HoverRecord(
            time=st.step.astype(force.dtype) * robot.dt,
            position=pose.position,
            velocity=pose.velocity,
            tilt=body_tilt(pose.rot_world_body),
            frequency=jnp.mean(freq),
            plate=plate[-1],
            force_world=jnp.mean(force, axis=0),
            healthy=st.healthy,
        )
        return carry, rec

    hs0 = HoverState(altitude_integral=jnp.zeros((), dtype=state.phase_offset.dtype))
    (final, _), records = jax.lax.scan(block, (state, hs0), None, length=n_steps // record_every)
    return final, records
