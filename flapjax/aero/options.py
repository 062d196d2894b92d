"""Runtime options of the per-wing aerodynamic model (seed sections 2, 6, 7)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.aero.coefficients import CoefficientModel, WhitneyWood
from flapjax.validation import ConfigError, check_positive

Scalar = Float[Array, ""]


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


class AeroOptions(eqx.Module):
    """Scales, clips and coefficient model of the per-wing model.

    Every option given here is used; none is silently ignored.

    Attributes:
      lift_scale: () multiplies the normal force F_N [-] (> 0).
      moment_scale: () multiplies M_aero and M_rd [-] (>= 0).
      force_limit: () |F_N| clip after scaling [N] (> 0; seed default 5 N).
      damping_limit: () |M_rd| clip after scaling [N m] (> 0; default 0.05).
      rotational_damping: () C_rd of M_rd = -(1/8) rho |th'| th' C_rd R cbar^4 z_rd [-]
        (>= 0; default 5, Flappy's value).
      angular_velocity_limit: () clip on |omega_body| [rad/s] (> 0; default 5000).
      coefficients: the C_N(alpha), d_cp(alpha) model (default Whitney & Wood).
    """

    lift_scale: Scalar = eqx.field(converter=_as_array, default=1.0)
    moment_scale: Scalar = eqx.field(converter=_as_array, default=1.0)
    force_limit: Scalar = eqx.field(converter=_as_array, default=5.0)
    damping_limit: Scalar = eqx.field(converter=_as_array, default=0.05)
    rotational_damping: Scalar = eqx.field(converter=_as_array, default=5.0)
    angular_velocity_limit: Scalar = eqx.field(converter=_as_array, default=5000.0)
    coefficients: CoefficientModel = eqx.field(default_factory=WhitneyWood)

    def __check_init__(self):
        check_positive("AeroOptions.lift_scale", self.lift_scale)
        check_positive("AeroOptions.moment_scale", self.moment_scale, allow_zero=True)
        check_positive("AeroOptions.force_limit", self.force_limit)
        check_positive("AeroOptions.damping_limit", self.damping_limit)
        check_positive("AeroOptions.rotational_damping", self.rotational_damping, allow_zero=True)
        check_positive("AeroOptions.angular_velocity_limit", self.angular_velocity_limit)
        if not isinstance(self.coefficients, CoefficientModel):
            raise ConfigError(
                "AeroOptions.coefficients: must be a CoefficientModel (e.g. WhitneyWood(), Dickinson1999()), "
                f"got {type(self.coefficients).__name__}"
            )
