"""Quasi-steady loads of one wing in closed form (seed sections 5-7).

``wing_loads`` maps the wing's kinematics and the body's motion to the normal
force F_N, the aerodynamic pitching moment M_aero, the centre of pressure
(``r_cp`` spanwise, ``c_cp`` chordwise) and the feathering damping M_rd.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from flapjax.aero.geometry import Wing
from flapjax.aero.kinematics import AffineVelocity, WingKinematics, affine_velocity
from flapjax.aero.options import AeroOptions
from flapjax.math import clip_norm, safe_atan2
from flapjax.validation import ConfigError

Scalar = Float[Array, ""]

# Below this value of int c U^2 dr [m^3/s^2] the wing is at rest relative to the
# air and the chordwise CoP falls back to its zero-speed limit.
_REST_EPS = 1e-30


class WingLoads(eqx.Module):
    """Loads of one wing in its aerodynamic frame (+X normal, +Y spanwise).

    Attributes:
      normal_force: () F_N after ``lift_scale`` and the force clip [N].
      normal_force_unclipped: () F_N after ``lift_scale``, before the clip [N].
      aero_moment: () M_aero about the feathering axis actually applied,
        ``-chord_cop * normal_force`` [N m]; equals the closed-form
        ``moment_scale * M_aero`` whenever the clip is inactive.
      chord_cop: () c_cp, chordwise CoP behind the leading edge [m].
      span_cop: () r_cp = R r33 / r22 [m].
      damping_moment: () M_rd after ``moment_scale`` and the clip [N m].
      alpha: () angle of attack at the representative point [rad].
      normal_coefficient: () C_N(alpha) [-].
      cop_fraction: () d_cp(alpha) [-].
      force_clipped: () True when the force clip is active.
      damping_clipped: () True when the damping clip is active.
      velocity: the affine velocity coefficients used.
    """

    normal_force: Scalar
    normal_force_unclipped: Scalar
    aero_moment: Scalar
    chord_cop: Scalar
    span_cop: Scalar
    damping_moment: Scalar
    alpha: Scalar
    normal_coefficient: Scalar
    cop_fraction: Scalar
    force_clipped: Bool[Array, ""]
    damping_clipped: Bool[Array, ""]
    velocity: AffineVelocity


def check_side(side) -> int:
    """Validate a wing side: +1 (left) or -1 (right); returns it as int."""
    try:
        ok = side in (1, -1)
    except Exception:  # arrays, tracers
        ok = False
    if not ok:
        raise ConfigError(f"side: must be +1 (left wing) or -1 (right wing), got {side!r}")
    return int(side)


def angle_of_attack(pitch: Scalar, in_plane: Scalar, out_of_plane: Scalar) -> Scalar:
    """alpha = theta + atan2(U_i*, U_o*) [rad] (continuous form; docs/physics.md, Angle of attack).

    Equals the seed's ``theta + sgn(U_i*) pi/2 - atan(U_o*/U_i*)`` whenever
    ``U_i* != 0`` and stays continuous through stroke reversal. At zero relative
    speed it returns ``theta`` with a finite gradient.
    """
    return pitch + safe_atan2(in_plane, out_of_plane)


def wing_loads(
    wing: Wing,
    kin: WingKinematics,
    *,
    v_body: Float[Array, "3"],
    w_body: Float[Array, "3"],
    side: int,
    options: AeroOptions | None = None,
) -> WingLoads:
    """Closed-form quasi-steady loads of one wing (seed sections 4-7).

    Args:
      wing: geometry, air density and shoulder geometry.
      kin: joint angles and rates of this wing.
      v_body: (3,) body linear velocity in the body frame [m/s].
      w_body: (3,) body angular velocity in the body frame [rad/s]; its norm is
        clipped to ``options.angular_velocity_limit``.
      side: +1 left wing, -1 right wing (static).
      options: scales, clips and the coefficient model (default ``AeroOptions()``).
    """
    s = check_side(side)
    geom = wing.geometry
    R, cbar = geom.span, geom.mean_chord
    options = AeroOptions() if options is None else options
    w_body = clip_norm(jnp.asarray(w_body), options.angular_velocity_limit)
    vel = affine_velocity(
        kin,
        jnp.asarray(v_body),
        w_body,
        side=s,
        shoulder_half_width=wing.shoulder_half_width,
        stroke_plane_offset=wing.stroke_plane_offset,
    )
    r_cp = geom.span_cop
    alpha = angle_of_attack(kin.pitch, vel.in_plane(r_cp), vel.out_of_plane(r_cp))
    c_n = options.coefficients.normal(alpha)
    d_cp = options.coefficients.centre_of_pressure(alpha)

    a0, a1, a2 = vel.speed_squared_coefficients()
    # int_0^R c_hat U^2 dr and int_0^R c_hat^2 U^2 dr, exact for U^2 quadratic in r.
    force_integral = a2 * R**3 * geom.r[2] + a1 * R**2 * geom.r[1] + a0 * R * geom.r[0]
    moment_integral = a2 * R**3 * geom.z_cp[2] + a1 * R**2 * geom.z_cp[1] + a0 * R * geom.z_cp[0]

    force_raw = 0.5 * wing.rho * cbar * c_n * force_integral
    force_unclipped = options.lift_scale * force_raw
    force = jnp.clip(force_unclipped, -options.force_limit, options.force_limit)

    # c_cp = -lambda_M M_aero / F_N_unclipped with C_N cancelled: defined even
    # where C_N = 0. lift_scale is a lift gain only: dividing c_cp by it keeps
    # the feathering moment, hence the passive-pitch balance, independent of it
    # (docs/physics.md, Quasi-steady loads, departures).
    moving = force_integral > _REST_EPS
    ratio = jnp.where(moving, moment_integral / jnp.where(moving, force_integral, 1.0), geom.z_cp[0] / geom.r[0])
    chord_cop = (options.moment_scale / options.lift_scale) * cbar * d_cp * ratio
    aero_moment = -chord_cop * force

    theta_dot = kin.pitch_rate
    damping_raw = -0.125 * wing.rho * jnp.abs(theta_dot) * theta_dot * options.rotational_damping * R * cbar**4 * geom.z_rd
    damping_scaled = options.moment_scale * damping_raw
    damping = jnp.clip(damping_scaled, -options.damping_limit, options.damping_limit)

    return WingLoads(
        normal_force=force,
        normal_force_unclipped=force_unclipped,
        aero_moment=aero_moment,
        chord_cop=chord_cop,
        span_cop=r_cp,
        damping_moment=damping,
        alpha=alpha,
        normal_coefficient=c_n,
        cop_fraction=d_cp,
        force_clipped=jnp.abs(force_unclipped) > options.force_limit,
        damping_clipped=jnp.abs(damping_scaled) > options.damping_limit,
        velocity=vel,
    )
