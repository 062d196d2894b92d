"""Passive feathering hinge of the flapping wing: spring, damper and smooth stops.

The linear spring ``-k_h theta`` and damper ``-b_h theta_dot`` are joint
properties that the bridge hands to MuJoCo; the stops are a pure torque added
on top (docs/physics.md, Feathering hinge):

    tau_stop = -k_s [sp(theta - theta_s) - sp(-theta - theta_s)],
    sp(x) = w log(1 + exp(x / w)),

zero well inside ``|theta| < theta_s``, a spring of stiffness ``k_s`` beyond,
odd in ``theta`` and smooth everywhere (no joint limits, so no constraint rows,
and reverse-mode gradients pass).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.validation import check_positive, check_range

Scalar = Float[Array, ""]


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


class FeatheringHinge(eqx.Module):
    """Passive feathering hinge of both wings.

    Attributes:
      stiffness: () torsional stiffness k_h [N m/rad].
      damping: () viscous damping b_h [N m s/rad].
      stop_angle: () theta_s, where the stops engage [rad].
      stop_stiffness: () k_s of the stops [N m/rad].
      stop_width: () w, smoothing width of the stops [rad].
    """

    stiffness: Scalar = eqx.field(converter=_as_array)
    damping: Scalar = eqx.field(converter=_as_array)
    stop_angle: Scalar = eqx.field(converter=_as_array)
    stop_stiffness: Scalar = eqx.field(converter=_as_array)
    stop_width: Scalar = eqx.field(converter=_as_array)

    def __check_init__(self):
        check_positive("FeatheringHinge.stiffness", self.stiffness, allow_zero=True)
        check_positive("FeatheringHinge.damping", self.damping, allow_zero=True)
        check_range("FeatheringHinge.stop_angle", self.stop_angle, 0.0, float(np.pi))
        check_positive("FeatheringHinge.stop_stiffness", self.stop_stiffness, allow_zero=True)
        check_positive("FeatheringHinge.stop_width", self.stop_width)


def stop_torque(hinge: FeatheringHinge, theta: Float[Array, "..."]) -> Float[Array, "..."]:
    """Smooth feathering-stop torque at hinge angle ``theta`` [rad] -> [N m]
    (same shape as ``theta``)."""
    w = hinge.stop_width

    def sp(x):
        return w * jax.nn.softplus(x / w)

    return -hinge.stop_stiffness * (sp(theta - hinge.stop_angle) - sp(-theta - hinge.stop_angle))
