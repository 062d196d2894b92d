"""Normal-force and centre-of-pressure coefficients (seed section 5).

Pluggable: any :class:`CoefficientModel` with ``normal(alpha)`` (C_N) and
``centre_of_pressure(alpha)`` (d_cp, fraction of the local chord from the
leading edge) can be passed in :class:`~flapjax.aero.AeroOptions`. The fitted
constants are array leaves, so they can be identified by gradient.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.validation import check_finite

Scalar = Float[Array, ""]


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


class CoefficientModel(eqx.Module):
    """Interface: ``normal(alpha) -> C_N`` and ``centre_of_pressure(alpha) -> d_cp``."""

    def normal(self, alpha: Scalar) -> Scalar:  # pragma: no cover - interface
        raise NotImplementedError

    def centre_of_pressure(self, alpha: Scalar) -> Scalar:  # pragma: no cover - interface
        raise NotImplementedError


class WhitneyWood(CoefficientModel):
    """Whitney & Wood (J. Fluid Mech. 2010) fits as used by FlapSim and Flappy.

    ``C_N = a1 sin(2a) cos(a) + a2 sin(a) - a3 cos(2a) sin(a)`` (odd in ``a``),
    ``d_cp = b0 - b1 cos(a) - b3 cos(3a) - b5 cos(5a)`` (even in ``a``).

    Attributes:
      normal_coefficients: (3,) a1, a2, a3 [-]; default (1.8, 1.95, 1.5).
      cop_coefficients: (4,) b0, b1, b3, b5 [-]; default (0.46, 0.332, 0.037, 0.013).
    """

    normal_coefficients: Float[Array, "3"] = eqx.field(converter=_as_array, default=(1.8, 1.95, 1.5))
    cop_coefficients: Float[Array, "4"] = eqx.field(
        converter=_as_array, default=(0.46, 0.332, 0.037, 0.013)
    )

    def __check_init__(self):
        check_finite("WhitneyWood.normal_coefficients", self.normal_coefficients)
        check_finite("WhitneyWood.cop_coefficients", self.cop_coefficients)

    def normal(self, alpha: Scalar) -> Scalar:
        a1, a2, a3 = self.normal_coefficients
        return a1 * jnp.sin(2 * alpha) * jnp.cos(alpha) + a2 * jnp.sin(alpha) - a3 * jnp.cos(2 * alpha) * jnp.sin(alpha)

    def centre_of_pressure(self, alpha: Scalar) -> Scalar:
        b0, b1, b3, b5 = self.cop_coefficients
        return b0 - b1 * jnp.cos(alpha) - b3 * jnp.cos(3 * alpha) - b5 * jnp.cos(5 * alpha)


class Dickinson1999(CoefficientModel):
    """Dickinson, Lehmann & Sane (Science 284:1954, 1999) robofly fits.

    With ``a`` in degrees on [0, 90]:
    ``C_L = 0.225 + 1.58 sin(2.13 a - 7.20)``,
    ``C_D = 1.92 - 1.55 cos(2.04 a - 9.82)`` (arguments in degrees),
    ``C_N = C_L cos a + C_D sin a``.

    The fit covers one quadrant. Any ``alpha`` is first reduced to the acute
    angle between chord line and flow, ``a = |asin(sin alpha)|`` (a flat plate
    at 180 deg - a sees the same flow), and C_N takes the sign of
    ``sin(alpha)`` so that C_N stays odd like the default fit. The fit does
    not vanish at ``a = 0`` (C_L = 0.0270, C_N(0+) = 0.0270), so this odd
    extension jumps by 0.054 where the flow crosses the chord line
    (``alpha`` = 0 or pi): a step of about 2 % of C_N at 45 deg, which
    gradients do not see. The default :class:`WhitneyWood` fit is smooth
    there. The centre of pressure uses the Whitney & Wood ``d_cp``, which the
    1999 paper does not fit.
    """

    cop: WhitneyWood = eqx.field(default_factory=WhitneyWood)

    def normal(self, alpha: Scalar) -> Scalar:
        sin_a = jnp.sin(alpha)
        acute = jnp.arcsin(jnp.clip(jnp.abs(sin_a), 0.0, 1.0 - 1e-12))
        deg = jnp.rad2deg(acute)
        c_lift = 0.225 + 1.58 * jnp.sin(jnp.deg2rad(2.13 * deg - 7.20))
        c_drag = 1.92 - 1.55 * jnp.cos(jnp.deg2rad(2.04 * deg - 9.82))
        c_normal = c_lift * jnp.cos(acute) + c_drag * jnp.sin(acute)
        return jnp.sign(sin_a) * c_normal

    def centre_of_pressure(self, alpha: Scalar) -> Scalar:
        return self.cop.centre_of_pressure(alpha)
