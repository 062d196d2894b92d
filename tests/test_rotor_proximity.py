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


def test_ground_gain_closed_form():
    # T_IGE / T_OGE = 1 / (1 - k_g (R / 4h)^2): at h = R, 1 / (1 - k_g / 16);
    # at the clamp h = R / 2, 1 / (1 - k_g / 4).
    kg = 1.35
    np.testing.assert_allclose(rotor.ground_effect_factor(R, R, kg), 1 / (1 - kg / 16), rtol=1e-14)
    np.testing.assert_allclose(rotor.ground_effect_factor(2.5 * R, R, kg), 1 / (1 - kg / 100), rtol=1e-14)
    np.testing.assert_allclose(rotor.ground_effect_factor(0.3 * R, R, kg), 1 / (1 - kg / 4), rtol=1e-14)
    np.testing.assert_allclose(jax.grad(rotor.ground_effect_factor, argnums=2)(R, R, kg), (1 / 16) / (1 - kg / 16) ** 2,
                               rtol=1e-12)


def test_wall_coefficients_act_on_their_own_terms():
    # c_T only scales the thrust, c_L only the lateral force; the window has
    # its own fade start and range (d_fade = 1.5 R, d_max = 3.5 R here).
    p = rotor.ProximityParams(wall_thrust_coeff=0.12, wall_lateral_coeff=0.08, wall_fade_start=1.5, wall_range=3.5)
    normal = jnp.array([[0.0, -1.0, 0.0]])
    thrust = jnp.array([2.5])

    def f(d):
        return rotor.wall_effect(thrust, jnp.array([d]), normal, jnp.array([R]), p)

    factor, lateral = f(1.2 * R)
    np.testing.assert_allclose(factor[0], 1 + 0.12 / 1.2**2, rtol=1e-14)
    np.testing.assert_allclose(lateral[0], [0.0, 0.08 * 2.5 / 1.2**2, 0.0], rtol=1e-14, atol=1e-16)
    # Midway through the fade the quintic window is 1/2: d = 2.5 R.
    np.testing.assert_allclose(rotor.wall_window(jnp.array(2.5 * R), R, p), 0.5, rtol=1e-14)
    factor, lateral = f(2.5 * R)
    np.testing.assert_allclose(factor[0], 1 + 0.5 * 0.12 / 2.5**2, rtol=1e-13)
    np.testing.assert_allclose(lateral[0, 1], 0.5 * 0.08 * 2.5 / 2.5**2, rtol=1e-13)
    # At s = 1/4 of the fade: 1 - s^3 (10 - 15 s + 6 s^2).
    s = 0.25
    window_quarter = 1 - s**3 * (10 - 15 * s + 6 * s**2)
    np.testing.assert_allclose(rotor.wall_window(jnp.array((1.5 + 2 * s) * R), R, p), window_quarter, rtol=1e-14)
    # ... and the wall effect applies that window (a cubic smoothstep, equal at the midpoint, differs here)
    factor, lateral = f(2.0 * R)
    np.testing.assert_allclose(factor[0], 1 + window_quarter * 0.12 / 2.0**2, rtol=1e-13)
    np.testing.assert_allclose(lateral[0, 1], window_quarter * 0.08 * 2.5 / 2.0**2, rtol=1e-13)
    # C2: first and second derivatives vanish at both ends of the fade.
    window = lambda d: rotor.wall_window(d, R, p)  # noqa: E731
    for end in (1.5 * R, 3.5 * R):
        for side in (-1e-9, 1e-9):
            d = jnp.asarray(end + side * R)
            assert abs(float(jax.grad(window)(d))) * R < 1e-6
            assert abs(float(jax.grad(jax.grad(window))(d))) * R**2 < 1e-6
    # Inside the fade the second derivative is not zero (a cubic smoothstep,
    # C1 only, would have 6 / (d_max - d_fade)^2 at the start).
    assert abs(float(jax.grad(jax.grad(window))(jnp.asarray(1.7 * R)))) * R**2 > 0.1
