"""Can this airframe hold a hover? Checks beyond
:func:`flapjax.rotor.feasibility.check_feasible` on a profile's concrete
values (thrust direction, independent control of thrust and torques,
plausible thrust-to-weight and arm reach). Deliberate experiments opt out
with ``RotorProfile(..., allow_infeasible=True)``.
"""

from __future__ import annotations

import warnings
from typing import Mapping

import numpy as np

from flapjax.math import GRAVITY
from flapjax.validation import ConfigError

#: Highest thrust-to-weight ratio of a plausible airframe at full throttle [-].
MAX_THRUST_TO_WEIGHT = 50.0
#: Farthest end-effector or arm base from the centre of mass [m].
MAX_ARM_REACH = 10.0


class UnflyableWarning(UserWarning):
    """An airframe that cannot hold a hover with its reference controller."""


def check_flyable(v: Mapping[str, np.ndarray]) -> None:
    """Warn (:class:`UnflyableWarning`) about an airframe that passes
    :func:`~flapjax.rotor.feasibility.check_feasible` yet cannot hold a
    hover on its own: a rotor whose thrust points down (``axes[i, 2] < 0``),
    or rotors that cannot set the thrust and the three body torques
    independently (one rotor, all spins alike on coplanar rotors, a
    tricopter without a tilting rotor). Refuse (:class:`ConfigError`) a
    thrust-to-weight above :data:`MAX_THRUST_TO_WEIGHT` or an arm beyond
    :data:`MAX_ARM_REACH`. ``allow_infeasible=True`` skips both."""
    opt_out = "(pass allow_infeasible=True for a deliberate experiment)"
    ratio = float(np.sum(v["thrust_max"] * np.clip(v["axes"][:, 2], 0.0, None)) / (float(v["mass"]) * GRAVITY))
    if ratio > MAX_THRUST_TO_WEIGHT:
        raise ConfigError(f"thrust_max: thrust-to-weight {ratio:.3g} at full throttle, above "
                          f"{MAX_THRUST_TO_WEIGHT:g} for a plausible airframe; {opt_out}")
    for key in ("ee_position", "arm_base"):
        if float(np.linalg.norm(v[key])) > MAX_ARM_REACH:
            raise ConfigError(f"{key}: {v[key].tolist()} m is more than {MAX_ARM_REACH:g} m from the centre of "
                              f"mass; {opt_out}")
    down = np.flatnonzero(v["axes"][:, 2] < 0)
    if down.size:
        i = int(down[0])
        warnings.warn(f"axes[{i}]: the rotor's thrust points down ({v['axes'][i].tolist()}); it cannot help "
                      f"hold a hover {opt_out}", UnflyableWarning, stacklevel=3)
    moments = np.cross(v["positions"], v["axes"]) - (v["spins"] * v["torque_coeff"])[:, None] * v["axes"]
    b = np.concatenate([v["axes"][:, 2:3].T, moments.T], axis=0)  # thrust along z and the three torques
    if np.linalg.matrix_rank(b, tol=1e-9 * max(1.0, np.abs(b).max())) < 4:
        warnings.warn(f"rotors: {len(v['spins'])} rotor(s) with spins {v['spins'].tolist()} cannot set the thrust "
                      f"and the roll, pitch and yaw torques independently: the airframe cannot hold a hover "
                      f"{opt_out}", UnflyableWarning, stacklevel=3)
