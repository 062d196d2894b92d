"""Body drag and world wind (chain step 6; docs/physics.md, Drag and wind).

Drag acts in the body frame on the velocity of the body relative to the air,
``f_B = -(D1 v + D2 |v| v)`` with diagonal ``D1, D2 >= 0``, so its power
``f_B . v`` is never positive (drag never adds energy).

Wind is a world-frame force: a constant part, a sum of 1-cos gusts
``A_k / 2 (1 - cos(2 pi (t - t_k) / T_k))`` for ``t_k <= t <= t_k + T_k``, and
Dryden-like coloured turbulence, an Ornstein–Uhlenbeck process per axis with
stationary standard deviation ``sigma`` and correlation time ``tau_c``,
advanced with its exact discretization::

    x <- x exp(-dt / tau_c) + sigma sqrt(1 - exp(-2 dt / tau_c)) xi,  xi ~ N(0, 1)

driven by standard normal draws from the world's own turbulence stream. A
constant air velocity (world frame) may also enter the drag
(``air_velocity``); it is zero by default.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from flapjax.math import safe_norm
from flapjax.validation import ConfigError, as_float_array, check_positive, check_range, is_traced

Scalar = Float[Array, ""]


class DragParams(eqx.Module):
    """Body drag coefficients.

    Attributes:
      linear: (3,) D1, diagonal linear drag per body axis [N s/m].
      quadratic: (3,) D2, diagonal quadratic drag per body axis [N s^2/m^2].
    """

    linear: Float[Array, "3"]
    quadratic: Float[Array, "3"]

    def __init__(self, linear=(0.25, 0.25, 0.35), quadratic=(0.05, 0.05, 0.08)):
        if not (is_traced(linear) or is_traced(quadratic)):
            as_float_array("linear", linear, (3,))
            as_float_array("quadratic", quadratic, (3,))
            check_range("linear", linear, 0.0, None)
            check_range("quadratic", quadratic, 0.0, None)
        self.linear = jnp.asarray(linear, dtype=float)
        self.quadratic = jnp.asarray(quadratic, dtype=float)


class WindParams(eqx.Module):
    """World-frame wind.

    Attributes:
      constant: (3,) steady wind force [N].
      gust_amplitude: (k, 3) peak force of each 1-cos gust [N].
      gust_start: (k,) start time of each gust [s].
      gust_duration: (k,) duration of each gust [s].
      turbulence_std: (3,) stationary standard deviation of the OU force [N].
      turbulence_time: (3,) OU correlation time tau_c [s].
      air_velocity: (3,) steady air velocity entering the drag [m/s].
    """

    constant: Float[Array, "3"]
    gust_amplitude: Float[Array, "k 3"]
    gust_start: Float[Array, " k"]
    gust_duration: Float[Array, " k"]
    turbulence_std: Float[Array, "3"]
    turbulence_time: Float[Array, "3"]
    air_velocity: Float[Array, "3"]

    def __init__(self, constant=(0.0, 0.0, 0.0), gust_amplitude=None, gust_start=None, gust_duration=None,
                 turbulence_std=(0.0, 0.0, 0.0), turbulence_time=(0.5, 0.5, 0.5), air_velocity=(0.0, 0.0, 0.0)):
        if gust_amplitude is None:
            gust_amplitude, gust_start, gust_duration = jnp.zeros((0, 3)), jnp.zeros((0,)), jnp.zeros((0,))
        vals = (constant, gust_amplitude, gust_start, gust_duration, turbulence_std, turbulence_time, air_velocity)
        if not any(is_traced(v) for v in vals):
            as_float_array("constant", constant, (3,))
            amp = as_float_array("gust_amplitude", gust_amplitude, (None, 3))
            k = amp.shape[0]
            if gust_start is None or gust_duration is None:
                raise ConfigError("gust_start, gust_duration: required when gust_amplitude is given")
            as_float_array("gust_start", gust_start, (k,))
            as_float_array("gust_duration", gust_duration, (k,))
            check_positive("gust_duration", gust_duration)
            as_float_array("turbulence_std", turbulence_std, (3,))
            check_range("turbulence_std", turbulence_std, 0.0, None)
            as_float_array("turbulence_time", turbulence_time, (3,))
            check_positive("turbulence_time", turbulence_time)
            as_float_array("air_velocity", air_velocity, (3,))
        self.constant = jnp.asarray(constant, dtype=float)
        self.gust_amplitude = jnp.asarray(gust_amplitude, dtype=float)
        self.gust_start = jnp.asarray(gust_start, dtype=float)
        self.gust_duration = jnp.asarray(gust_duration, dtype=float)
        self.turbulence_std = jnp.asarray(turbulence_std, dtype=float)
        self.turbulence_time = jnp.asarray(turbulence_time, dtype=float)
        self.air_velocity = jnp.asarray(air_velocity, dtype=float)


class DisturbanceState(eqx.Module):
    """Evolving part of the wind.

    Attributes:
      turbulence: (3,) current OU turbulence force, world frame [N].
    """

    turbulence: Float[Array, "3"]

    @classmethod
    def zero(cls) -> "DisturbanceState":
        return cls(turbulence=jnp.zeros(3))

    @classmethod
    def stationary(cls, wind: WindParams, key: PRNGKeyArray) -> "DisturbanceState":
        """A draw from the stationary OU distribution N(0, sigma^2)."""
        return cls(turbulence=wind.turbulence_std * jax.random.normal(key, (3,), dtype=wind.turbulence_std.dtype))


def drag_force(params: DragParams, v_air_body: Float[Array, "3"]) -> Float[Array, "3"]:
    """Body-frame drag force (3,) [N] for body velocity relative to air (3,) [m/s]."""
    speed = safe_norm(v_air_body)
    return -(params.linear * v_air_body + params.quadratic * speed * v_air_body)


def gust_force(wind: WindParams, time: Scalar) -> Float[Array, "3"]:
    """Sum of the 1-cos gusts at ``time`` [s], world frame (3,) [N]."""
    phase = (time - wind.gust_start) / wind.gust_duration
    active = (phase >= 0.0) & (phase <= 1.0)
    shape = jnp.where(active, 0.5 * (1.0 - jnp.cos(2.0 * jnp.pi * phase)), 0.0)
    return jnp.sum(shape[:, None] * wind.gust_amplitude, axis=0)


def turbulence_step(wind: WindParams, state: DisturbanceState, xi: Float[Array, "3"], *, dt) -> DisturbanceState:
    """Exact OU update of the turbulence force over ``dt`` [s], driven by
    (3,) standard normal draws ``xi``."""
    decay = jnp.exp(-dt / wind.turbulence_time)
    # 1 - exp(-2 dt / tau) via expm1 keeps precision for dt << tau.
    spread = wind.turbulence_std * jnp.sqrt(-jnp.expm1(-2.0 * dt / wind.turbulence_time))
    return DisturbanceState(turbulence=decay * state.turbulence + spread * jnp.asarray(xi, state.turbulence.dtype))


def wind_force(wind: WindParams, state: DisturbanceState, time: Scalar, *, gusts: bool = True,
               turbulence: bool = True) -> Float[Array, "3"]:
    """Total world-frame wind force (3,) [N] at ``time`` [s]."""
    f = wind.constant
    if gusts:
        f = f + gust_force(wind, time)
    if turbulence:
        f = f + state.turbulence
    return f
