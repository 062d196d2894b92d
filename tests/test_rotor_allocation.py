"""Allocation: reachable wrenches reproduced, unreachable part reported."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import rotor

PRESETS = ["quad_x", "hexa", "hexa_tilted"]


def test_matrix_columns_closed_form():
    p = rotor.profiles.quad_x()
    b = np.asarray(rotor.allocation_matrix(p))
    # Rotor 0 at 45 deg, axis +z, spin +1: torque = p x z - kappa z.
    x = y = 0.18 / np.sqrt(2)
    np.testing.assert_allclose(b[:, 0], [0, 0, 1, y, -x, -0.016], atol=1e-15)
    np.testing.assert_allclose(b[5], -0.016 * np.asarray(p.spins), atol=1e-15)


@pytest.mark.parametrize("name", PRESETS)
def test_reachable_wrench_reproduced(name):
    p = rotor.profiles.preset(name)
    b = rotor.allocation_matrix(p)
    thrusts = jax.random.uniform(jax.random.key(0), (50, p.n_rotors), minval=-5.0, maxval=10.0)
    wrenches = thrusts @ b.T  # reachable by construction
    for weights in (None, jnp.linspace(0.5, 3.0, p.n_rotors)):
        alloc = jax.vmap(lambda w: rotor.allocate_with_residual(p, w, weights=weights))(wrenches)
        np.testing.assert_allclose(alloc.thrust @ b.T, wrenches, rtol=0, atol=1e-9)
        np.testing.assert_allclose(alloc.unreachable, 0.0, atol=1e-9)


@pytest.mark.parametrize("name", ["quad_x", "hexa"])
def test_underactuated_reports_unreachable(name):
    p = rotor.profiles.preset(name)
    w = jnp.array([1.5, -2.0, 20.0, 0.1, -0.2, 0.05])
    alloc = rotor.allocate_with_residual(p, w)
    # Coplanar rotors: the horizontal force is exactly the unreachable part.
    np.testing.assert_allclose(alloc.unreachable, [1.5, -2.0, 0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(alloc.reachable, [0, 0, 20.0, 0.1, -0.2, 0.05], atol=1e-12)
    proj = rotor.reachable_projector(p)
    np.testing.assert_allclose(proj @ alloc.unreachable, 0.0, atol=1e-12)


def test_minimum_norm_and_weights():
    p = rotor.profiles.hexa()
    w = jnp.array([0.0, 0.0, 21.0, 0.3, 0.0, 0.0])
    t = rotor.allocate(p, w)
    # Any null-space perturbation keeps the wrench and increases the norm.
    b = np.asarray(rotor.allocation_matrix(p))
    null = np.linalg.svd(b)[2][4:]
    for v in null:
        assert float(jnp.sum((t + 0.3 * v) ** 2)) > float(jnp.sum(t**2))
    # A heavy weight on rotor 0 shifts effort to the others.
    weights = jnp.ones(6).at[0].set(10.0)
    tw = rotor.allocate(p, w, weights=weights)
    np.testing.assert_allclose(b @ tw, w, atol=1e-9)
    assert float(jnp.abs(tw[0])) < float(jnp.abs(t[0]))


def test_hover_equal_thrust_quad():
    p = rotor.profiles.quad_x()
    t = rotor.allocate(p, jnp.array([0, 0, 16.0, 0, 0, 0]))
    np.testing.assert_allclose(t, 4.0, atol=1e-12)


@pytest.mark.parametrize("name", PRESETS)
def test_float32_allocation_does_not_invert_rounding_noise(name):
    # In float32 the unreachable singular values of coplanar layouts are ~1e-7,
    # not 0: they must be cut, or the thrusts explode.
    p64 = rotor.profiles.preset(name)
    p32 = jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, p64)
    w = jnp.array([0.4, -0.3, 20.0, 0.2, -0.1, 0.05])
    t32 = rotor.allocate(p32, w.astype(jnp.float32))
    t64 = rotor.allocate(p64, w)
    assert t32.dtype == jnp.float32
    np.testing.assert_allclose(t32, t64, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["hexa", "hexa_tilted"])
def test_weighted_allocation_is_the_weighted_optimum(name):
    # min sum W_i T_i^2 subject to B T = w (reachable w): the optimality
    # condition is W T in range(B^T), and for a fully actuated layout
    # T = W^-1 B^T (B W^-1 B^T)^-1 w.
    p = rotor.profiles.preset(name)
    b = np.asarray(rotor.allocation_matrix(p))
    weights = np.linspace(0.5, 4.0, p.n_rotors)
    w = b @ np.linspace(2.0, 5.0, p.n_rotors)  # reachable by construction
    t = np.asarray(rotor.allocate(p, jnp.asarray(w), weights=jnp.asarray(weights)))
    np.testing.assert_allclose(b @ t, w, atol=1e-10)
    row_space = np.linalg.pinv(b) @ b
    wt = weights * t
    np.testing.assert_allclose(wt - row_space @ wt, 0.0, atol=1e-10)
    if name == "hexa_tilted":
        winv = np.diag(1.0 / weights)
        np.testing.assert_allclose(t, winv @ b.T @ np.linalg.solve(b @ winv @ b.T, w), rtol=1e-10)
