"""Proximity effects per rotor: ground effect and near-wall effect (chain step 4).

Both act on the thrust the rotor actually produces (after saturation and the
actuator), so a rotor clamped at ``T_max`` near a surface still produces more
than ``T_max`` (docs/physics.md, Proximity effects).
:func:`rotor_proximity` measures the per-rotor distances in a
:class:`flapjax.scene.Scene`.

Ground effect, Cheeseman & Bennett (ARC R&M 3021, 1955), with a gain
``k_g`` on the image-rotor term (``k_g = 1``, the default, is their model;
measured multirotors often differ, so it can be identified from hovers)::

    T_IGE / T_OGE = 1 / (1 - k_g (R / (4 h))^2)

with ``h`` the distance from the rotor centre to the first surface along the
downwash axis ``-a_i`` (not world z: a tilted rotor sees the ground later),
clamped to ``h >= R / 2`` (factor <= 1 / (1 - k_g / 4), 4/3 for k_g = 1), and exactly 1 where no surface
lies on the downwash ray (``h = inf``).

Near-wall effect: no fitted public model exists; flapjax uses a parametric
image-rotor form. With ``d`` the distance from the rotor centre to the nearest
near-vertical surface (clamped to ``d >= R``) and ``n_w`` its unit normal
pointing out of the surface::

    thrust factor   1 + c_T (R / d)^2 w(d)
    lateral force  -c_L T (R / d)^2 w(d) n_w          (toward the wall)

where ``w`` is a C2 window: 1 for ``d <= d_fade``, 0 for ``d >= d_max``,
``1 - smootherstep`` in between. ``c_T`` and ``c_L`` default to 0.05, a
placeholder of the size reported qualitatively for rotors near walls, to be
identified from data (they are pytree leaves, so ``jax.grad`` reaches them).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax import scene as sc
from flapjax.rotor.profile import RotorProfile
from flapjax.rotor.unrolled import rotate_rows
from flapjax.validation import ConfigError, as_float_array, check_range, is_traced

Scalar = Float[Array, ""]


class ProximityParams(eqx.Module):
    """Coefficients of the near-wall model and the ground-effect gain.

    Attributes:
      wall_thrust_coeff: () c_T, thrust gain at d = R [-] (placeholder 0.05).
      wall_lateral_coeff: () c_L, lateral force per thrust at d = R [-]
        (placeholder 0.05).
      wall_fade_start: () d_fade / R, window starts to fade [-] (default 2).
      wall_range: () d_max / R, effect is exactly zero beyond [-] (default 4).
      ground_coeff: () k_g, gain on the Cheeseman-Bennett image term [-]
        (default 1, their model; 0 <= k_g < 4).
    """

    wall_thrust_coeff: Scalar
    wall_lateral_coeff: Scalar
    wall_fade_start: Scalar
    wall_range: Scalar
    ground_coeff: Scalar

    def __init__(self, wall_thrust_coeff=0.05, wall_lateral_coeff=0.05, wall_fade_start=2.0, wall_range=4.0,
                 ground_coeff=1.0):
        vals = (wall_thrust_coeff, wall_lateral_coeff, wall_fade_start, wall_range, ground_coeff)
        if not any(is_traced(v) for v in vals):
            for name, v in zip(("wall_thrust_coeff", "wall_lateral_coeff", "wall_fade_start", "wall_range",
                                "ground_coeff"), vals):
                as_float_array(name, v, ())
            check_range("ground_coeff", ground_coeff, 0.0, None)
            if float(ground_coeff) >= 4.0:
                raise ConfigError("ground_coeff: must be < 4 (the factor at the clamp h = R/2 is "
                                  f"1 / (1 - k_g / 4)), got {float(ground_coeff):g}")
            check_range("wall_thrust_coeff", wall_thrust_coeff, 0.0, None)
            check_range("wall_lateral_coeff", wall_lateral_coeff, 0.0, None)
            check_range("wall_fade_start", wall_fade_start, 1.0, None)
            if float(wall_range) <= float(wall_fade_start):
                raise ConfigError(
                    f"wall_range: must be > wall_fade_start = {float(wall_fade_start):g} (in rotor radii), got {float(wall_range):g}"
                )
        self.wall_thrust_coeff = jnp.asarray(wall_thrust_coeff, dtype=float)
        self.wall_lateral_coeff = jnp.asarray(wall_lateral_coeff, dtype=float)
        self.wall_fade_start = jnp.asarray(wall_fade_start, dtype=float)
        self.wall_range = jnp.asarray(wall_range, dtype=float)
        self.ground_coeff = jnp.asarray(ground_coeff, dtype=float)


class ProximityInput(eqx.Module):
    """Per-rotor distances to the scene, in the body frame.

    Attributes:
      ground_distance: (n,) h_i, distance from the rotor centre to the first
        surface along -a_i [m]; ``inf`` where the ray meets nothing.
      wall_distance: (n,) d_i, distance from the rotor centre to the nearest
        near-vertical surface [m]; ``inf`` where there is none.
      wall_normal: (n, 3) unit normal n_w of that surface, out of the surface,
        in the body frame [-] (any unit vector where ``wall_distance`` is inf).
    """

    ground_distance: Float[Array, " n"]
    wall_distance: Float[Array, " n"]
    wall_normal: Float[Array, "n 3"]

    @classmethod
    def free_air(cls, n: int) -> "ProximityInput":
        """No surface anywhere near the ``n`` rotors."""
        return cls(
            ground_distance=jnp.full((n,), jnp.inf),
            wall_distance=jnp.full((n,), jnp.inf),
            wall_normal=jnp.tile(jnp.array([1.0, 0.0, 0.0]), (n, 1)),
        )


def ground_effect_factor(height: Float[Array, "..."], radius: Float[Array, "..."],
                         coeff: Float[Array, ""] | float = 1.0) -> Float[Array, "..."]:
    """Cheeseman–Bennett thrust ratio T_IGE / T_OGE [-].

    Args:
      height: h, distance along the downwash axis to the surface [m]; ``inf``
        (no surface) gives exactly 1.
      radius: R, rotor radius [m].
      coeff: k_g, gain on the image term ``(R / 4h)^2`` [-] (1: the
        Cheeseman–Bennett model; must be < 4).

    The distance is clamped to ``h >= R / 2`` (ratio <= 1 / (1 - k_g / 4),
    4/3 for k_g = 1; zero gradient with respect to ``h`` below the clamp).
    """
    finite = jnp.isfinite(height)
    h = jnp.maximum(jnp.where(finite, height, 1.0), 0.5 * radius)
    ratio = jnp.where(finite, radius / (4.0 * h), 0.0)
    square = ratio * ratio
    return 1.0 / (1.0 - jnp.asarray(coeff).astype(square.dtype) * square)


def wall_window(distance: Float[Array, "..."], radius: Float[Array, "..."], params: ProximityParams) -> Float[Array, "..."]:
    """C2 fade window [-]: 1 for d <= d_fade, 0 for d >= d_max, inf -> 0."""
    finite = jnp.isfinite(distance)
    d = jnp.where(finite, distance, 0.0)
    lo = params.wall_fade_start * radius
    hi = params.wall_range * radius
    s = jnp.clip((d - lo) / (hi - lo), 0.0, 1.0)
    smooth = s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)
    return jnp.where(finite, 1.0 - smooth, 0.0)


def wall_effect(
    thrust: Float[Array, " n"],
    distance: Float[Array, " n"],
    normal: Float[Array, "n 3"],
    radius: Float[Array, " n"],
    params: ProximityParams,
) -> tuple[Float[Array, " n"], Float[Array, "n 3"]]:
    """Near-wall thrust factor (n,) [-] and lateral force (n, 3) [N] per rotor.

    ``thrust`` (n,) [N] is the rotor's produced thrust; ``normal`` is in the
    frame in which the lateral force is returned (the body frame in the chain).
    The lateral force points along ``-normal``, i.e. toward the wall.
    """
    w = wall_window(distance, radius, params)
    finite = jnp.isfinite(distance)
    d = jnp.maximum(jnp.where(finite, distance, 1.0), radius)
    # w (R / d)^2 ending in the division: XLA:CPU then computes it once per
    # rotor instead of inside every consumer that reads it (a division is
    # too expensive to duplicate; a product is not).
    proximity = (w * radius * radius) / (d * d)
    factor = 1.0 + params.wall_thrust_coeff * proximity
    lateral = -(params.wall_lateral_coeff * thrust * proximity)[:, None] * normal
    return factor, lateral


def rotor_proximity(
    scene: sc.Scene,
    prof: RotorProfile,
    position: Float[Array, "3"],
    rotation: Float[Array, "3 3"],
    box: sc.BoxPose | None = None,
) -> ProximityInput:
    """Per-rotor distances to the scene, for the chain (normals in body frame).

    Args:
      scene: the scene.
      prof: the airframe (rotor centres and axes in the body frame).
      position: (3,) CoM position, world frame [m].
      rotation: (3, 3) body-to-world rotation [-].
      box: pose of the box object, or None when the world has none.

    ``ground_distance`` is the ray distance along ``-a_i`` to the first of
    ground, wall and box; ``wall_distance``/``wall_normal`` describe the
    nearest near-vertical surface (:func:`flapjax.scene.surface_distances`).
    """
    centres = position + rotate_rows(prof.positions, rotation)
    downwash = -rotate_rows(prof.axes, rotation)
    h, d, n_world = sc.surface_distances(scene, centres, downwash, box)
    return ProximityInput(ground_distance=h, wall_distance=d, wall_normal=rotate_rows(n_world, rotation.T))
