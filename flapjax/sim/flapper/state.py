"""Initial states of the flapping-wing robot: :func:`init_state` on the
stroke schedule (the backend's ``initial`` stage,
:mod:`flapjax.sim.flapper.backends`), optionally on the periodic orbit of the per-wing model
(wings warmed up with the base held, body velocity corrected by a short free
probe; docs/physics.md, Periodic start).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.sim import rigid
from flapjax.sim.flapper.backends import STAGES
from flapjax.sim.flapper.channels import joint_setpoints
from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot, FlapperState
from flapjax.sim.flapper.step import step
from flapjax.validation import ConfigError, as_float_array, check_range, is_traced

#: Largest initial position [m], speed [m/s] (the speed of sound) and body rate [rad/s] accepted.
MAX_DISTANCE, MAX_SPEED, MAX_RATE = 1.0e4, 343.0, 1.0e4


def init_state(
    robot: FlapperRobot,
    params: FlapperParams,
    *,
    position: Float[Array, "3"] | None = None,
    quat: Float[Array, "4"] | None = None,
    velocity: Float[Array, "3"] | None = None,
    angular_velocity: Float[Array, "3"] | None = None,
    periodic: bool | None = None,
    warmup: float = 0.1,
    probe: float = 0.05,
) -> FlapperState:
    """Initial state on the stroke schedule.

    A free per-wing robot starts on its periodic orbit by default (below);
    every other robot starts on the schedule. ``periodic=False`` (the
    schedule start) puts the stroke joints on the reference ``psi(0)``,
    ``psi_dot(0)`` at full stroke speed, the feathering hinges unfeathered
    and the body at the given velocities: a free per-wing robot so started
    is off its periodic orbit, and its first strokes kick the body (a
    cycle-mean body rate and drift that persist; under the hover controller
    a tilt that takes the first second to die out).

    ``periodic=True`` starts the per-wing model on its periodic orbit
    (docs/physics.md, Periodic start): the wings flap ``warmup`` seconds with
    the base held at the given pose, and the state starts from their joint
    state, the stroke phase continuing where the warm-up ended; on a free
    root, a probe of the free flight over the whole wingbeats within
    ``probe`` seconds measures the cycle-mean body velocity and rate the
    start produces, and the initial body velocities are corrected by it so
    the cycle means start at ``velocity`` and ``angular_velocity`` (two
    probes: a shooting step, then a per-component secant step). It has no
    effect on the averaged model or the lumped body (no wingbeat). ``probe``
    must hold at least one wingbeat.

    Args (free and lumped roots only; ignored for "fixed"):
      position: (3,) base position, world frame [m] (default from the MJCF).
      quat: (4,) base orientation ``[w, x, y, z]``.
      velocity: (3,) base linear velocity, world frame [m/s].
      angular_velocity: (3,) base angular velocity, body frame [rad/s].
      periodic: start on the periodic orbit (static); default (None): True
        for a free per-wing robot, False otherwise (the fixed-base sweeps
        and the driven base keep the schedule start they were measured with).
      warmup: warm-up with the base held [s] (static).
      probe: free-flight probe of the body-velocity correction [s] (static).

    Pure JAX: vmap it over batched params / initial conditions.
    """
    bounds = {"position": MAX_DISTANCE, "velocity": MAX_SPEED, "angular_velocity": MAX_RATE}
    for name, value in (("position", position), ("velocity", velocity), ("angular_velocity", angular_velocity)):
        if value is not None and not is_traced(value):
            check_range(name, as_float_array(name, value, (3,)), -bounds[name], bounds[name])  # shape, finite, plausible
    if quat is not None and not is_traced(quat):
        q = as_float_array("quat", quat, (4,))
        if np.linalg.norm(q) < 1e-9:
            raise ConfigError(f"quat: must be a non-zero quaternion [w, x, y, z] (it is normalized), got {q.tolist()}")
    data = STAGES[robot.backend].initial(robot, params, position, quat, velocity, angular_velocity)
    dtype = (data.position if isinstance(data, rigid.RigidState) else data.qpos).dtype
    # the plate-motion terms are the plates': an averaged robot steered by other channels has none
    last_plate = (None if robot.aero_model == "averaged" and any(k != "joint" for k in robot.channel_kinds)
                  else joint_setpoints(robot.channel_kinds, params.plate, dtype))
    state = FlapperState(
        data=data,
        step=jnp.zeros((), dtype=jnp.int32),
        phase_offset=jnp.zeros((), dtype=dtype),
        healthy=jnp.ones((), dtype=bool),
        health=jnp.zeros((), dtype=jnp.int32),
        last_plate=last_plate,
        last_plate_rate=None if last_plate is None else jnp.zeros_like(last_plate),  # the plate at rest
        # the lagged airspeed starts at the first step's airspeed (flapjax.sim.flapper.airspeed_rate)
        last_airspeed=jnp.zeros(2, dtype) if robot.aero_model == "averaged" else None,
    )
    if periodic is None:
        periodic = robot.root == "free" and robot.aero_model == "wing"
    if periodic and robot.has_wings and robot.aero_model == "wing":
        check_range("warmup", warmup, 0.0, 10.0)
        check_range("probe", probe, 0.0, 10.0)
        f = params.stroke.frequency
        if robot.free_q >= 0 and not is_traced(f) and probe * float(f) < 1.0:
            raise ConfigError(f"probe: must hold at least one wingbeat, 1 / f = {1.0 / float(f):.4g} s at "
                              f"{float(f):g} Hz, got {probe:g} s")
        state = _periodic_start(robot, params, state, warmup=warmup, probe=probe)
    return state


def _hold_base(robot: FlapperRobot, data, pose_q, pose_v):
    a, v = robot.free_q, robot.free_v
    return data.replace(qpos=data.qpos.at[a : a + 7].set(pose_q), qvel=data.qvel.at[v : v + 6].set(pose_v))


def _periodic_start(robot: FlapperRobot, params: FlapperParams, state: FlapperState, *, warmup: float,
                    probe: float) -> FlapperState:
    """The wings warmed up with the base held, then (free root) the body
    velocities corrected by one free-flight probe; see :func:`init_state`."""
    free = robot.free_q >= 0
    d0 = state.data
    if free:
        a, v = robot.free_q, robot.free_v
        pose_q, pose_v = d0.qpos[a : a + 7], d0.qvel[v : v + 6]
        rest = jnp.zeros_like(pose_v)

    def held(st, _):
        st, _ = step(robot, params, st)
        if free:  # an infinitely stiff mount: the base stays at the pose, at rest
            st = eqx.tree_at(lambda s: s.data, st, _hold_base(robot, st.data, pose_q, rest))
        return st, None

    n_warm = int(round(warmup / robot.dt))
    warm, _ = jax.lax.scan(held, state, None, length=n_warm)
    # Restart the clock at 0 with the stroke phase the warm-up reached.
    phase = jnp.mod(jnp.mod(params.stroke.frequency * robot.dt * n_warm, 1.0) + warm.phase_offset, 1.0)
    start = FlapperState(data=warm.data, step=jnp.zeros_like(state.step), phase_offset=phase.astype(state.phase_offset.dtype),
                         healthy=warm.healthy, health=warm.health, last_plate=warm.last_plate,
                         last_plate_rate=warm.last_plate_rate)
    if not free:
        return start
    start = eqx.tree_at(lambda s: s.data, start, _hold_base(robot, start.data, pose_q, pose_v))

    def flown(st, _):
        st, _ = step(robot, params, st)
        return st, st.data.qvel[v : v + 6]

    n_probe = int(round(probe / robot.dt))
    # Mean over the whole wingbeats that fit in the probe (at least one).
    f_dt = params.stroke.frequency * robot.dt
    whole = jnp.maximum(jnp.floor(n_probe * f_dt), 1.0)
    weight = (jnp.arange(n_probe) * f_dt < whole).astype(start.data.qvel.dtype)

    def probe_mean(v0):
        st = eqx.tree_at(lambda s: s.data, start, _hold_base(robot, start.data, pose_q, v0))
        _, qvel = jax.lax.scan(flown, st, None, length=n_probe)
        return weight @ qvel / jnp.sum(weight)

    # Two probes: a shooting step, then a per-component secant step (the
    # wings' aerodynamic damping and the stiff plate make the cycle mean
    # respond to the initial body velocity by a gain below one).
    mean_a = probe_mean(pose_v)
    v_b = pose_v - (mean_a - pose_v)
    mean_b = probe_mean(v_b)
    dv = v_b - pose_v
    small = jnp.abs(dv) < 1e-9
    gain = jnp.where(small, 1.0, (mean_b - mean_a) / jnp.where(small, 1.0, dv))
    gain = jnp.clip(gain, 0.2, 2.0)
    v_c = v_b - (mean_b - pose_v) / gain
    return eqx.tree_at(lambda s: s.data, start, _hold_base(robot, start.data, pose_q, v_c))
