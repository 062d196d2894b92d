"""Monte Carlo hover study: how many randomized starts settle at the target.

Worlds start around the hover point with random position, attitude, velocity
and body rates, fly the cycle-averaged model under
:func:`flapjax.control.hover.hover_command`, and count as settled when, over
the last ``settle_window`` seconds, the position stays within
``position_tolerance`` of the target and the tilt within ``tilt_tolerance``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from flapjax.math import quat_mul
from flapjax.sim import flapper as fl
from flapjax.validation import check_positive


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
    """Fly ``n_worlds`` randomized starts of the lumped averaged-model robot."""
    check_positive("n_worlds", n_worlds)
    check_positive("duration", duration)
    robot = fl.make_robot("lumped", "averaged", backend=backend, dtype=dtype)
    params = fl.default_params(robot)
    params = jax.tree.map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, params)
    target = jnp.asarray(target, dtype=dtype)
    offset, quat, velocity, rate = random_starts(key, n_worlds, **spreads)
    n_steps = int(round(duration / robot.dt)) // record_every * record_every
    n_late = max(1, int(round(settle_window / (robot.dt * record_every))))

    @jax.jit
    def run(offset, quat, velocity, rate):
        def one(o, q, v, w):
            st = fl.init_state(robot, params, position=(target + o).astype(dtype), quat=q.astype(dtype),
                               velocity=v.astype(dtype), angular_velocity=w.astype(dtype))
            _, rec = fl.hover_rollout(robot, params, st, n_steps, target=target, record_every=record_every)
            err = jnp.linalg.norm(rec.position - target, axis=-1)
            tilt = jnp.linalg.norm(rec.tilt, axis=-1)
            return err[-1], jnp.max(err[-n_late:]), jnp.max(tilt[-n_late:]), rec.healthy[-1]

        return jax.vmap(one)(offset, quat, velocity, rate)

    final, late_err, late_tilt, healthy = run(offset, quat, velocity, rate)
    settled = healthy & (late_err <= position_tolerance) & (late_tilt <= tilt_tolerance)
    return HoverStudy(settled=settled, final_position_error=final, max_late_position_error=late_err,
                      max_late_tilt=late_tilt, healthy=healthy, initial_offset=offset)
