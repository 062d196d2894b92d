"""The cycle-averaged flapper on the rigid backend against MJX."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import ConfigError
from flapjax.sim import flapper as fl

START = dict(position=jnp.array([0.02, -0.01, 0.48]), quat=jnp.array([0.999, 0.03, -0.02, 0.01]),
             velocity=jnp.array([0.05, 0.0, -0.05]), angular_velocity=jnp.array([0.5, -0.3, 0.2]))
TARGET = jnp.array([0.0, 0.0, 0.5])


def _hover(backend, dtype, n_steps=20000):
    robot = fl.make_robot("lumped", "averaged", backend=backend, dtype=dtype)
    params = jax.tree.map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, fl.default_params(robot))
    state = fl.init_state(robot, params, **{k: v.astype(dtype) for k, v in START.items()})
    run = jax.jit(lambda p, s: fl.hover_rollout(robot, p, s, n_steps, target=TARGET.astype(dtype), record_every=100))
    return run(params, state)


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-10), (jnp.float32, 1e-4)], ids=["float64", "float32"])
def test_rigid_and_mjx_backends_fly_the_same_2s_hover(dtype, tol):
    """Same wrench, same Euler scheme: 2 s (20 000 steps) of closed-loop hover
    from a perturbed start. float64: agreement to round-off (measured ~1e-16 m).
    float32: within 1e-4 m / 1e-4 rad (measured 2e-9 m with float32 throughout,
    ~4e-5 m when, as here, x64 is enabled and float64 constants mix in)."""
    _, mjx_rec = _hover("mjx", dtype)
    _, rigid_rec = _hover("rigid", dtype)
    assert float(jnp.abs(mjx_rec.position[0] - mjx_rec.position[-1]).max()) > 0.01  # it really moved
    np.testing.assert_allclose(rigid_rec.position, mjx_rec.position, rtol=0, atol=tol)
    np.testing.assert_allclose(rigid_rec.tilt, mjx_rec.tilt, rtol=0, atol=tol)
    np.testing.assert_allclose(rigid_rec.frequency, mjx_rec.frequency, rtol=tol)


def test_gradient_through_rigid_rollout_matches_finite_differences():
    robot = fl.make_robot("lumped", "averaged", backend="rigid")
    params = fl.default_params(robot)
    state = fl.init_state(robot, params, **START)

    @jax.jit
    def final_height(k_f):
        p = eqx.tree_at(lambda p: p.averaged.lift_coefficient, params, k_f)
        final, _ = fl.hover_rollout(robot, p, state, 2000, target=TARGET, record_every=100)
        return final.data.position[2]

    k0 = params.averaged.lift_coefficient
    g = float(jax.grad(final_height)(k0))
    h = 1e-3 * float(k0)
    fd = (float(final_height(k0 + h)) - float(final_height(k0 - h))) / (2 * h)
    assert np.isfinite(g) and g > 0  # more lift coefficient, higher
    assert g == pytest.approx(fd, rel=1e-4)


def test_monte_carlo_hover_settles_most_random_starts():
    study = fl.hover_study(jax.random.PRNGKey(1), 64)
    assert bool(study.healthy.all())
    assert study.settled_fraction >= 0.8
    assert float(jnp.median(study.final_position_error)) < 0.01


def test_rigid_backend_picks_the_body_or_the_joint_tree():
    assert fl.make_robot("fixed", "wing", backend="rigid").dynamics == "tree"
    assert fl.make_robot("free", "wing", backend="rigid").dynamics == "tree"
    assert fl.make_robot("lumped", "averaged", backend="rigid").dynamics == "rigid_body"
    assert fl.make_robot("free", "wing").dynamics == "mjx"
    with pytest.raises(ConfigError, match="backend"):
        fl.make_robot("lumped", "averaged", backend="bullet")


def test_float32_robot_gets_float32_params_and_flies_under_x64():
    """``default_params(robot)`` follows ``make_robot(dtype=...)``, so a
    float32 robot's rollout keeps one float type with x64 on."""
    robot = fl.make_robot("lumped", "averaged", backend="rigid", dtype=jnp.float32)
    params = fl.default_params(robot)
    assert {x.dtype for x in jax.tree.leaves(params) if jnp.issubdtype(x.dtype, jnp.floating)} == {jnp.dtype("float32")}
    final, _ = fl.hover_rollout(robot, params, fl.init_state(robot, params), 100)
    assert bool(final.healthy)
