"""Stroke schedule psi(t) = d A sin(2 pi f t + phi0)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import ConfigError
from flapjax.control.stroke import StrokeSchedule, advance_offset, phase_cycles, servo_setpoint, stroke_reference


def test_reference_matches_closed_form_and_derivatives():
    sch = StrokeSchedule(frequency=30.0, amplitude=1.5, phase=0.3, direction=(1.0, -1.0))
    t = 0.0123
    cycles = jnp.mod(30.0 * t, 1.0)
    psi, psi_dot, psi_ddot = stroke_reference(sch, cycles)
    arg = 2 * np.pi * 30.0 * t + 0.3
    np.testing.assert_allclose(psi, [1.5 * np.sin(arg), -1.5 * np.sin(arg)], rtol=1e-12)
    # rates are the time derivatives of the angle (d/dt = f d/dcycles)
    d_psi = jax.jacfwd(lambda c: stroke_reference(sch, c)[0])(cycles) * 30.0
    d_rate = jax.jacfwd(lambda c: stroke_reference(sch, c)[1])(cycles) * 30.0
    np.testing.assert_allclose(psi_dot, d_psi, rtol=1e-10)
    np.testing.assert_allclose(psi_ddot, d_rate, rtol=1e-10)
    assert psi_dot[0] == pytest.approx(1.5 * 2 * np.pi * 30.0 * np.cos(arg))


def test_phase_from_step_counter_is_exact_and_wrapped():
    f, dt = 40.0, 1e-4
    k = jnp.asarray(123457, dtype=jnp.int32)
    c = phase_cycles(jnp.asarray(f), k, dt)
    assert 0.0 <= float(c) < 1.0
    assert float(c) == pytest.approx((f * dt * 123457) % 1.0, abs=1e-9)
    # a commanded frequency above nominal advances the phase by (f_cmd - f) dt per step
    off = advance_offset(jnp.asarray(0.0), jnp.asarray(41.0), jnp.asarray(40.0), dt)
    assert float(off) == pytest.approx(1e-4, rel=1e-9)


def test_float32_phase_does_not_drift_like_time():
    # 2.5 s at 10 kHz: float32 phase from the counter stays within 1e-4 cycles.
    k = jnp.asarray(24999, dtype=jnp.int32)
    c32 = phase_cycles(jnp.asarray(42.2, dtype=jnp.float32), k, 1e-4, jnp.asarray(0.0, dtype=jnp.float32))
    exact = (42.2 * 1e-4 * 24999) % 1.0
    assert abs(float(c32) - exact) < 1e-4


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(frequency=-1.0), "frequency"),
        (dict(frequency=30.0, amplitude=-0.1), "amplitude"),
        (dict(frequency=30.0, direction=(1.0, 0.5)), "direction"),
        (dict(frequency=30.0, direction=(1.0, 1.0, 1.0)), "direction"),
    ],
)
def test_bad_schedule_names_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        StrokeSchedule(**kwargs)


def test_servo_setpoint_feeds_forward_rate_and_inertia():
    """With u = servo_setpoint(...), the servo torque kp (u - psi) - kv psi_dot is
    kp (psi_ref - psi) + kv (psi_dot_ref - psi_dot) + J psi_ddot_ref: no lag from
    the damping, the inertia driven by feed-forward (the flapper's stroke servo values)."""
    kp, kv, inertia = 5.0, 2e-3, 2.451e-7
    sch = StrokeSchedule(frequency=40.0, amplitude=1.5, direction=(1.0, -1.0))
    ref = stroke_reference(sch, jnp.asarray(0.137))
    psi, psi_dot = ref[0] + jnp.array([0.01, -0.02]), ref[1] * 0.97
    u = servo_setpoint(*ref, kp=kp, kv=kv, inertia=inertia)
    torque = kp * (u - psi) - kv * psi_dot
    want = kp * (ref[0] - psi) + kv * (ref[1] - psi_dot) + inertia * ref[2]
    np.testing.assert_allclose(torque, want, rtol=1e-10, atol=1e-15)
    # on the reference, the servo supplies exactly J psi_ddot_ref
    on_ref = kp * (u - ref[0]) - kv * ref[1]
    np.testing.assert_allclose(on_ref, inertia * ref[2], rtol=1e-9, atol=1e-15)
