"""A multirotor flown through a plan of hovers joined by smooth moves.

A plan is a list of waypoints ``(position (3,) [m], move time [s], hold
time [s])`` (:func:`flight_plan`: hovers near the ground, near a wall and
in free air, and drag sweeps); :func:`reference_trajectory` joins them by
minimum-jerk moves, :func:`fly_plan` flies that reference in a
:class:`MultirotorWorld` (rigid-body backend, wrench controller, no sensor
noise) and returns what a lab would log, exactly. The sample hover logs of the identification are
such flights (:mod:`flapjax.sim.multirotor.synthetic_logs`).
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

__all__ = ["HOVER_OPTIONS", "flight_plan", "fly_plan", "reference_trajectory"]

#: Chain switches of a hover flight and of the hover model fitted to its log:
#: everything but wind (indoor flights).
HOVER_OPTIONS = rotor.ChainOptions(saturation=True, actuator=True, ground_effect=True, wall_effect=True, drag=True,
                                   wind=False, gusts=False, turbulence=False, command_noise=False)


def flight_plan(prof: rotor.RotorProfile, *, ground_z: float, wall_x: float, hold: float = 1.3,
                ) -> list[tuple[np.ndarray, float, float]]:
    """Waypoints ``(position (3,) [m], move time [s], hold time [s])`` of
    hovers near the ground at height ``ground_z`` [m] and near a vertical
    wall at ``x = wall_x`` [m], each held ``hold`` [s].

    Heading is yaw = pi (the arm points away from the wall). Rotor heights
    ``h / R`` from 0.85 to 6 and free air; nearest-rotor wall distances
    ``d / R`` from 1.15 to 6 at 1.2 m height (free of ground effect), so the
    fade window of the wall model is crossed; free-air sweeps along x, y and
    z at two speeds for the drag. Moves between hovers take ``2 s/m`` (peak
    speed about 0.9 m/s, at least 0.8 s). The last part repeats a few
    conditions (the held-out validation segment).
    """
    radius = float(np.mean(np.asarray(prof.radius)))
    rot = np.diag([-1.0, -1.0, 1.0])
    reach = float(np.max((np.asarray(prof.positions) @ rot.T)[:, 0]))  # nearest rotor ahead of the CoM (+x)
    g0, wall = ground_z, wall_x
    high = g0 + 1.2
    x_free = wall - 1.6
    base = np.array([x_free, 0.0, high])
    plan: list[tuple[np.ndarray, float, float]] = [(base, 0.0, 1.0)]

    def go(target, t_hold=hold, t_move=None):
        dist = float(np.linalg.norm(np.asarray(target) - plan[-1][0]))
        plan.append((np.asarray(target, dtype=float), max(0.8, 2.0 * dist) if t_move is None else t_move, t_hold))

    ground = lambda h: np.array([x_free, 0.0, g0 + h * radius])  # noqa: E731
    near_wall = lambda d: np.array([wall - reach - d * radius, 0.0, high])  # noqa: E731
    for h in (6.0, 3.0, 2.0, 1.5, 1.2, 1.0, 0.85):
        go(ground(h))
    go(base, 0.5)
    for d in (6.0, 4.5, 3.6, 3.1, 2.6, 2.2, 1.8, 1.5, 1.3, 1.15):
        go(near_wall(d))
    go(base, 0.5)
    for axis, reach_m in ((0, -1.0), (1, 1.0), (2, -0.8)):  # drag sweeps, away from the wall and the ground
        for t in (1.8, 1.2):
            off = np.zeros(3)
            off[axis] = reach_m
            go(base + off, 0.3, t)
            go(base, 0.3, t)
    for target in (ground(1.1), ground(2.5), base, near_wall(2.4), near_wall(1.4), near_wall(3.3), base):
        go(target)
    return plan


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
