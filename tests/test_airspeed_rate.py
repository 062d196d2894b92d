"""The averaged model's airspeed-rate moment: body roll (pitch) moment
A_0 (A_1) times the rate of change of the lagged body-frame lateral
(forward) airspeed, the wings' unsteady reaction to a gust."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.math import quat_to_mat
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.airspeed_rate import airspeed_rate, airspeed_rate_torque, body_airspeed
from flapjax.validation import ConfigError

jax.config.update("jax_enable_x64", True)


def test_torque_maps_lateral_rate_to_roll_and_forward_rate_to_pitch():
    p = CycleAveragedParams(airspeed_rate_coupling=(2e-6, -3e-6))
    np.testing.assert_allclose(airspeed_rate_torque(p, jnp.array([0.0, 1.0])), [2e-6, 0.0, 0.0], atol=1e-20)
    np.testing.assert_allclose(airspeed_rate_torque(p, jnp.array([1.0, 0.0])), [0.0, -3e-6, 0.0], atol=1e-20)


def test_body_airspeed_is_velocity_relative_to_the_wind_in_the_body_frame():
    yaw90 = jnp.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # body x along world y
    np.testing.assert_allclose(body_airspeed(yaw90, jnp.array([0.0, 1.0, 0.0]), jnp.array([0.0, 0.0, 0.0])), [1.0, 0.0])
    np.testing.assert_allclose(body_airspeed(jnp.eye(3), jnp.zeros(3), jnp.array([0.0, 0.5, 0.0])), [0.0, -0.5])


def test_a_step_of_airspeed_has_rate_integral_equal_to_the_step_spread_over_the_lag():
    dt, f = 1e-4, 42.0

    def body(last, k):
        rate, last = airspeed_rate(jnp.array([0.3, -0.5]), last, k, f, dt)
        return last, rate

    _, rates = jax.lax.scan(body, jnp.zeros(2), jnp.arange(1, 2000))
    np.testing.assert_allclose(jnp.sum(rates, axis=0) * dt, [0.3, -0.5], rtol=1e-6)
    rates = np.asarray(rates[:, 1])
    # spread over about half a wingbeat (12 ms), not given in one step
    assert abs(rates[0]) * dt < 0.02 * 0.5 and abs(rates[int(0.5 / f / dt)]) > 0.2 * abs(rates[0])


def test_first_step_starts_the_lag_at_the_airspeed_without_a_kick():
    rate, last = airspeed_rate(jnp.array([2.0, -1.0]), jnp.zeros(2), jnp.asarray(0), 42.0, 1e-4)
    np.testing.assert_array_equal(rate, [0.0, 0.0])
    np.testing.assert_allclose(last, [2.0, -1.0])


def _gust_flight(coupling, *, steps=840, onset=40, damped=True, without_state=False, l_v=0.0):
    robot = fl.make_robot("lumped", "averaged", backend="rigid")
    params = fl.default_params(robot)
    params = eqx.tree_at(lambda q: (q.averaged.airspeed_rate_coupling, q.averaged.roll_speed_coupling), params,
                         (jnp.asarray(coupling, float), jnp.asarray(l_v)))
    if not damped:  # no drag nor rate damping: the body keeps the moment's whole impulse
        params = eqx.tree_at(lambda q: (q.averaged.horizontal_damping, q.averaged.rate_damping), params,
                             (jnp.asarray(0.0), jnp.zeros(3)))
    state = fl.init_state(robot, params, velocity=jnp.array([0.2, 0.0, 0.0]))  # moving: no kick at the start
    if without_state:  # a state built before the term existed
        state = eqx.tree_at(lambda s: s.last_airspeed, state, None, is_leaf=lambda x: x is None)

    def body(s, k):
        wind = jnp.where(k >= onset, 1.0, 0.0) * jnp.array([0.0, 0.5, 0.0])
        s, _ = fl.step(robot, params, s, wind=wind)
        return s, s.data.angular_velocity

    _, w = jax.lax.scan(body, state, jnp.arange(steps))
    return robot, np.asarray(w)


def test_a_lateral_gust_rolls_the_averaged_robot_by_the_coupling_times_the_airspeed_step():
    robot, w0 = _gust_flight([0.0, 0.0], damped=False)
    _, w1 = _gust_flight([1e-6, 0.0], damped=False)
    dw = w1 - w0
    np.testing.assert_allclose(dw[:40], 0.0, atol=1e-15)  # nothing before the gust (nor at the start)
    # 80 ms on, the lagged airspeed has taken the step (-0.5 m/s): the body keeps the impulse A_0 dv_y
    # as a roll rate A_0 dv_y / I_xx (attitude 0.3 mrad: the axes hardly turn); pitch untouched
    rot = quat_to_mat(robot.rigid_body.inertia_quat)  # principal axes in the body frame
    i_xx = float((rot @ jnp.diag(robot.rigid_body.inertia) @ rot.T)[0, 0])
    np.testing.assert_allclose(dw[-1, 0], 1e-6 * -0.5 / i_xx, rtol=0.03)
    assert abs(dw[-1, 1]) < 1e-3 * abs(dw[-1, 0])


def test_zero_coupling_changes_nothing():
    _, w0 = _gust_flight([0.0, 0.0], steps=200, l_v=2e-4)
    _, w_old = _gust_flight([0.0, 0.0], steps=200, l_v=2e-4, without_state=True)
    np.testing.assert_array_equal(w0, w_old)
    assert np.max(np.abs(w0[:, 0])) > 1e-3  # the gust does roll it (through L_v)


def test_old_files_load_and_bad_values_name_the_field():
    assert CycleAveragedParams.from_dict({"lift_coefficient": 1.7e-4}).airspeed_rate_coupling.tolist() == [0.0, 0.0]
    p = CycleAveragedParams.from_dict({"airspeed_rate_coupling": [1e-6, -2e-6]})
    assert CycleAveragedParams.from_dict(p.to_dict()).airspeed_rate_coupling.tolist() == [1e-6, -2e-6]
    with pytest.raises(ConfigError, match="airspeed_rate_coupling"):
        CycleAveragedParams(airspeed_rate_coupling=(1e-6, float("nan")))
    with pytest.raises(ConfigError, match="airspeed_rate_coupling"):
        CycleAveragedParams.from_dict({"airspeed_rate_coupling": [1e-6]})
