"""Task randomization: a world's physical parameters, colours and pose
offsets from the randomization stream of its key
(:func:`flapjax.noise.split_streams`), each quantity from its own sub-stream
so that switching one range does not change the others' draws."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from flapjax import scene as sc
from flapjax.noise import split_streams
from flapjax.sim.multirotor import WorldParams

# Sub-stream ids folded into a world's randomization key.
SCENE, PHYSICS, TEXTURE, OBJECT, START, GOAL = range(6)


def uniform(key: PRNGKeyArray, bounds, shape=()) -> Float[Array, "..."]:
    """Uniform draws in ``bounds = (lo, hi)``."""
    lo, hi = bounds
    return lo + (hi - lo) * jax.random.uniform(key, shape)


def world_params(nominal: WorldParams, r, scene_ranges: sc.SceneRanges, key: PRNGKeyArray) -> WorldParams:
    """``nominal`` with the scene, the airframe (mass, inertia, rotor thrust
    range, torque coefficients, motor time constants) and the near-wall
    coefficients drawn from the ranges ``r``
    (:class:`flapjax.tasks.config.RandomizationConfig`); ``nominal`` itself
    when randomization is off. The controller's airframe
    (``controller_profile``) stays nominal."""
    if not r.enabled:
        return nominal
    rk = split_streams(key).randomization
    scene = sc.randomize_scene(jax.random.fold_in(rk, SCENE), nominal.scene, scene_ranges)
    box_friction = nominal.scene.box_friction * uniform(jax.random.fold_in(rk, SCENE + 100), r.friction_scale)
    scene = eqx.tree_at(lambda s: s.box_friction, scene, box_friction)
    k = jax.random.split(jax.random.fold_in(rk, PHYSICS), 7)
    prof = nominal.profile
    n = prof.n_rotors
    thrust = uniform(k[1], r.thrust_scale, (n,))
    prof = eqx.tree_at(
        lambda q: (q.mass, q.inertia, q.thrust_max, q.thrust_min, q.torque_coeff, q.time_constant),
        prof,
        (prof.mass * uniform(k[0], r.mass_scale), prof.inertia * uniform(k[6], r.inertia_scale),
         prof.thrust_max * thrust, prof.thrust_min * thrust,
         prof.torque_coeff * uniform(k[2], r.torque_scale, (n,)),
         prof.time_constant * uniform(k[3], r.time_constant_scale, (n,))),
    )
    chain = eqx.tree_at(lambda c: (c.proximity.wall_thrust_coeff, c.proximity.wall_lateral_coeff), nominal.chain,
                        (uniform(k[4], r.wall_thrust_coeff), uniform(k[5], r.wall_lateral_coeff)))
    return eqx.tree_at(lambda q: (q.scene, q.profile, q.chain), nominal, (scene, prof, chain))


def colours(base: Float[Array, "g 4"], r, key: PRNGKeyArray) -> Float[Array, "g 4"]:
    """Geom colours ``base`` (RGBA) with each RGB jittered by up to
    ``r.colour_jitter`` when texture randomization is on."""
    if not (r.enabled and r.texture):
        return base
    rk = jax.random.fold_in(split_streams(key).randomization, TEXTURE)
    jitter = r.colour_jitter * jax.random.uniform(rk, (base.shape[0], 3), base.dtype, -1.0, 1.0)
    return base.at[:, :3].set(jnp.clip(base[:, :3] + jitter, 0.0, 1.0))


def offset(r, key: PRNGKeyArray, name: str, stream: int, shape) -> Float[Array, "..."]:
    """A pose offset drawn in the range ``r.<name>`` from sub-stream
    ``stream`` (zeros when randomization is off)."""
    if not r.enabled:
        return jnp.zeros(shape)
    rk = jax.random.fold_in(split_streams(key).randomization, stream)
    return uniform(rk, getattr(r, name), shape)
