"""Stroke schedule: ``psi(t) = d A sin(2 pi f t + phi0)`` per wing (seed section 1).

The phase is carried in *cycles* and kept in [0, 1): with a constant
frequency it is ``frac(f dt k)`` from the integer step counter ``k`` (no
float32 drift of ``d.time``); a controller that changes the frequency adds the
accumulated difference ``frac(sum (f_k - f) dt)`` as a separate wrapped
offset, so the constant-frequency part stays exact.

With flapjax's mirrored wing frames the stroke joint angle *is* the seed's
``psi`` for both wings (the right stroke hinge turns about ``-z``), so a
mirror-symmetric flap is ``direction = (+1, +1)``.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from flapjax.validation import ConfigError, as_float_array, check_positive, is_traced

Scalar = Float[Array, ""]


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


class StrokeSchedule(eqx.Module):
    """Sinusoidal stroke of both wings.

    Attributes:
      frequency: () f, flapping frequency [Hz] (>= 0).
      amplitude: () A, stroke amplitude [rad] (>= 0; default 1.5).
      phase: () phi0, phase at t = 0 [rad].
      direction: (2,) d of the (left, right) wing, each +1 or -1 [-].
    """

    frequency: Scalar = eqx.field(converter=_as_array)
    amplitude: Scalar = eqx.field(converter=_as_array, default=1.5)
    phase: Scalar = eqx.field(converter=_as_array, default=0.0)
    direction: Float[Array, "2"] = eqx.field(converter=_as_array, default=(1.0, 1.0))

    def __check_init__(self):
        check_positive("StrokeSchedule.frequency", self.frequency, allow_zero=True)
        check_positive("StrokeSchedule.amplitude", self.amplitude, allow_zero=True)
        if jnp.shape(self.direction)[-1:] != (2,):
            raise ConfigError(f"StrokeSchedule.direction: expected shape (2,), got shape {jnp.shape(self.direction)}")
        if not is_traced(self.direction):
            d = as_float_array("StrokeSchedule.direction", self.direction)
            if not np.all(np.abs(np.abs(d) - 1.0) == 0.0):
                raise ConfigError(f"StrokeSchedule.direction: each entry must be +1 or -1, got {d.tolist()}")


def phase_cycles(frequency: Scalar, step: Int[Array, ""], dt: float, offset: Scalar = 0.0) -> Scalar:
    """Stroke phase in cycles, in [0, 1): ``frac(f dt k + offset)``.

    Args:
      frequency: () f [Hz].
      step: () integer step counter k [-].
      dt: timestep [s] (static).
      offset: () accumulated phase correction [cycles].
    """
    # Wrap f*dt first (exact for the products that matter) to keep the argument small.
    per_step = frequency * dt
    cycles = per_step * step.astype(per_step.dtype)
    return jnp.mod(jnp.mod(cycles, 1.0) + offset, 1.0)


def advance_offset(offset: Scalar, frequency_command: Scalar, frequency: Scalar, dt: float) -> Scalar:
    """Accumulate the phase difference of a commanded frequency [cycles], wrapped."""
    return jnp.mod(offset + (frequency_command - frequency) * dt, 1.0)


def stroke_reference(
    schedule: StrokeSchedule,
    cycles: Scalar,
    frequency: Scalar | None = None,
    *,
    bias: Float[Array, "2"] | None = None,
    amplitude_scale: Float[Array, "2"] | None = None,
) -> tuple[Float[Array, "2"], Float[Array, "2"], Float[Array, "2"]]:
    """Reference stroke of both wings at phase ``cycles``:
    ``psi = d A k sin(2 pi cycles + phi0) + b``.

    Args:
      schedule: amplitude, phase offset and per-wing direction.
      cycles: () phase 2 pi f t / (2 pi) wrapped to [0, 1) [cycles].
      frequency: () instantaneous frequency for the rates [Hz]; defaults to
        ``schedule.frequency``.
      bias: (2,) stroke offset b of the (left, right) wing [rad] (a stroke-bias
        channel); None: no offset (and no operation).
      amplitude_scale: (2,) factor k on the amplitude of the (left, right)
        wing [-] (an amplitude-difference channel: ``(1 + u, 1 - u)``);
        None: 1 (and no operation).

    Returns:
      ``(psi, psi_dot, psi_ddot)``, each (2,) for (left, right) [rad],
      [rad/s], [rad/s^2].
    """
    f = schedule.frequency if frequency is None else frequency
    omega = 2.0 * jnp.pi * f
    arg = 2.0 * jnp.pi * cycles + schedule.phase
    d_a = schedule.direction * schedule.amplitude
    if amplitude_scale is not None:
        d_a = d_a * amplitude_scale
    psi = d_a * jnp.sin(arg)
    if bias is not None:
        psi = psi + bias
    psi_dot = d_a * omega * jnp.cos(arg)
    psi_ddot = -d_a * omega**2 * jnp.sin(arg)
    return psi, psi_dot, psi_ddot


def servo_setpoint(
    psi_ref: Float[Array, "..."],
    psi_dot_ref: Float[Array, "..."],
    psi_ddot_ref: Float[Array, "..."],
    *,
    kp: Float[Array, "..."],
    kv: Float[Array, "..."],
    inertia: Scalar | float,
) -> Float[Array, "..."]:
    """Set point of a stroke position servo with velocity and inertia feed-forward.

    The servo applies ``kp (u - psi) - kv psi_dot`` (its velocity gain ``kv``
    is the joint damping, integrated implicitly). With the set point

        u = psi_ref + (kv psi_dot_ref + J psi_ddot_ref) / kp

    the torque is ``kp (psi_ref - psi) + kv (psi_dot_ref - psi_dot) +
    J psi_ddot_ref``: the reference is tracked with no phase lag from the
    damping and the joint's own inertia ``J`` is driven by feed-forward
    (docs/physics.md, Stroke schedule and servo).

    Args:
      psi_ref, psi_dot_ref, psi_ddot_ref: reference angle [rad], rate
        [rad/s] and acceleration [rad/s^2] (e.g. from :func:`stroke_reference`).
      kp: position gain [N m/rad]; kv: velocity gain [N m s/rad].
      inertia: J, the stroke joint's inertia [kg m^2].

    Returns:
      the servo set point u [rad], shaped like ``psi_ref``.
    """
    return psi_ref + (kv * psi_dot_ref + inertia * psi_ddot_ref) / kp
