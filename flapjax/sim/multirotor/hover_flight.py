"""A multirotor flown through a plan of hovers joined by smooth moves.

A plan is a list of waypoints ``(position (3,) [m], move time [s], hold
time [s])``: :func:`reference_trajectory` joins them by minimum-jerk moves,
:func:`fly_plan` flies that reference in a :class:`MultirotorWorld`
(rigid-body backend, wrench controller, no sensor noise) and returns what a
lab would log, exactly. The sample hover logs of the identification are
such flights (:mod:`flapjax.identify.multirotor.synthetic`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax import rotor
from flapjax import scene as sc
from flapjax.control.wrench import Reference
from flapjax.noise import NoiseParams
from flapjax.sim.multirotor.world import MultirotorWorld

__all__ = ["fly_plan", "reference_trajectory"]


def reference_trajectory(plan, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(T, 3) position, velocity, acceleration of minimum-jerk moves through
    the plan, sampled every ``dt`` [s]."""
    pos, vel, acc = [], [], []
    current = np.asarray(plan[0][0], dtype=float)
    for target, t_move, t_hold in plan:
        target = np.asarray(target, dtype=float)
        n_move = int(round(t_move / dt))
        if n_move:
            s = np.arange(n_move) * dt / t_move
            shape = 10 * s**3 - 15 * s**4 + 6 * s**5
            dshape = (30 * s**2 - 60 * s**3 + 30 * s**4) / t_move
            ddshape = (60 * s - 180 * s**2 + 120 * s**3) / t_move**2
            delta = target - current
            pos.append(current + shape[:, None] * delta)
            vel.append(dshape[:, None] * delta)
            acc.append(ddshape[:, None] * delta)
        n_hold = int(round(t_hold / dt))
        pos.append(np.tile(target, (n_hold, 1)))
        vel.append(np.zeros((n_hold, 3)))
        acc.append(np.zeros((n_hold, 3)))
        current = target
    return np.concatenate(pos), np.concatenate(vel), np.concatenate(acc)


def fly_plan(prof: rotor.RotorProfile, chain: rotor.ChainParams, plan, *, options: rotor.ChainOptions,
             scene: sc.Scene, yaw: float, dt: float = 0.005) -> dict[str, np.ndarray]:
    """Fly ``plan`` at heading ``yaw`` [rad] with the chain's coefficients
    ``chain`` and switches ``options`` in ``scene``, steps of ``dt`` [s].

    Returns the exact log quantities (float64 numpy): ``time`` (T,) [s],
    ``position`` (T, 3) [m], ``quat`` (T, 4), ``velocity`` (T, 3) [m/s]
    world frame, ``specific_force`` (T, 3) [m/s^2] body frame,
    ``thrust_command`` (T, n) [N], and ``touching`` / ``diverged`` (T,)
    flags.
    """
    world = MultirotorWorld(prof, options=options, dt=dt, backend="rigid", sensor_noise=False)
    params = eqx.tree_at(lambda q: (q.chain, q.noise), world.default_params(scene), (chain, NoiseParams()))
    pos, vel, acc = reference_trajectory(plan, dt)
    ref = Reference(position=jnp.asarray(pos), velocity=jnp.asarray(vel), acceleration=jnp.asarray(acc),
                    yaw=jnp.full((pos.shape[0],), yaw))
    state = world.reset(params, jax.random.key(0), jnp.asarray(pos[0]), yaw=yaw)
    run = jax.jit(lambda p, s, r: world.rollout(p, s, r, pos.shape[0], checkpoint=False))
    _, info = run(params, state, ref)
    return {
        "time": np.arange(pos.shape[0]) * dt,
        "position": np.asarray(info.position, dtype=float),
        "quat": np.asarray(info.quat, dtype=float),
        "velocity": np.asarray(info.velocity, dtype=float),
        "specific_force": np.asarray(info.wrench, dtype=float)[:, :3] / float(prof.mass),
        "thrust_command": np.asarray(info.thrust_command, dtype=float),
        "touching": np.asarray(info.touching),
        "diverged": np.asarray(info.diverged),
    }
