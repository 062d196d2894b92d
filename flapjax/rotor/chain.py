"""The six-step multirotor chain: desired wrench -> realized body wrench.

In the seed's order (docs/physics.md, Multirotor chain), each step
switchable by :class:`ChainOptions`:

1. allocation: weighted minimum-norm thrust commands (unreachable part reported);
   (command noise, if on, is added to the commands here);
2. saturation: clamp to ``[T_min, T_max]``;
3. actuator: normalized speed, exact first-order step, symmetric rate limit;
4. proximity: ground effect and near-wall thrust factor and lateral force on
   the produced thrust (after saturation: a clamped rotor near the ground
   still produces more than ``T_max``);
5. realized body wrench ``B T_realized`` plus the lateral wall forces and
   their moments about the centre of mass;
6. body drag and world wind (constant, 1-cos gusts, OU turbulence).

All forces and torques are in the body frame about the centre of mass.
Everything that changes from step to step enters as one :class:`ChainInput`
(rotor and turbulence states, per-rotor distances, body motion, this step's
draws). Randomness enters as draws (``turbulence_normal``, standard normal;
``command_noise``, the thrust offsets of :func:`flapjax.noise.command_noise`),
so the chain is a deterministic function of its arguments; the worlds draw
them from counter-based streams (:mod:`flapjax.rng`).

Gradients: everything is differentiable. At a clamp boundary (command exactly
at ``T_min`` or ``T_max``) JAX's tie rule for ``min``/``max`` gives the
clamped thrust a derivative of 1/2 with respect to the command; at zero
thrust the actuator's square root has derivative 0 (safe square root). Both
are finite; beyond the limits the derivative is 0.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from flapjax.rotor import allocation as _alloc
from flapjax.rotor.actuator import ActuatorState, actuator_step
from flapjax.rotor.disturbance import DisturbanceState, DragParams, WindParams, drag_force, turbulence_step, wind_force
from flapjax.rotor.profile import RotorProfile
from flapjax.rotor.proximity import ProximityInput, ProximityParams, ground_effect_factor, wall_effect
from flapjax.rotor.unrolled import cross_rows, rmatvec, sum_rows


class ChainOptions(eqx.Module):
    """Which steps of the chain run (all static flags)."""

    saturation: bool = eqx.field(static=True, default=True)
    actuator: bool = eqx.field(static=True, default=True)
    ground_effect: bool = eqx.field(static=True, default=True)
    wall_effect: bool = eqx.field(static=True, default=True)
    drag: bool = eqx.field(static=True, default=True)
    wind: bool = eqx.field(static=True, default=True)
    gusts: bool = eqx.field(static=True, default=True)
    turbulence: bool = eqx.field(static=True, default=True)
    command_noise: bool = eqx.field(static=True, default=False)

    @classmethod
    def all_off(cls) -> "ChainOptions":
        """Allocation only: the ideal multirotor."""
        return cls(saturation=False, actuator=False, ground_effect=False, wall_effect=False, drag=False,
                   wind=False, gusts=False, turbulence=False, command_noise=False)


class ChainParams(eqx.Module):
    """Physical coefficients of the chain beyond the airframe.

    Attributes:
      proximity: near-wall coefficients and the ground-effect gain.
      drag: body drag.
      wind: world wind.
      allocation_weights: (n,) allocation cost weights [-] or None (equal).
    """

    proximity: ProximityParams = eqx.field(default_factory=ProximityParams)
    drag: DragParams = eqx.field(default_factory=DragParams)
    wind: WindParams = eqx.field(default_factory=WindParams)
    allocation_weights: Float[Array, " n"] | None = None


class BodyMotion(eqx.Module):
    """The body's pose and motion as the chain needs it.

    Attributes:
      rotation: (3, 3) body-to-world rotation matrix R_WB [-].
      velocity_body: (3,) CoM velocity in the body frame [m/s].
      time: () simulation time [s] (for the gusts).
    """

    rotation: Float[Array, "3 3"]
    velocity_body: Float[Array, "3"]
    time: Float[Array, ""]

    @classmethod
    def at_rest(cls) -> "BodyMotion":
        return cls(rotation=jnp.eye(3), velocity_body=jnp.zeros(3), time=jnp.zeros(()))


class ChainInput(eqx.Module):
    """What changes from step to step: the chain's states, the per-rotor
    distances, the body's motion and this step's draws.

    Attributes:
      actuator: current rotor speeds.
      proximity: per-rotor distances and wall normals (body frame).
      motion: attitude, body velocity and time (default: at rest, level).
      disturbance: turbulence state (default: zero).
      turbulence_normal: (3,) standard normal draws of this step's
        turbulence update (needed when wind and turbulence are on).
      command_noise: (n,) additive thrust command noise [N]
        (:func:`flapjax.noise.command_noise`; needed when
        ``ChainOptions.command_noise`` is on).
    """

    actuator: ActuatorState
    proximity: ProximityInput
    motion: BodyMotion = eqx.field(default_factory=BodyMotion.at_rest)
    disturbance: DisturbanceState = eqx.field(default_factory=DisturbanceState.zero)
    turbulence_normal: Float[Array, "3"] | None = None
    command_noise: Float[Array, " n"] | None = None


class ChainOutput(eqx.Module):
    """Everything the chain computed in one step.

    Attributes:
      thrust_command: (n,) allocated commands (plus command noise) [N].
      thrust_clamped: (n,) after saturation [N].
      thrust_actuated: (n,) produced by the actuator, before proximity [N].
      thrust_realized: (n,) after ground and wall factors [N].
      ground_factor: (n,) Cheeseman–Bennett factor [-].
      wall_factor: (n,) near-wall thrust factor [-].
      wall_force: (n, 3) lateral wall force per rotor, body frame [N].
      saturated: (n,) command at or beyond a limit this step.
      control_margin: () min over rotors of the distance of the command to
        its nearest limit, as a fraction of the range (negative: saturated) [-].
      unreachable: (6,) part of the wrench request the layout cannot make.
      wrench_rotors: (6,) body wrench of the rotors incl. wall forces [N, N m].
      drag_force: (3,) body-frame drag [N].
      wind_force: (3,) wind force expressed in the body frame [N].
      wrench: (6,) total realized body wrench about the CoM [N, N m].
      actuator_state: next actuator state.
      disturbance_state: next turbulence state.
    """

    thrust_command: Float[Array, " n"]
    thrust_clamped: Float[Array, " n"]
    thrust_actuated: Float[Array, " n"]
    thrust_realized: Float[Array, " n"]
    ground_factor: Float[Array, " n"]
    wall_factor: Float[Array, " n"]
    wall_force: Float[Array, "n 3"]
    saturated: Bool[Array, " n"]
    control_margin: Float[Array, ""]
    unreachable: Float[Array, "6"]
    wrench_rotors: Float[Array, "6"]
    drag_force: Float[Array, "3"]
    wind_force: Float[Array, "3"]
    wrench: Float[Array, "6"]
    actuator_state: ActuatorState
    disturbance_state: DisturbanceState


def rotor_wrench(prof: RotorProfile, thrust: Float[Array, " n"], lateral: Float[Array, "n 3"]) -> Float[Array, "6"]:
    """Body wrench (6,) of rotor thrusts (n,) [N] plus lateral rotor forces (n, 3) [N].

    ``[sum_i a_i T_i + f_i; sum_i m_i T_i + p_i x f_i]`` with axes ``a_i``,
    moment arms ``m_i`` (:func:`flapjax.rotor.allocation.rotor_moment_arms`),
    positions ``p_i`` and lateral forces ``f_i``: ``B T`` plus the lateral
    forces and their moments, written out so that it fuses
    (:mod:`flapjax.rotor.unrolled`).
    """
    force = sum_rows(prof.axes * thrust[:, None] + lateral)
    torque = sum_rows(_alloc.rotor_moment_arms(prof) * thrust[:, None] + cross_rows(prof.positions, lateral))
    return jnp.concatenate([force, torque])


def _saturate(prof: RotorProfile, thrust_command, options: ChainOptions):
    """Step 2: saturation flags, control margin and clamped commands."""
    lo, hi = prof.thrust_min, prof.thrust_max
    saturated = (thrust_command <= lo) | (thrust_command >= hi)
    margin = jnp.min(jnp.minimum(thrust_command - lo, hi - thrust_command) / (hi - lo))
    thrust_clamped = jnp.clip(thrust_command, lo, hi) if options.saturation else thrust_command
    return saturated, margin, thrust_clamped


def _actuate(prof: RotorProfile, state: ActuatorState, thrust_clamped, options: ChainOptions, dt):
    """Step 3: next actuator state and the produced thrust."""
    if options.actuator:
        return actuator_step(prof, state, thrust_clamped, dt=dt)
    return ActuatorState.at_thrust(prof, thrust_clamped), thrust_clamped


def _near_surfaces(prof: RotorProfile, thrust_act, proximity: ProximityInput, options: ChainOptions,
                   params: ChainParams):
    """Step 4: ground factor, wall factor and lateral wall force, on the produced thrust."""
    n = prof.n_rotors
    if options.ground_effect:
        k_ground = ground_effect_factor(proximity.ground_distance, prof.radius, params.proximity.ground_coeff)
    else:
        k_ground = jnp.ones(n, dtype=thrust_act.dtype)
    if options.wall_effect:
        k_wall, lateral = wall_effect(thrust_act, proximity.wall_distance, proximity.wall_normal, prof.radius,
                                      params.proximity)
    else:
        k_wall, lateral = jnp.ones(n, dtype=thrust_act.dtype), jnp.zeros((n, 3), dtype=thrust_act.dtype)
    return k_ground, k_wall, lateral


def _drag_and_wind(inputs: ChainInput, options: ChainOptions, params: ChainParams, zero3, dt):
    """Step 6: body drag, wind force (body frame) and the next turbulence state."""
    motion, disturbance = inputs.motion, inputs.disturbance
    rot = motion.rotation
    if options.drag:
        v_air = motion.velocity_body - rmatvec(rot, params.wind.air_velocity)
        f_drag = drag_force(params.drag, v_air)
    else:
        f_drag = zero3
    if options.wind:
        f_wind = rmatvec(rot, wind_force(params.wind, disturbance, motion.time, gusts=options.gusts,
                                         turbulence=options.turbulence))
    else:
        f_wind = zero3
    if options.wind and options.turbulence:
        if inputs.turbulence_normal is None:
            raise ValueError("turbulence_normal: (3,) standard normal draws are required when options.turbulence is on")
        next_disturbance = turbulence_step(params.wind, disturbance, inputs.turbulence_normal, dt=dt)
    else:
        next_disturbance = disturbance
    return f_drag, f_wind, next_disturbance


def realize_thrusts(
    prof: RotorProfile,
    thrust_command: Float[Array, " n"],
    inputs: ChainInput,
    options: ChainOptions = ChainOptions(),
    *,
    dt,
    params: ChainParams | None = None,
    unreachable: Float[Array, "6"] | None = None,
) -> ChainOutput:
    """Steps 2-6 of the chain for given thrust commands ``thrust_command``
    (n,) [N] (allocation skipped); see :func:`realize_wrench`."""
    params = ChainParams() if params is None else params
    unreachable = jnp.zeros(6) if unreachable is None else unreachable

    if options.command_noise:
        if inputs.command_noise is None:
            raise ValueError("command_noise: (n,) thrust command noise is required when options.command_noise is on")
        thrust_command = thrust_command + inputs.command_noise

    saturated, margin, thrust_clamped = _saturate(prof, thrust_command, options)
    next_actuator, thrust_act = _actuate(prof, inputs.actuator, thrust_clamped, options, dt)
    k_ground, k_wall, lateral = _near_surfaces(prof, thrust_act, inputs.proximity, options, params)
    thrust_real = thrust_act * k_ground * k_wall
    # 5. realized rotor wrench
    w_rotors = rotor_wrench(prof, thrust_real, lateral)
    zero3 = jnp.zeros(3, dtype=w_rotors.dtype)
    f_drag, f_wind, next_disturbance = _drag_and_wind(inputs, options, params, zero3, dt)

    wrench = w_rotors + jnp.concatenate([f_drag + f_wind, zero3])
    return ChainOutput(
        thrust_command=thrust_command, thrust_clamped=thrust_clamped, thrust_actuated=thrust_act,
        thrust_realized=thrust_real, ground_factor=k_ground, wall_factor=k_wall, wall_force=lateral,
        saturated=saturated, control_margin=margin, unreachable=unreachable, wrench_rotors=w_rotors,
        drag_force=f_drag, wind_force=f_wind, wrench=wrench, actuator_state=next_actuator,
        disturbance_state=next_disturbance,
    )


def realize_wrench(
    prof: RotorProfile,
    wrench_cmd: Float[Array, "6"],
    inputs: ChainInput,
    options: ChainOptions = ChainOptions(),
    *,
    dt,
    params: ChainParams | None = None,
    allocation_inverse: Float[Array, "n 6"] | None = None,
) -> ChainOutput:
    """The whole chain for a desired body wrench ``wrench_cmd`` (6,) [N, N m].

    Args:
      prof: airframe.
      wrench_cmd: (6,) desired body wrench about the CoM.
      inputs: this step's states, distances, motion and draws.
      options: which steps run.
      dt: step length [s] (actuator and turbulence).
      params: coefficients; defaults to :class:`ChainParams` ``()``.
      allocation_inverse: (n, 6) precomputed
        :func:`flapjax.rotor.allocation_inverse` (saves an SVD per step);
        ``None`` computes it from ``prof`` and ``params.allocation_weights``.
    """
    params = ChainParams() if params is None else params
    alloc = _alloc.allocate_with_residual(prof, wrench_cmd, weights=params.allocation_weights,
                                          inverse=allocation_inverse)
    return realize_thrusts(prof, alloc.thrust, inputs, options, dt=dt, params=params, unreachable=alloc.unreachable)
