"""Reduced-order rotor actuator: thrust <-> normalized speed, lag, rate limit.

Chain step 3 (docs/physics.md, Actuator). The rotor state is the normalized
speed ``u = sqrt(T / T_max)`` in ``[0, 1]`` (thrust grows with speed
squared). Over one step ``dt`` the speed follows the exact solution of the
first-order lag ``tau du/dt = u_cmd - u`` (held command), and the change is
clipped symmetrically to ``+-r dt``:

    u <- u + clip((1 - exp(-dt / tau)) (u_cmd - u), -r dt, +r dt)
    T  = T_max u^2

At zero thrust the square root has an infinite slope; :func:`thrust_to_speed`
uses a gradient-safe square root whose derivative is 0 there (documented
choice: no gradient flows through a rotor commanded to exactly zero thrust).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.math import safe_sqrt
from flapjax.rotor.profile import RotorProfile


class ActuatorState(eqx.Module):
    """Rotor speeds of one robot.

    Attributes:
      speed: (n,) normalized rotor speed u = sqrt(T / T_max) [-].
    """

    speed: Float[Array, " n"]

    @classmethod
    def at_thrust(cls, prof: RotorProfile, thrust: Float[Array, " n"]) -> "ActuatorState":
        """The steady state that produces ``thrust`` (n,) [N]."""
        return cls(speed=thrust_to_speed(prof, jnp.broadcast_to(jnp.asarray(thrust, dtype=prof.thrust_max.dtype), prof.thrust_max.shape)))


def thrust_to_speed(prof: RotorProfile, thrust: Float[Array, " n"]) -> Float[Array, " n"]:
    """Normalized speed ``u = sqrt(T / T_max)`` [-]; 0 (zero gradient) for T <= 0."""
    return safe_sqrt(thrust / prof.thrust_max)


def speed_to_thrust(prof: RotorProfile, speed: Float[Array, " n"]) -> Float[Array, " n"]:
    """Thrust ``T = T_max u^2`` [N]."""
    return prof.thrust_max * speed * speed


def actuator_step(
    prof: RotorProfile,
    state: ActuatorState,
    thrust_command: Float[Array, " n"],
    *,
    dt: float | Float[Array, ""],
) -> tuple[ActuatorState, Float[Array, " n"]]:
    """Advance the rotor speeds by ``dt`` [s] toward ``thrust_command`` (n,) [N].

    Returns the next state and the thrust it produces (n,) [N].
    """
    u_cmd = thrust_to_speed(prof, thrust_command)
    alpha = -jnp.expm1(-dt / prof.time_constant)
    max_step = prof.rate_limit * dt
    du = jnp.clip(alpha * (u_cmd - state.speed), -max_step, max_step)
    speed = state.speed + du
    return ActuatorState(speed=speed), speed_to_thrust(prof, speed)
