"""Is a flapper world still a result? The divergence guard's check, with reasons.

:func:`health` gives one world's health code after a step (0: healthy,
else the OR of the :data:`HEALTH_BITS` that apply), like the multirotor's
(:func:`flapjax.sim.multirotor.step.health`): a world is unhealthy when

- its new state (``qpos``, ``qvel``) is non-finite;
- its base body moves faster than :func:`speed_bound` or turns faster than
  :func:`rate_bound` (implausible for the airframe, long before non-finite);
- the aerodynamic force applied this step is non-finite or beyond
  :func:`force_bound`: :data:`FORCE_MULTIPLE` times the larger of the
  robot's weight and the cycle-averaged lift ``k_f f^2`` at the commanded
  frequency (a wing's instantaneous force peaks at a few times its cycle
  mean; a ``lift_scale`` of inf or 1e6 is far beyond);
- a parameter that scales the physics is non-finite (``lift_scale = inf``;
  see :func:`scaled_parameters`: the clip limits may be inf, meaning no clip).

:func:`guard` is the step's stage 5 (:mod:`flapjax.sim.flapper.step`): it
freezes nothing itself, it says whether to keep the new state and latches
the code in :attr:`FlapperState.health`. :func:`describe_health` and
:func:`count_reasons` put codes into words where results are reported.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

#: Bits of :func:`health` (0 is healthy).
NON_FINITE_STATE, TOO_FAST, SPINNING, FORCE_BEYOND_WING, NON_FINITE_PARAMS = 1, 2, 4, 8, 16
HEALTH_BITS = {NON_FINITE_STATE: "non-finite state", TOO_FAST: "base speed beyond the airframe's bound",
               SPINNING: "body rate beyond the airframe's bound",
               FORCE_BEYOND_WING: "aerodynamic force non-finite or beyond what the wings can make",
               NON_FINITE_PARAMS: "non-finite aerodynamic scale, stroke or averaged-model parameter"}
#: Instantaneous aerodynamic force allowed, in multiples of max(weight, k_f f^2) [-].
FORCE_MULTIPLE = 10.0
#: Speed of sound in air at 20 C [m/s]: bounds speeds and wing-tip speeds.
SPEED_OF_SOUND = 343.0
#: Distance [m] over which the speed bound lets the largest force accelerate the robot.
BOX = 100.0


def robot_weight(robot) -> Float[Array, ""]:
    """() m g of the whole robot [N] (every body's mass, the model's gravity)."""
    m = robot.model
    return jnp.sum(m.body_mass) * jnp.linalg.norm(m.opt.gravity)


def force_bound(robot, params, frequency: Float[Array, ""]) -> Float[Array, ""]:
    """() largest plausible aerodynamic force [N] at ``frequency`` [Hz]:
    :data:`FORCE_MULTIPLE` x max(m g, k_f f^2), ``k_f`` the cycle-averaged
    lift coefficient of ``params.averaged`` [N/Hz^2]."""
    k_f = jnp.abs(params.averaged.lift_coefficient)
    return FORCE_MULTIPLE * jnp.maximum(robot_weight(robot), k_f * frequency**2)


def speed_bound(robot, params, frequency: Float[Array, ""]) -> Float[Array, ""]:
    """() largest plausible base speed [m/s]: what :func:`force_bound` plus
    gravity reaches across :data:`BOX`, ``sqrt(2 a BOX)``, at least a tenth of
    the speed of sound (a robot may still fall)."""
    weight = robot_weight(robot)
    accel = (force_bound(robot, params, frequency) + weight) / (weight / jnp.linalg.norm(robot.model.opt.gravity))
    return jnp.maximum(jnp.sqrt(2.0 * accel * BOX), 0.1 * SPEED_OF_SOUND)


def rate_bound(robot) -> Float[Array, ""]:
    """() largest plausible body rate [rad/s]: the rate at which a wing tip
    (span R from the base) would move at the speed of sound."""
    return SPEED_OF_SOUND / jnp.abs(robot.wing.geometry.span)


def scaled_parameters(params) -> tuple:
    """The parameters that must be finite in a healthy world: the per-wing
    model's scales (``lift_scale``, ``moment_scale``, ``rotational_damping``),
    the stroke schedule, the plate angles and the averaged model."""
    aero = params.aero
    return (aero.lift_scale, aero.moment_scale, aero.rotational_damping, params.stroke, params.plate,
            params.averaged)


def _all_finite(tree) -> Bool[Array, ""]:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree) if eqx.is_inexact_array(x)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.ones((), bool)


def health(robot, params, qpos: Float[Array, " nq"], qvel: Float[Array, " nv"], v_com: Float[Array, "3"],
           w_body: Float[Array, "3"], force_world: Float[Array, "3"], frequency: Float[Array, ""]) -> Int[Array, ""]:
    """() health code of one world after a step: 0 when healthy, else the OR
    of the :data:`HEALTH_BITS` that apply. ``qpos``/``qvel``: the new state;
    ``v_com`` (3,) [m/s] and ``w_body`` (3,) [rad/s]: the base's motion the
    step started from; ``force_world`` (3,) the aerodynamic force it applied
    [N]; ``frequency`` the commanded flapping frequency [Hz]."""
    f_sq = jnp.sum(force_world * force_world)
    bits = [
        (~(jnp.all(jnp.isfinite(qpos)) & jnp.all(jnp.isfinite(qvel))), NON_FINITE_STATE),
        (~(jnp.sum(v_com * v_com) <= speed_bound(robot, params, frequency) ** 2), TOO_FAST),
        (~(jnp.sum(w_body * w_body) <= rate_bound(robot) ** 2), SPINNING),
        (~(f_sq <= force_bound(robot, params, frequency) ** 2), FORCE_BEYOND_WING),  # NaN fails too
        (~_all_finite(scaled_parameters(params)), NON_FINITE_PARAMS),
    ]
    code = jnp.zeros((), jnp.int32)
    for flag, bit in bits:
        code = code | jnp.where(flag, bit, 0).astype(jnp.int32)
    return code


def guard(robot, params, state, d_new, base, force_world, frequency) -> tuple[Bool[Array, ""], Int[Array, ""] | None]:
    """Stage 5 of a step: ``(healthy, health)`` of the world after it.
    ``healthy`` is False once any step was unhealthy (the step then keeps
    the last healthy state); ``health`` ORs this step's code into
    ``state.health`` (None stays None: a state built without the field)."""
    code = health(robot, params, d_new.qpos, d_new.qvel, base.v_com, base.w_body, force_world, frequency)
    healthy = state.healthy & (code == 0)
    return healthy, None if state.health is None else state.health | code


def describe_health(code: int) -> str:
    """The reasons a :func:`health` code stands for, in words ("healthy" for 0)."""
    code = int(code)
    return "healthy" if code == 0 else ", ".join(text for bit, text in HEALTH_BITS.items() if code & bit)


def count_reasons(codes) -> dict[str, int]:
    """How many worlds of ``codes`` (n,) each reason holds (a world may
    count under several), in :data:`HEALTH_BITS` order; healthy worlds are
    not counted."""
    codes = np.asarray(codes, dtype=np.int64).ravel()
    counts = {text: int(np.sum((codes & bit) != 0)) for bit, text in HEALTH_BITS.items()}
    return {text: n for text, n in counts.items() if n}

