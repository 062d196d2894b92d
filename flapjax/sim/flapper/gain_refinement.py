"""Hover gains refined by gradient through per-wing free flight.

:mod:`flapjax.control.design` designs the gains on the linear hover model;
this module, which runs the simulator, improves them by differentiating
short MJX rollouts of the closed loop (the differentiable showcase).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.control.hover import HoverGains
from flapjax.math import quat_to_mat
from flapjax.sim.flapper.hover import BasePose, hover_rollout
from flapjax.sim.flapper.robot import default_params, make_robot
from flapjax.sim.flapper.state import init_state
from flapjax.validation import check_positive

#: The per-axis gains :func:`refine_gains` scales.
REFINED_GAINS = ("position_p", "position_d", "attitude_p", "attitude_d")
_TILT_SCALE = 0.02  # [rad] a tilt of this size costs as much as ...
_POSITION_SCALE = 0.01  # [m] ... a position error of this size


def _tilted_starts(robot, params, target, tilts):
    """(2 len(tilts), 4) start quaternions tilted about x then y, and the
    periodic-orbit start states at ``target`` for each."""
    quats = []
    for a in tilts:
        quats.append(jnp.array([np.cos(a / 2), np.sin(a / 2), 0.0, 0.0]))
        quats.append(jnp.array([np.cos(a / 2), 0.0, np.sin(a / 2), 0.0]))
    quats = jnp.stack(quats)
    starts = jax.jit(jax.vmap(lambda q: init_state(robot, params, position=target, quat=q, periodic=True)))(quats)
    return quats, starts


def refinement_loss(gains: HoverGains, *, duration: float = 0.15, tilts: tuple[float, ...] = (0.05, -0.05),
                    record_every: int = 10):
    """``(loss_fn, with_scale)``: ``loss_fn(log_scale)`` the mean over worlds
    started on the periodic orbit, tilted by ``tilts`` [rad] about x and y,
    of ``mean_t (|tilt|^2 / (0.02 rad)^2 + |p - p*|^2 / (0.01 m)^2)`` over
    ``duration`` [s]; ``log_scale`` (4, 2) the logarithms of the multipliers
    of :data:`REFINED_GAINS` per axis; ``with_scale(log_scale)`` the gains."""
    check_positive("duration", duration)
    robot = make_robot("free", "wing")
    params = default_params(robot, frequency=42.2213)
    target = jnp.array([0.0, 0.0, 0.5])
    n = int(round(duration / robot.dt)) // record_every * record_every
    quats, starts = _tilted_starts(robot, params, target, tilts)
    base = {k: jnp.broadcast_to(jnp.asarray(getattr(gains, k)), (2,)) for k in REFINED_GAINS}

    def with_scale(log_scale):
        return dataclasses.replace(gains, **{k: base[k] * jnp.exp(log_scale[i]) for i, k in enumerate(REFINED_GAINS)})

    def loss_fn(log_scale):
        g = with_scale(log_scale)

        def one(st, q):
            prior = BasePose(position=target, velocity=jnp.zeros(3), rot_world_body=quat_to_mat(q), w_body=jnp.zeros(3))
            _, rec = hover_rollout(robot, params, st, n, gains=g, target=target, record_every=record_every,
                                   checkpoint=True, prior=prior)
            tilt = jnp.sum(rec.tilt**2, axis=-1) / _TILT_SCALE**2
            pos = jnp.sum((rec.position - target) ** 2, axis=-1) / _POSITION_SCALE**2
            return jnp.mean(tilt + pos)

        return jnp.mean(jax.vmap(one)(starts, quats))

    return loss_fn, with_scale


def refine_gains(
    gains: HoverGains,
    *,
    iterations: int = 3,
    learning_rate: float = 0.05,
    duration: float = 0.15,
    tilts: tuple[float, ...] = (0.05, -0.05),
    record_every: int = 10,
) -> tuple[HoverGains, list[float]]:
    """Refine the per-axis position and attitude gains by gradient through
    short per-wing free-flight rollouts (MJX) with optax's Adam.

    The free parameters are the logarithms of gain multipliers (so every
    gain keeps its sign); the loss is :func:`refinement_loss`'s. Returns the
    refined gains and the loss before the first and after every update
    (``iterations + 1`` values).
    """
    import optax

    check_positive("iterations", iterations)
    check_positive("learning_rate", learning_rate)
    loss_fn, with_scale = refinement_loss(gains, duration=duration, tilts=tilts, record_every=record_every)
    value_and_grad = jax.jit(jax.value_and_grad(loss_fn))
    opt = optax.adam(learning_rate)
    log_scale = jnp.zeros((len(REFINED_GAINS), 2))
    opt_state = opt.init(log_scale)
    history = []
    for _ in range(iterations):
        value, grad = value_and_grad(log_scale)
        history.append(float(value))
        grad = jnp.where(jnp.isfinite(grad), grad, 0.0)
        updates, opt_state = opt.update(grad, opt_state)
        log_scale = optax.apply_updates(log_scale, updates)
    history.append(float(jax.jit(loss_fn)(log_scale)))
    refined = with_scale(log_scale)
    return dataclasses.replace(refined, **{k: np.asarray(getattr(refined, k)) for k in REFINED_GAINS}), history
