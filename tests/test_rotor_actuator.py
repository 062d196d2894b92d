"""Actuator: exact first-order step and symmetric speed-rate limit."""

import jax
import jax.numpy as jnp
import numpy as np

from flapjax import rotor


def _run(prof, state, cmd, dt, steps):
    def body(s, _):
        s, t = rotor.actuator_step(prof, s, cmd, dt=dt)
        return s, (s.speed, t)

    return jax.lax.scan(body, state, None, length=steps)


def test_step_reaches_632_percent_after_one_time_constant():
    prof = rotor.profiles.quad_x(rate_limit=np.full(4, 1e9))
    tau = 0.035
    dt = tau / 35.0
    u0, u1 = 0.3, 0.8
    state = rotor.ActuatorState(speed=jnp.full(4, u0))
    cmd = rotor.speed_to_thrust(prof, jnp.full(4, u1))
    _, (speeds, thrusts) = _run(prof, state, cmd, dt, 35)
    fraction = (speeds[-1] - u0) / (u1 - u0)
    np.testing.assert_allclose(fraction, 1 - np.exp(-1.0), rtol=1e-12)  # 0.632...
    # The exact step does not depend on how the interval is cut.
    _, (coarse, _) = _run(prof, state, cmd, tau, 1)
    np.testing.assert_allclose(coarse[-1], speeds[-1], rtol=1e-12)
    # Thrust follows T = T_max u^2.
    np.testing.assert_allclose(thrusts[-1], 8.0 * speeds[-1] ** 2, rtol=1e-12)


def test_rate_limit_caps_slew_exactly():
    prof = rotor.profiles.quad_x()  # r = 20 /s
    dt = 0.002
    state = rotor.ActuatorState(speed=jnp.array([0.1, 0.9, 0.5, 0.5]))
    cmd = rotor.speed_to_thrust(prof, jnp.array([1.0, 0.1, 0.5, 0.52]))
    _, (speeds, _) = _run(prof, state, cmd, dt, 10)
    steps = np.asarray(jnp.diff(jnp.concatenate([state.speed[None], speeds]), axis=0))
    # Large up and down steps slew at exactly +-r dt (symmetric) while the lag
    # asks for more; afterwards the plain lag takes over (reference loop).
    alpha = 1 - np.exp(-dt / 0.035)
    u = np.array([0.1, 0.9, 0.5, 0.5])
    u_cmd = np.array([1.0, 0.1, 0.5, 0.52])
    capped = np.zeros((10, 4), bool)
    for k in range(10):
        want = alpha * (u_cmd - u)
        capped[k] = np.abs(want) >= 20.0 * dt
        du = np.clip(want, -20.0 * dt, 20.0 * dt)
        np.testing.assert_allclose(steps[k], du, rtol=1e-12, atol=1e-15)
        u = u + du
    assert capped[:4, 0].all() and capped[:2, 1].all()
    np.testing.assert_allclose(steps[:4, 0], 20.0 * dt, rtol=1e-12)
    np.testing.assert_allclose(steps[:2, 1], -20.0 * dt, rtol=1e-12)
    # No command change: no motion. Small change: below the limit, pure lag.
    np.testing.assert_allclose(steps[:, 2], 0.0, atol=1e-15)
    np.testing.assert_allclose(steps[0, 3], alpha * 0.02, rtol=1e-12)
    assert float(jnp.max(jnp.abs(steps[:, 3]))) < 20.0 * dt


def test_speed_thrust_inverse_and_zero_thrust_gradient():
    prof = rotor.profiles.hexa()
    t = jnp.linspace(0.0, 6.0, 6)
    np.testing.assert_allclose(rotor.speed_to_thrust(prof, rotor.thrust_to_speed(prof, t)), t, atol=1e-12)
    g = jax.grad(lambda x: jnp.sum(rotor.thrust_to_speed(prof, x)))(jnp.zeros(6))
    np.testing.assert_array_equal(g, 0.0)  # documented: safe sqrt at zero thrust
    g = jax.grad(lambda x: rotor.thrust_to_speed(prof, x)[0])(jnp.full(6, 1.5))
    np.testing.assert_allclose(g[0], 0.5 / np.sqrt(1.5 * 6.0), rtol=1e-12)
