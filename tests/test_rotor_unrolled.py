"""The written-out small products equal their ``@`` / ``jnp`` forms (float64,
conftest), alone and batched under ``jit(vmap)`` as the rollouts use them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.rotor import unrolled as u


RNG = np.random.default_rng(7)


def _m(*shape):
    return jnp.asarray(RNG.normal(size=shape))


@pytest.mark.parametrize("r, c", [(3, 3), (4, 6), (6, 4)])
def test_matvec_and_rmatvec_equal_matmul(r, c):
    m, x, y = _m(r, c), _m(c), _m(r)
    np.testing.assert_allclose(u.matvec(m, x), m @ x, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(u.rmatvec(m, y), m.T @ y, rtol=1e-13, atol=1e-14)
    # Not interchangeable: a transposed product is caught.
    assert not np.allclose(u.matvec(_m(3, 3), x[:3]), u.rmatvec(_m(3, 3), x[:3]))


def test_rotate_rows_and_cross_rows():
    pts, rot, lat = _m(5, 3), _m(3, 3), _m(5, 3)
    np.testing.assert_allclose(u.rotate_rows(pts, rot), pts @ rot.T, rtol=1e-13, atol=1e-14)
    assert not np.allclose(u.rotate_rows(pts, rot), pts @ rot)
    np.testing.assert_allclose(u.cross_rows(pts, lat), jnp.cross(pts, lat), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(u.cross_rows(lat, pts), -jnp.cross(pts, lat), rtol=1e-13, atol=1e-14)


def test_row_reductions():
    x = _m(4, 3)
    np.testing.assert_allclose(u.sum_rows(x), x.sum(0), rtol=1e-13, atol=1e-14)
    flags = x > 0.5
    np.testing.assert_array_equal(u.any_rows(flags), flags.any(0))


def test_batched_products_equal_a_loop():
    """``jit(vmap)`` over worlds, as in a rollout, equals one world at a time."""
    ms, xs = _m(8, 3, 3), _m(8, 3)
    batched = jax.jit(jax.vmap(lambda m, x: (u.matvec(m, x), u.rmatvec(m, x), u.rotate_rows(m, m))))(ms, xs)
    for i in range(8):
        np.testing.assert_allclose(batched[0][i], ms[i] @ xs[i], rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(batched[1][i], ms[i].T @ xs[i], rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(batched[2][i], ms[i] @ ms[i].T, rtol=1e-13, atol=1e-14)


def test_gradients_match_matmul():
    m, x = _m(3, 3), _m(3)
    g = jax.grad(lambda m, x: jnp.sum(jnp.sin(u.matvec(m, x))), argnums=(0, 1))(m, x)
    h = jax.grad(lambda m, x: jnp.sum(jnp.sin(m @ x)), argnums=(0, 1))(m, x)
    for a, b in zip(g, h):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
