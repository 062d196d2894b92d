"""Closed-loop hover flights of a batch of worlds, and their cycle means.

:func:`fly_batch` flies one world per plate-command offset under the hover
controller (:func:`flapjax.sim.flapper.hover_rollout`), with a step of that
offset; :func:`cycle_means` smooths the records over one wingbeat. The
validation studies of ``flapjax.identify`` fly the per-wing robot and the
identified averaged model through them and compare the cycle means.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.sim import flapper as fl

__all__ = ["cycle_means", "fly_batch"]


@eqx.filter_jit
def fly_batch(robot, params, gains, target, starts, offsets, n_steps: int, record_every: int, step_start: float,
              step_length: float, hover_frequency: float | None = None, gravity: float | None = None):
    """Fly one world per row of ``offsets`` (n, nc) (a command offset from
    ``step_start`` for ``step_length`` [s]) from ``starts`` ((n, 3) or one
    (3,) [m], on the periodic orbit for the per-wing model, the controller's
    estimate starting at rest and level there) for ``n_steps`` under the hover
    controller (:func:`flapjax.sim.flapper.hover_rollout`, ``target`` (3,) [m],
    ``hover_frequency`` [Hz] and ``gravity`` [m/s^2] default the params').

    Returns whether each world stayed finite (n,), and one snapshot of the
    first step of every block of ``record_every`` steps (pose before it, its command).
    """
    def one(p, o):
        state = fl.init_state(robot, params, position=p)
        prior = fl.BasePose(position=p, velocity=jnp.zeros_like(p), rot_world_body=jnp.eye(3, dtype=p.dtype),
                            w_body=jnp.zeros_like(p))
        final, rec = fl.hover_rollout(robot, params, state, n_steps, gains=gains, target=target,
                                      record_every=record_every, checkpoint=False, hover_frequency=hover_frequency,
                                      gravity=gravity, record="first", prior=prior,
                                      plate_step=fl.PlateStep(offset=o, start=step_start, length=step_length))
        return final.healthy, rec

    return jax.vmap(one, in_axes=(0 if starts.ndim == 2 else None, 0))(starts, offsets)


def cycle_means(records: fl.HoverRecord, *, hover_frequency: float, dt_record: float) -> tuple[np.ndarray, dict]:
    """Moving averages over one wingbeat ``1 / f_h`` of the recorded position
    and tilt (leading axes: flights, records), centred; returns the times of
    the window centres [s] and ``{"position": (n, k, 3), "tilt": (n, k, 2)}``."""
    width = max(1, int(round(1.0 / (hover_frequency * dt_record))))
    kernel = np.ones(width) / width

    def smooth(x):
        return np.apply_along_axis(lambda v: np.convolve(v, kernel, mode="valid"), 1, np.asarray(x))

    n = np.asarray(records.position).shape[1]
    t = (np.arange(n - width + 1) + 0.5 * (width - 1)) * dt_record
    return t, {"position": smooth(records.position), "tilt": smooth(records.tilt)}
