"""Hover controller of the flapping-wing robot (seed section 10.3, improved).

Altitude: a PID on the altitude error corrects the flapping frequency around
the hover frequency ``f_h = sqrt(m g / k_f)``, divided by ``sqrt(n_z)`` (the
vertical share of the thrust direction) so a tilted robot keeps its weight:

    f = f_h / sqrt(max(n_z, 0.5)) + K_p e_z + K_i int e_z - K_d v_z

Linearized, ``z'' = (2 k_f f_h / m) df ~ 0.465 m/s^2 per Hz``; the field
defaults (:meth:`HoverGains.legacy`: 60 Hz/m, 40 Hz/(m s), 20 Hz s/m) place the vertical poles at
-0.92 and -4.19 +/- 1.63j rad/s. The seed's controller flew at a nominal 42 Hz and
ended 2.4 cm low; the f_h feed-forward removes that offset.

Horizontal: a PD on position (9 1/s^2, 4 1/s, plus the model's own damping
k_v / m = 2 1/s) asks for an acceleration, i.e. a body tilt
``a / g`` (clipped to ``tilt_limit``), expressed in the heading frame.

Attitude: plate angles from the tilt error. The naming is crossed:
roll_joint (delta_r) makes the pitch moment and tilts the thrust toward -x;
pitch_joint (delta_p) makes the roll moment and tilts the thrust toward -y.
So ``delta_r = -(K_a (bx* - bx) - K_w q)``, ``delta_p = -(K_a (by* - by) + K_w p)``
with bx, by the tilt of the body z axis toward +x, +y. With the seed's moment
gains (~5.5e-4 N m/rad at f_h) and inertia ~5e-6 kg m^2, ``K_a = 5`` puts the
attitude poles at -29 +/- 20j and -33 +/- 21j rad/s, well above the position
poles (-1.98 +/- 0.41j, -1.94 +/- 0.37j; the plate's tilt of the thrust adds
to the PD): the eigenvalues of :func:`flapjax.control.design.closed_loop_eigenvalues`
on the default averaged model's :func:`~flapjax.aero.cycle_averaged.linearize_hover`.
Yaw is not actuated by this robot; only rate damping acts on it.

The per-wing robot rocks at the wingbeat (body rates of about +/-10 rad/s
at f), so rate feedback on the raw measurement saturates the plate. With
``cycle_filter=True`` every measurement first goes through notch filters at
f, 2f, 3f (:mod:`flapjax.control.estimate`, the flapping frequency of the
previous command as input) and the controller acts on that cycle-averaged
estimate. The position, velocity and attitude gains may then be per-axis
pairs (x, y) in the heading frame, as designed by an LQR on the linear
hover model (:func:`flapjax.control.design.design_gains`).

The controller is pure (no MuJoCo); the bridge feeds it the base pose
(:func:`flapjax.sim.flapper.hover_rollout`, whose default gains are the
designed ones on the per-wing robot and the legacy ones on the averaged
model: :mod:`flapjax.sim.flapper.hover_gains`). Formulas and the feed-forward's
departure from the seed: docs/physics.md, Hover controller.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.control.estimate import DEFAULT_HARMONICS, CycleFilterState, cycle_filter_init, cycle_filter_update
from flapjax.validation import ConfigError, check_positive

Scalar = Float[Array, ""]


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


class HoverGains(eqx.Module):
    """Gains and limits of :func:`hover_command`.

    Attributes:
      altitude_p: () K_p [Hz/m].
      altitude_i: () K_i [Hz/(m s)].
      altitude_d: () K_d [Hz s/m].
      integral_limit: () clamp of the altitude-error integral [m s].
      frequency_limits: (2,) min and max flapping frequency [Hz].
      position_p: () or (2,) horizontal position gain [1/s^2].
      position_d: () or (2,) horizontal velocity gain [1/s].
      tilt_limit: () largest commanded body tilt [rad].
      attitude_p: () or (2,) K_a, plate angle per rad of tilt error [-].
      attitude_d: () or (2,) K_w, plate angle per rad/s of body rate [s] (any sign).
      plate_limit: () clamp of both plate angles [rad].
      cycle_filter: act on the cycle-averaged estimate (notches at the
        harmonics of f) instead of the raw measurement (static).
      filter_harmonics: multiples of f the estimate removes (static).
      filter_quality: Q of the notches (static).
      filter_settle: with ``cycle_filter``, the feedback fades in over this
        time [s] while the notches settle on the wingbeat (a wingbeat that
        starts abruptly passes a notch for a few cycles) (static).
      command_lag: with ``cycle_filter``, time constant of a first-order
        low-pass on the plate command [s] (0: none). A stiff plate servo
        turns a fast plate command into a reaction on the body (the plate's
        inertia is up to a quarter of the body's), which rate feedback
        would close into a fast loop; the low-pass keeps that loop's gain
        below one (static).

    A (2,) gain holds the x (pitch) and y (roll) axis values of the
    heading frame.
    """

    altitude_p: Scalar = eqx.field(converter=_as_array, default=60.0)
    altitude_i: Scalar = eqx.field(converter=_as_array, default=40.0)
    altitude_d: Scalar = eqx.field(converter=_as_array, default=20.0)
    integral_limit: Scalar = eqx.field(converter=_as_array, default=0.05)
    frequency_limits: Float[Array, "2"] = eqx.field(converter=_as_array, default=(20.0, 60.0))
    position_p: Scalar = eqx.field(converter=_as_array, default=9.0)
    position_d: Scalar = eqx.field(converter=_as_array, default=4.0)
    tilt_limit: Scalar = eqx.field(converter=_as_array, default=0.3)
    attitude_p: Scalar = eqx.field(converter=_as_array, default=5.0)
    attitude_d: Scalar = eqx.field(converter=_as_array, default=0.0)
    plate_limit: Scalar = eqx.field(converter=_as_array, default=0.35)
    cycle_filter: bool = eqx.field(static=True, default=False)
    filter_harmonics: tuple[int, ...] = eqx.field(static=True, default=DEFAULT_HARMONICS)
    filter_quality: float = eqx.field(static=True, default=1.0)
    filter_settle: float = eqx.field(static=True, default=0.05)
    command_lag: float = eqx.field(static=True, default=0.006)

    @classmethod
    def legacy(cls) -> HoverGains:
        """The hand-tuned gains of the scalar cascade (the field defaults:
        altitude 60 Hz/m, 40 Hz/(m s), 20 Hz s/m; position 9 1/s^2, 4 1/s;
        attitude 5, no rate feedback, no cycle filter). They fly the
        cycle-averaged model; the per-wing robot's wingbeat rocking tips it
        over under them (:func:`flapjax.control.design.design_gains` makes
        the gains it flies)."""
        return cls()

    def __check_init__(self):
        # attitude_d may be negative: an LQR on a model with speed-to-moment coupling can ask for it.
        for name in ("altitude_p", "altitude_i", "altitude_d", "position_p", "position_d", "attitude_p"):
            check_positive(f"HoverGains.{name}", getattr(self, name), allow_zero=True)
        for name in ("integral_limit", "tilt_limit", "plate_limit"):
            check_positive(f"HoverGains.{name}", getattr(self, name))
        check_positive("HoverGains.frequency_limits", self.frequency_limits)
        for name in ("position_p", "position_d", "attitude_p", "attitude_d"):
            if jnp.shape(getattr(self, name)) not in ((), (2,)):
                raise ConfigError(f"HoverGains.{name}: expected a scalar or a (x, y) pair, got shape "
                                  f"{jnp.shape(getattr(self, name))}")
        check_positive("HoverGains.filter_quality", self.filter_quality)


class HoverState(eqx.Module):
    """Controller memory.

    Attributes:
      altitude_integral: () int (z* - z) dt [m s].
      estimate: notch-filter memory of the cycle-averaged estimate (only
        with ``cycle_filter``; see :func:`hover_state`).
      frequency: () the previous frequency command, the notches' input [Hz].
      time: () time since the start [s] (only with ``cycle_filter``).
      command: (2,) low-passed tilt command ``(u_x, u_y)`` [rad] (only with
        ``cycle_filter``).
    """

    altitude_integral: Scalar = eqx.field(converter=_as_array, default=0.0)
    estimate: CycleFilterState | None = None
    frequency: Scalar | None = None
    time: Scalar | None = None
    command: Float[Array, "2"] | None = None


def _measurement(position, velocity, rot_world_body, w_body) -> Array:
    return jnp.concatenate([position, velocity, body_tilt(rot_world_body), w_body])


def hover_state(
    gains: HoverGains,
    *,
    hover_frequency: Scalar,
    position: Float[Array, "3"],
    velocity: Float[Array, "3"],
    rot_world_body: Float[Array, "3 3"],
    w_body: Float[Array, "3"],
    dt: float,
    target: Float[Array, "3"],
) -> HoverState:
    """Initial controller memory: zero integral and, with ``cycle_filter``,
    the estimate at rest on the first measurement (arguments as in
    :func:`hover_command`; the estimate holds the position relative to
    ``target``, so give the target the commands will use)."""
    dtype = jnp.asarray(position).dtype
    if not gains.cycle_filter:
        return HoverState(altitude_integral=jnp.zeros((), dtype=dtype))
    x = _measurement(position - target, velocity, rot_world_body, w_body).astype(dtype)
    f = jnp.asarray(hover_frequency, dtype=dtype)
    est = cycle_filter_init(x, f, dt, harmonics=gains.filter_harmonics, quality=gains.filter_quality)
    return HoverState(altitude_integral=jnp.zeros((), dtype=dtype), estimate=est, frequency=f,
                      time=jnp.zeros((), dtype=dtype), command=jnp.zeros(2, dtype=dtype))


class HoverCommand(eqx.Module):
    """Controller output.

    Attributes:
      frequency: () flapping frequency [Hz].
      plate: (2,) plate angles (pitch_joint, roll_joint) [rad].
      tilt_target: (2,) commanded tilt of body z toward +x, +y [rad].
    """

    frequency: Scalar
    plate: Float[Array, "2"]
    tilt_target: Float[Array, "2"]


def body_tilt(rot_world_body: Float[Array, "3 3"]) -> Float[Array, "2"]:
    """Tilt of the body z axis toward world +x and +y [rad]."""
    z = rot_world_body[:, 2]
    return jnp.stack([jnp.arctan2(z[0], z[2]), jnp.arctan2(z[1], z[2])])


def hover_command(
    gains: HoverGains,
    state: HoverState,
    *,
    hover_frequency: Scalar,
    gravity: Scalar,
    target: Float[Array, "3"],
    position: Float[Array, "3"],
    velocity: Float[Array, "3"],
    rot_world_body: Float[Array, "3 3"],
    w_body: Float[Array, "3"],
    dt: float,
) -> tuple[HoverState, HoverCommand]:
    """One controller update; pure, no batch axis.

    Args:
      gains: gains and limits.
      state: controller memory.
      hover_frequency: () f_h = sqrt(m g / k_f) [Hz].
      gravity: () g [m/s^2].
      target: (3,) hover position, world frame [m].
      position: (3,) measured position, world frame [m].
      velocity: (3,) measured velocity, world frame [m/s].
      rot_world_body: (3, 3) body attitude R_WB.
      w_body: (3,) body angular velocity (p, q, r), body frame [rad/s].
      dt: controller period [s].
    """
    if gains.cycle_filter:
        if state.estimate is None or state.frequency is None:
            raise ConfigError("state: cycle_filter needs the estimate's memory; start from hover_state(gains, ...)")
        # Position relative to the target: the notches see small signals, so
        # their moving coefficients make no jumps on a large constant.
        x = _measurement(position - target, velocity, rot_world_body, w_body)
        est, x = cycle_filter_update(state.estimate, x, state.frequency, dt, harmonics=gains.filter_harmonics,
                                     quality=gains.filter_quality)
        position, velocity, tilt_world, w_body = x[0:3] + target, x[3:6], x[6:8], x[8:11]
    else:
        est, tilt_world = None, body_tilt(rot_world_body)
    err = target - position
    integral = jnp.clip(state.altitude_integral + err[2] * dt, -gains.integral_limit, gains.integral_limit)
    n_z = jnp.maximum(rot_world_body[2, 2], 0.5)
    f = hover_frequency / jnp.sqrt(n_z) + gains.altitude_p * err[2] + gains.altitude_i * integral - gains.altitude_d * velocity[2]
    f = jnp.clip(f, gains.frequency_limits[0], gains.frequency_limits[1])

    # Tilt wanted in the heading frame (yaw is free): rotate by -yaw.
    yaw = jnp.arctan2(rot_world_body[1, 0], rot_world_body[0, 0])
    c, s = jnp.cos(yaw), jnp.sin(yaw)

    def heading(a):
        return jnp.stack([c * a[0] + s * a[1], -s * a[0] + c * a[1]])

    if jnp.ndim(gains.position_p) or jnp.ndim(gains.position_d):  # per-axis gains act in the heading frame
        acc_h = gains.position_p * heading(err[:2]) - gains.position_d * heading(velocity[:2])
    else:
        acc_h = heading(gains.position_p * err[:2] - gains.position_d * velocity[:2])
    tilt_target = jnp.clip(acc_h / gravity, -gains.tilt_limit, gains.tilt_limit)
    tilt = heading(tilt_world)
    # Tilt rates toward +x, +y: q and -p.
    u = gains.attitude_p * (tilt_target - tilt) - gains.attitude_d * jnp.stack([w_body[1], -w_body[0]])
    if est is not None:
        # Feedback fades in (smoothstep) while the notches settle on the wingbeat.
        r = jnp.clip(state.time / gains.filter_settle, 0.0, 1.0) if gains.filter_settle > 0 else 1.0
        fade = r * r * (3.0 - 2.0 * r)
        u = fade * u
        if gains.command_lag > 0:
            u = state.command + (1.0 - math.exp(-dt / gains.command_lag)) * (u - state.command)
        f_ff = hover_frequency / jnp.sqrt(n_z)
        f = jnp.clip(f_ff + fade * (f - f_ff), gains.frequency_limits[0], gains.frequency_limits[1])
    plate = jnp.clip(jnp.stack([-u[1], -u[0]]), -gains.plate_limit, gains.plate_limit)
    new = HoverState(altitude_integral=integral) if est is None else HoverState(
        altitude_integral=integral, estimate=est, frequency=f.astype(state.frequency.dtype), time=state.time + dt,
        command=u.astype(state.command.dtype))
    return new, HoverCommand(frequency=f, plate=plate, tilt_target=tilt_target)


def channel_command(plate: Float[Array, "2"], control_matrix: Float[Array, "3 nc"]) -> Float[Array, " nc"]:
    """The robot's channel vector c (nc,) from the controller's plate-order
    output ``plate = (-u_y, -u_x)`` [rad], through its control matrix B
    (3, nc) [N m per channel unit].

    Each axis is driven by the channel
    :func:`flapjax.control.design.channel_axes` picks (the x axis, a +y
    moment, by the largest |B_yj|; the y axis, a -x moment, by the largest
    |B_xj|), with the sign s_i that makes its moment tilt the body the way
    u_i asks: ``c[j_i] = s_i u_i``, every other channel 0. Traceable (B may
    be a tracer); the plate robot's B (plate moments crossed) gives back
    ``plate`` itself."""
    b = jnp.asarray(control_matrix)
    u = jnp.stack([-plate[1], -plate[0]])
    toward = jnp.stack([b[1], -b[0]])  # (2, nc): moment that tilts the body toward +x, +y per channel unit
    j = jnp.argmax(jnp.abs(toward), axis=1)
    sign = jnp.sign(jnp.take_along_axis(toward, j[:, None], axis=1)[:, 0])
    onehot = (j[:, None] == jnp.arange(b.shape[1])[None, :]).astype(u.dtype)  # (2, nc)
    return (sign.astype(u.dtype) * u) @ onehot
