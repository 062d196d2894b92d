"""Can this airframe fly? Eager checks on a profile's concrete values.

:func:`check_feasible` refuses airframes that pass every per-field check yet
cannot hover or describe no physical body (docs/physics.md, Multirotor
chain): the rotors' upward thrust at full throttle must exceed the weight
(a thrust direction able to oppose gravity, thrust-to-weight > 1), no two
rotors may sit at one point, and the mass and inertia must be plausible for
the airframe's size (radius of gyration ``sqrt(J_k / m)`` between
1/100 and 10 times the rotor reach). Deliberate experiments opt out with
``RotorProfile(..., allow_infeasible=True)``.

:func:`health_bounds` gives the speed and body-rate bounds beyond which a
world's state is no longer physical for this airframe (the worlds' health
check, :mod:`flapjax.sim.multirotor.world`).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from flapjax.math import GRAVITY
from flapjax.validation import ConfigError

#: Two rotor centres closer than this [m] count as one point.
MIN_ROTOR_SPACING = 1e-3
#: Plausible radius of gyration, as a fraction of the rotor reach [-].
GYRATION_RANGE = (1e-2, 10.0)
#: Speed of sound [m/s]: no part of the airframe moves faster through air.
SPEED_OF_SOUND = 343.0

_OPT_OUT = "(pass allow_infeasible=True for a deliberate experiment)"


def upward_thrust(axes: np.ndarray, thrust_max: np.ndarray) -> float:
    """Largest thrust [N] along body +z the rotors make at full throttle
    (rotors pointing down contribute nothing: they would idle)."""
    return float(np.sum(thrust_max * np.clip(axes[:, 2], 0.0, None)))


def reach(positions: np.ndarray, radius: np.ndarray) -> float:
    """Distance [m] from the CoM to the farthest rotor tip."""
    return float(np.max(np.linalg.norm(positions, axis=1) + radius))


def check_feasible(v: Mapping[str, np.ndarray]) -> None:
    """Raise :class:`~flapjax.validation.ConfigError` unless the validated
    profile values ``v`` describe an airframe that can hover."""
    weight = float(v["mass"]) * GRAVITY
    up = upward_thrust(v["axes"], v["thrust_max"])
    if up <= 1e-9 * float(np.sum(v["thrust_max"])):
        raise ConfigError(
            f"axes: no rotor thrusts upward (body +z), so the thrust cannot oppose gravity; "
            f"axes z-components {np.round(v['axes'][:, 2], 6).tolist()} must include some > 0 {_OPT_OUT}")
    if up <= weight:
        raise ConfigError(
            f"mass: {float(v['mass']):g} kg weighs {weight:.4g} N, more than the rotors' upward thrust at "
            f"full throttle {up:.4g} N (thrust-to-weight {up / weight:.3g}, must be > 1) {_OPT_OUT}")
    pos = v["positions"]
    n = pos.shape[0]
    if n > 1:
        d = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
        d[np.diag_indices(n)] = np.inf
        i, j = np.unravel_index(int(np.argmin(d)), d.shape)
        if d[i, j] < MIN_ROTOR_SPACING:
            i, j = sorted((int(i), int(j)))
            raise ConfigError(
                f"positions: rotors {i} and {j} are at the same point {pos[i].tolist()} (centres must be "
                f">= {MIN_ROTOR_SPACING:g} m apart, got {d[i, j]:.3g} m) {_OPT_OUT}")
    size = reach(pos, v["radius"])
    gyration = np.sqrt(v["inertia"] / float(v["mass"]))
    lo, hi = GYRATION_RANGE[0] * size, GYRATION_RANGE[1] * size
    bad = np.flatnonzero((gyration < lo) | (gyration > hi))
    if bad.size:
        k = int(bad[0])
        raise ConfigError(
            f"inertia: {v['inertia'].tolist()} kg m^2 on {float(v['mass']):g} kg gives a radius of gyration "
            f"{gyration[k]:.3g} m about body {'xyz'[k]}, implausible for an airframe reaching {size:.3g} m "
            f"(allowed [{lo:.3g}, {hi:.3g}] m) {_OPT_OUT}")


def health_bounds(positions, radius, thrust_max, mass, *, box: float) -> tuple[float, float]:
    """``(speed_bound [m/s], rate_bound [rad/s])`` of a healthy world.

    Speed: what full thrust plus gravity reaches across the ``box`` [m]
    (``sqrt(2 a_max box)``, ``a_max = sum T_max / m + g``), at least the
    speed of sound's tenth so a heavy airframe may still fall. Body rate:
    the rate at which the rotor tips would move at the speed of sound.
    """
    a_max = float(np.sum(thrust_max)) / float(mass) + GRAVITY
    speed = max(float(np.sqrt(2.0 * a_max * box)), 0.1 * SPEED_OF_SOUND)
    return speed, SPEED_OF_SOUND / reach(np.asarray(positions), np.asarray(radius))
