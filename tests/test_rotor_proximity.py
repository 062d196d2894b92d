"""Ground effect (Cheeseman–Bennett) and the parametric near-wall model."""

import jax
import jax.numpy as jnp
import numpy as np

from flapjax import rotor

R = 0.0635


def test_cheeseman_bennett_golden_values():
    k = rotor.ground_effect_factor(jnp.array([0.5, 1.0, 2.0, 1e3]) * R, R)
    np.testing.assert_allclose(k[:3], [4 / 3, 16 / 15, 64 / 63], rtol=1e-14)
    np.testing.assert_allclose(k[3], 1.0, atol=1e-6)
    assert float(rotor.ground_effect_factor(jnp.inf, R)) == 1.0
    # Clamped at h = R/2: touching the ground gives 4/3, not infinity.
    np.testing.assert_allclose(rotor.ground_effect_factor(jnp.array([0.0, 0.2 * R]), R), 4 / 3, rtol=1e-14)
    # Monotone decreasing in h.
    h = jnp.linspace(0.5, 20.0, 200) * R
    assert bool(jnp.all(jnp.diff(rotor.ground_effect_factor(h, R)) < 0))


def test_ground_factor_gradient_matches_closed_form():
    h = 1.3 * R
    g = jax.grad(rotor.ground_effect_factor)(h, R)
    q = R / (4 * h)
    np.testing.assert_allclose(g, -2 * q * q / h / (1 - q * q) ** 2, rtol=1e-12)
    assert float(jax.grad(rotor.ground_effect_factor)(jnp.inf, R)) == 0.0
    assert float(jax.grad(rotor.ground_effect_factor)(0.1 * R, R)) == 0.0


def test_wall_force_points_to_wall_and_fades():
    p = rotor.ProximityParams()
    normal = jnp.array([[-1.0, 0.0, 0.0]])  # wall at +x, normal toward the robot
    thrust = jnp.array([4.0])
    d = jnp.linspace(1.0, 5.0, 401) * R

    def f(di):
        return rotor.wall_effect(thrust, jnp.array([di]), normal, jnp.array([R]), p)

    factor, lateral = jax.vmap(f)(d)
    lat_x = lateral[:, 0, 0]
    assert bool(jnp.all(lat_x[d < 4 * R] > 0))  # toward the wall (+x)
    np.testing.assert_allclose(lateral[:, 0, 1:], 0.0, atol=1e-15)
    np.testing.assert_array_equal(lat_x[d >= 4 * R], 0.0)
    np.testing.assert_array_equal(factor[d >= 4 * R, 0], 1.0)
    # Closed form inside d_fade: c_L T (R/d)^2.
    np.testing.assert_allclose(f(1.5 * R)[1][0, 0], 0.05 * 4.0 / 1.5**2, rtol=1e-12)
    np.testing.assert_allclose(f(1.5 * R)[0][0], 1 + 0.05 / 1.5**2, rtol=1e-12)
    # Smooth fade: value and slope go to zero at d_max.
    dfdd = jax.grad(lambda x: f(x)[1][0, 0])
    assert abs(float(dfdd(4 * R - 1e-9))) < 1e-4
    np.testing.assert_allclose(f(4 * R - 1e-6)[1][0, 0], 0.0, atol=1e-9)
    # Monotone decreasing magnitude with distance.
    assert bool(jnp.all(jnp.diff(lat_x) <= 1e-15))
    # Clamp at d = R: closer does not grow further.
    np.testing.assert_allclose(f(0.5 * R)[1], f(R)[1], rtol=1e-14)


def test_pitched_wall_normal_direction_kept():
    p = rotor.ProximityParams()
    beta = 0.3
    n = jnp.array([[-jnp.cos(beta), 0.0, -jnp.sin(beta)]])
    _, lat = rotor.wall_effect(jnp.array([3.0]), jnp.array([1.5 * R]), n, jnp.array([R]), p)
    unit = lat[0] / jnp.linalg.norm(lat[0])
    np.testing.assert_allclose(unit, -n[0], atol=1e-14)


def test_free_air_is_neutral():
    p = rotor.ProximityParams()
    free = rotor.ProximityInput.free_air(4)
    k, lat = rotor.wall_effect(jnp.full(4, 3.0), free.wall_distance, free.wall_normal, jnp.full(4, R), p)
    np.testing.assert_array_equal(k, 1.0)
    np.testing.assert_array_equal(lat, 0.0)
