"""Drag dissipates; gusts have their 1-cos shape; OU turbulence statistics."""

import jax
import jax.numpy as jnp
import numpy as np

from flapjax import rotor


def test_drag_never_adds_energy():
    p = rotor.DragParams(linear=(0.3, 0.1, 0.5), quadratic=(0.02, 0.08, 0.0))
    v = jax.random.normal(jax.random.key(1), (2000, 3)) * 5.0
    f = jax.vmap(lambda x: rotor.drag_force(p, x))(v)
    power = jnp.sum(f * v, axis=1)
    assert bool(jnp.all(power <= 0.0))
    assert float(jnp.max(power[jnp.linalg.norm(v, axis=1) > 0.1])) < 0
    # Closed form on one axis: -(D1 v + D2 |v| v).
    np.testing.assert_allclose(rotor.drag_force(p, jnp.array([2.0, 0, 0])), [-(0.6 + 0.02 * 4), 0, 0], rtol=1e-14)
    g = jax.grad(lambda x: jnp.sum(rotor.drag_force(p, x)))(jnp.zeros(3))
    np.testing.assert_allclose(g, -np.array([0.3, 0.1, 0.5]), rtol=1e-14)  # finite at zero speed


def test_gust_shape():
    w = rotor.WindParams(gust_amplitude=[[2.0, 0.0, -1.0]], gust_start=[1.0], gust_duration=[0.5])
    t = jnp.array([0.5, 1.0, 1.125, 1.25, 1.5, 2.0])
    f = jax.vmap(lambda ti: rotor.gust_force(w, ti))(t)
    np.testing.assert_allclose(f[:, 0], [0.0, 0.0, 1.0, 2.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(f[:, 2], -0.5 * f[:, 0], atol=1e-12)


def test_ou_variance_and_correlation_time():
    sigma = jnp.array([0.5, 1.0, 2.0])
    tau = jnp.array([0.2, 0.5, 1.0])
    w = rotor.WindParams(turbulence_std=sigma, turbulence_time=tau)
    dt, steps, worlds = 0.01, 4000, 64

    def world(key):
        k0, k1 = jax.random.split(key)
        s0 = rotor.DisturbanceState.stationary(w, k0)

        def body(s, xi):
            s = rotor.turbulence_step(w, s, xi, dt=dt)
            return s, s.turbulence

        return jax.lax.scan(body, s0, jax.random.normal(k1, (steps, 3)))[1]

    x = jax.jit(jax.vmap(world))(jax.random.split(jax.random.key(7), worlds))  # (W, T, 3)
    x = np.asarray(x)
    var = x.var(axis=(0, 1))
    np.testing.assert_allclose(np.sqrt(var), sigma, rtol=0.05)
    # Autocorrelation at lag tau is exp(-1); check via lag-1 coefficient and at tau.
    for axis in range(3):
        lag = int(round(float(tau[axis]) / dt))
        a, b = x[:, :-lag, axis].ravel(), x[:, lag:, axis].ravel()
        rho = np.mean(a * b) / np.sqrt(np.mean(a * a) * np.mean(b * b))
        np.testing.assert_allclose(rho, np.exp(-1.0), atol=0.05)
        a1, b1 = x[:, :-1, axis].ravel(), x[:, 1:, axis].ravel()
        rho1 = np.mean(a1 * b1) / np.mean(a1 * a1)
        np.testing.assert_allclose(-dt / np.log(rho1), float(tau[axis]), rtol=0.1)
