"""Closed-loop hover of the flapping-wing robot, and the Monte Carlo hover study.

:func:`hover_rollout` is the one closed-loop rollout: every step the hover
controller (:func:`flapjax.control.hover.hover_command`) reads the base pose
and commands the flapping frequency and one input per axis, which the
robot's control channels carry out: the seed robot's two plate angles as
they are, any other robot's channel vector through its averaged model's
control matrix (:func:`flapjax.control.hover.channel_command`). An optional
:class:`PlateStep` adds a channel-command offset for a while (the validation
manoeuvres of the identification); an optional wind blows on the robot.
Its default gains are the robot's own (:mod:`flapjax.sim.flapper.hover_gains`:
for the seed robot designed for the per-wing model, legacy for the averaged
one; for a channel robot designed through its channels,
:mod:`flapjax.sim.flapper.channel_gains`), so the plain call flies the
per-wing free robot. :func:`hover_study` flies many randomized
starts of the lumped averaged-model robot with it and counts how many settle.
"""

from __future__ import annotations

from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from flapjax.control.hover import HoverGains, body_tilt, channel_command, hover_command, hover_state
from flapjax.math import quat_mul, quat_to_mat
from flapjax.sim.flapper.hover_gains import hover_gains
from flapjax.sim.flapper.hover_quality import HoverQuality, hover_quality  # noqa: F401  (hover_quality was here)
from flapjax.sim.flapper.channels import SEED_KINDS
from flapjax.sim.flapper.robot import FlapperCommand, FlapperParams, FlapperRobot, FlapperState, default_params, make_robot
from flapjax.sim.flapper.state import init_state
from flapjax.sim.rollout import remat
from flapjax.sim.flapper.step import step
from flapjax.validation import ConfigError, as_float_array, check_choice, check_int, check_positive, is_traced

Scalar = Float[Array, ""]


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


def base_pose(robot: FlapperRobot, data) -> BasePose:
    """Base pose from the freejoint's qpos/qvel (linear velocity world frame,
    angular velocity body frame, MuJoCo's convention); ``data`` is the MJX
    data or the rigid backend's state."""
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

    With ``record="block"`` (default) each record summarizes one block of
    ``record_every`` steps: the pose at its end, the block-mean frequency and
    force and the last plate command. With ``record="first"`` it is a snapshot
    of the block's first step: the pose before it, its command and its force.

    Attributes:
      time: () time of the pose [s].
      position: (3,) base position [m].
      velocity: (3,) base velocity [m/s].
      tilt: (2,) body z tilt toward +x, +y [rad].
      frequency: () commanded frequency [Hz].
      plate: (nc,) channel values commanded (with any :class:`PlateStep`
        offset): the seed robot's plate angles [rad].
      force_world: (3,) applied aerodynamic force [N].
      healthy: () the world is still finite.
    """

    time: Scalar
    position: Float[Array, "3"]
    velocity: Float[Array, "3"]
    tilt: Float[Array, "2"]
    frequency: Scalar
    plate: Float[Array, " nc"]
    force_world: Float[Array, "3"]
    healthy: Bool[Array, ""]


class PlateStep(eqx.Module):
    """A channel-command offset added to the controller's channel values
    while ``start <= t < start + length``.

    Attributes:
      offset: (nc,) offset of each channel, in channel order [channel units]:
        the seed robot's (pitch_joint, roll_joint) [rad].
      start: () when the offset begins [s].
      length: () how long it lasts [s].
    """

    offset: Float[Array, " nc"]
    start: Scalar | float
    length: Scalar | float


def _hover_step(robot, params, gains, target, hover_frequency, gravity, plate_step, wind):
    """One controller update and one robot step; carry ``(state, controller
    state)``; the scanned input is this step's wind (None: ``wind``, constant
    or none)."""

    def one(carry, wind_now):
        st, hs = carry
        pose = base_pose(robot, st.data)
        hs, cmd = hover_command(
            gains, hs, hover_frequency=hover_frequency, gravity=gravity, target=target, position=pose.position,
            velocity=pose.velocity, rot_world_body=pose.rot_world_body, w_body=pose.w_body, dt=robot.dt,
        )
        plate = cmd.plate if robot.channel_kinds == SEED_KINDS else channel_command(
            cmd.plate, params.averaged.control_matrix)
        if plate_step is not None:
            t = st.step * robot.dt
            on = (t >= plate_step.start) & (t < plate_step.start + plate_step.length)
            plate = plate + jnp.where(on, jnp.asarray(plate_step.offset, dtype=plate.dtype), 0.0)
        st, dg = step(robot, params, st, FlapperCommand(frequency=cmd.frequency, plate=plate),
                      wind=wind if wind_now is None else wind_now)
        return (st, hs), (dg.force_world, cmd.frequency, plate)

    return one


def _record(robot: FlapperRobot, st: FlapperState, force, frequency, plate) -> HoverRecord:
    pose = base_pose(robot, st.data)
    return HoverRecord(
        time=st.step.astype(force.dtype) * robot.dt,
        position=pose.position,
        velocity=pose.velocity,
        tilt=body_tilt(pose.rot_world_body),
        frequency=frequency,
        plate=plate,
        force_world=force,
        healthy=st.healthy,
    )


def hover_rollout(
    robot: FlapperRobot,
    params: FlapperParams,
    state: FlapperState,
    n_steps: int,
    *,
    gains: HoverGains | str | None = None,
    target: Float[Array, "3"] | None = None,
    record_every: int = 10,
    checkpoint: bool = True,
    hover_frequency: Scalar | float | None = None,
    gravity: Scalar | float | None = None,
    plate_step: PlateStep | None = None,
    record: Literal["block", "first"] = "block",
    prior: BasePose | None = None,
    wind: Float[Array, "3"] | Float[Array, "n 3"] | None = None,
) -> tuple[FlapperState, HoverRecord]:
    """Closed-loop hover of one world with :func:`flapjax.control.hover.hover_command`.

    The controller runs every step. Free or lumped root, either backend.

    With the defaults, the per-wing free robot started by
    :func:`~flapjax.sim.flapper.init_state` (on its periodic orbit by
    default) hovers: over the last 0.5 s of 2 s, tilt RMS under 3 deg,
    cycle-mean tilt under 1 deg, altitude error under 5 mm
    (docs/physics.md, Hover controller, Defaults).

    Args:
      gains: controller gains, or a name (:func:`~flapjax.sim.flapper.hover_gains`):
        default the robot's own, the designed gains
        (:func:`flapjax.control.design.design_gains` at the params' hover
        frequency, computed once and cached) for the per-wing model and
        :meth:`HoverGains.legacy` for the cycle-averaged one; ``"legacy"``
        or ``"designed"`` pick one of the two.
      target: (3,) hover position [m]; default the initial position.
      record_every: steps per record; ``n_steps`` must be a multiple of it.
      checkpoint: rematerialize each step in the reverse pass (less memory).
      hover_frequency: the controller's f_h [Hz]; default ``sqrt(m g / k_f)``
        of ``params.averaged`` (for the per-wing model the calibration makes
        its F_z / f^2 equal k_f).
      gravity: the controller's g [m/s^2]; default ``params.averaged.gravity``.
      plate_step: a plate-command offset over a time window; default none.
      record: "block" (summary of each block) or "first" (snapshot of each
        block's first step); see :class:`HoverRecord`.
      prior: the pose the controller's cycle-averaged estimate starts from
        (only with ``gains.cycle_filter``); default the measured initial
        pose. On the per-wing model's periodic orbit the instantaneous body
        velocities differ from their cycle means; give the cycle means here
        (e.g. the ``velocity`` and ``angular_velocity`` asked of
        :func:`init_state` with ``periodic=True``).
      wind: uniform air velocity, world frame [m/s]: (3,) constant, or
        (n_steps, 3) one per step (a gust); the aerodynamics of both models
        see the body's velocity relative to it (:func:`flapjax.sim.flapper.step`).
        Default none (still air).

    Returns:
      the final state and ``n_steps // record_every`` records.
    """
    check_choice("record", record, ("block", "first"))
    check_int("n_steps", n_steps, 1)
    check_int("record_every", record_every, 1)
    if target is not None and not is_traced(target):
        as_float_array("target", target, (3,))
    if hover_frequency is not None and not is_traced(hover_frequency):
        check_positive("hover_frequency", hover_frequency)
    if n_steps % record_every:
        raise ConfigError(f"n_steps: must be a multiple of record_every={record_every}, got {n_steps}")
    if robot.channel_kinds != SEED_KINDS and params.averaged.control_matrix is None:
        raise ConfigError(f"params.averaged.control_matrix: the robot's channels {list(robot.channel_kinds)} carry "
                          "the controller's inputs through it (flapjax identify --robot writes it)")
    gains = hover_gains(robot, params, gains)
    wind = _check_wind(wind, n_steps)
    target = base_pose(robot, state.data).position if target is None else jnp.asarray(target)
    f_h = params.averaged.hover_frequency if hover_frequency is None else hover_frequency
    g = params.averaged.gravity if gravity is None else gravity
    # Python numbers as (weakly typed, so promoting as before) arrays: new values reuse the compiled rollout.
    f_h, g = (jnp.asarray(x) if isinstance(x, (int, float)) else x for x in (f_h, g))
    if plate_step is not None:
        plate_step = jax.tree.map(lambda x: jnp.asarray(x) if isinstance(x, (int, float)) else x, plate_step)
    return _hover_rollout(robot, params, state, n_steps, gains, target, record_every, checkpoint, f_h, g,
                          plate_step, record, prior, wind)


def _check_wind(wind, n_steps: int):
    """``wind`` as an array of shape (3,) or (n_steps, 3), checked when concrete."""
    if wind is None:
        return None
    if is_traced(wind):
        shape = jnp.shape(wind)
    else:
        shape = as_float_array("wind", wind).shape
    if shape not in ((3,), (n_steps, 3)):
        raise ConfigError(f"wind: expected shape (3,) or (n_steps, 3) = ({n_steps}, 3), got {shape}")
    return wind if is_traced(wind) else jnp.asarray(wind)


@eqx.filter_jit
def _hover_rollout(robot, params, state, n_steps, gains, target, record_every, checkpoint, f_h, g, plate_step,
                   record, prior, wind):
    """:func:`hover_rollout` after its checks, compiled once per robot,
    step counts and recording mode (the integers, flags and names are
    static; every array is traced)."""
    per_step = wind is not None and wind.ndim == 2
    one = _hover_step(robot, params, gains, target, f_h, g, plate_step, None if per_step else wind)
    if checkpoint:
        one = remat(one)
    n_blocks = n_steps // record_every
    xs = wind.reshape(n_blocks, record_every, 3) if per_step else None

    def block(carry, wind_block):
        start = carry[0]
        carry, (force, freq, plate) = jax.lax.scan(one, carry, wind_block, length=record_every)
        if record == "first":
            return carry, _record(robot, start, force[0], freq[0], plate[0])
        return carry, _record(robot, carry[0], jnp.mean(force, axis=0), jnp.mean(freq), plate[-1])

    pose0 = base_pose(robot, state.data) if prior is None else prior
    hs0 = hover_state(gains, hover_frequency=f_h, position=pose0.position, velocity=pose0.velocity,
                      rot_world_body=pose0.rot_world_body, w_body=pose0.w_body, dt=robot.dt, target=target)
    (final, _), records = jax.lax.scan(block, (state, hs0), xs, length=n_blocks)
    return final, records


# ---------------------------------------------------------------------------
# Monte Carlo hover study
# ---------------------------------------------------------------------------


class HoverStudy(eqx.Module):
    """Outcome per world (leading axis: worlds).

    Attributes:
      settled: (n,) reached and stayed in the tolerance box.
      final_position_error: (n,) |p - target| at the end [m].
      max_late_position_error: (n,) max |p - target| over the settle window [m].
      max_late_tilt: (n,) max |tilt| over the settle window [rad].
      healthy: (n,) stayed finite.
      initial_offset: (n, 3) start position minus target [m].
    """

    settled: Bool[Array, " n"]
    final_position_error: Float[Array, " n"]
    max_late_position_error: Float[Array, " n"]
    max_late_tilt: Float[Array, " n"]
    healthy: Bool[Array, " n"]
    initial_offset: Float[Array, "n 3"]

    @property
    def settled_fraction(self) -> float:
        return float(jnp.mean(self.settled.astype(float)))


def random_starts(key: PRNGKeyArray, n_worlds: int, *, position_spread=0.05, tilt_spread=0.2,
                  velocity_spread=0.2, rate_spread=1.0):
    """Uniform random offsets [m], tilts [rad] (about random horizontal axes),
    velocities [m/s] and body rates [rad/s]; each (n, 3) except quats (n, 4)."""
    kp, kt, ka, kv, kw = jax.random.split(key, 5)
    offset = jax.random.uniform(kp, (n_worlds, 3), minval=-position_spread, maxval=position_spread)
    tilt = jax.random.uniform(kt, (n_worlds,), minval=0.0, maxval=tilt_spread)
    heading = jax.random.uniform(ka, (n_worlds,), minval=0.0, maxval=2 * jnp.pi)
    yaw = jax.random.uniform(jax.random.fold_in(ka, 1), (n_worlds,), minval=-jnp.pi, maxval=jnp.pi)
    q_tilt = jnp.stack([jnp.cos(tilt / 2), jnp.sin(tilt / 2) * jnp.cos(heading),
                        jnp.sin(tilt / 2) * jnp.sin(heading), jnp.zeros_like(tilt)], axis=1)
    q_yaw = jnp.stack([jnp.cos(yaw / 2), jnp.zeros_like(yaw), jnp.zeros_like(yaw), jnp.sin(yaw / 2)], axis=1)
    quat = jax.vmap(quat_mul)(q_tilt, q_yaw)
    velocity = jax.random.uniform(kv, (n_worlds, 3), minval=-velocity_spread, maxval=velocity_spread)
    rate = jax.random.uniform(kw, (n_worlds, 3), minval=-rate_spread, maxval=rate_spread)
    return offset, quat, velocity, rate


@eqx.filter_jit
def _hover_study_worlds(robot, params, target, starts, n_steps: int, record_every: int, n_late: int):
    """Final and late errors, late tilt and health of each start (compiled
    once per robot, step counts and number of worlds)."""
    dtype = target.dtype

    def one(o, q, v, w):
        st = init_state(robot, params, position=(target + o).astype(dtype), quat=q.astype(dtype),
                        velocity=v.astype(dtype), angular_velocity=w.astype(dtype))
        _, rec = hover_rollout(robot, params, st, n_steps, target=target, record_every=record_every)
        err = jnp.linalg.norm(rec.position - target, axis=-1)
        tilt = jnp.linalg.norm(rec.tilt, axis=-1)
        return err[-1], jnp.max(err[-n_late:]), jnp.max(tilt[-n_late:]), rec.healthy[-1]

    return jax.vmap(one)(*starts)


def hover_study(
    key: PRNGKeyArray,
    n_worlds: int,
    *,
    duration: float = 2.5,
    settle_window: float = 0.5,
    position_tolerance: float = 0.01,
    tilt_tolerance: float = 0.05,
    target=(0.0, 0.0, 0.5),
    backend: str = "rigid",
    dtype=jnp.float32,
    record_every: int = 100,
    **spreads,
) -> HoverStudy:
    """Fly ``n_worlds`` randomized starts (:func:`random_starts`) of the lumped
    averaged-model robot under :func:`hover_rollout`. A world has settled when,
    over the last ``settle_window`` [s], its position stays within
    ``position_tolerance`` [m] of the target and its tilt within
    ``tilt_tolerance`` [rad]."""
    check_int("n_worlds", n_worlds, 1)
    check_int("record_every", record_every, 1)
    check_positive("duration", duration)
    check_positive("settle_window", settle_window)
    if settle_window > duration:
        raise ConfigError(f"settle_window: must not exceed duration = {duration:g} s, got {settle_window:g} s")
    robot = make_robot("lumped", "averaged", backend=backend, dtype=dtype)
    if int(round(duration / robot.dt)) < record_every:
        raise ConfigError(f"duration: must hold at least one record of {record_every} steps "
                          f"({record_every * robot.dt:g} s), got {duration:g} s")
    params = default_params(robot)
    params = jax.tree.map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, params)
    target = jnp.asarray(target, dtype=dtype)
    offset, quat, velocity, rate = random_starts(key, n_worlds, **spreads)
    n_steps = int(round(duration / robot.dt)) // record_every * record_every
    n_late = max(1, int(round(settle_window / (robot.dt * record_every))))

    final, late_err, late_tilt, healthy = _hover_study_worlds(robot, params, target, (offset, quat, velocity, rate),
                                                              n_steps, record_every, n_late)
    settled = healthy & (late_err <= position_tolerance) & (late_tilt <= tilt_tolerance)
    return HoverStudy(settled=settled, final_position_error=final, max_late_position_error=late_err,
                      max_late_tilt=late_tilt, healthy=healthy, initial_offset=offset)
