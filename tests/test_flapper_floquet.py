"""Floquet analysis of the free flapper (flapjax/sim/flapper/floquet.py).

What it defends: the exponents are log(multiplier) / T (closed form on
exp(A T)); the attitude chart is a faithful rotation vector; the mirror
parity classifies longitudinal and lateral modes; the cycle map refuses a
robot or a step count it does not describe; the monodromy is the Jacobian
of the cycle map (finite differences) and, on the free robot flying the
cycle-averaged model, its exponents are the eigenvalues of that model's
linearization; the trim is a fixed point whose yaw multiplier is 1.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.sim import flapper as fl
from flapjax.sim.flapper import floquet as fq
from flapjax.validation import ConfigError


def test_exponents_of_a_matrix_exponential_are_its_eigenvalues():
    # Closed form: for x' = A x the map over T is exp(A T), exponents eig(A).
    period = 0.0237
    lam = np.array([2.4 + 6.5j, 2.4 - 6.5j, -9.6, 40.0, -137.0])
    rng = np.random.default_rng(0)
    v = rng.normal(size=(5, 5)) + 0j
    v[:, 0] = rng.normal(size=5) + 1j * rng.normal(size=5)
    v[:, 1] = np.conj(v[:, 0])
    a = np.real(v @ np.diag(lam) @ np.linalg.inv(v))
    mu, got, _ = fq.floquet_exponents(scipy.linalg.expm(a * period), period)
    np.testing.assert_allclose(np.sort_complex(got), np.sort_complex(lam), rtol=1e-9)
    np.testing.assert_allclose(got[0].real, 40.0, rtol=1e-9)  # fastest-growing first
    np.testing.assert_allclose(np.abs(mu[0]), np.exp(40.0 * period), rtol=1e-9)
    wrong = fq.floquet_exponents(scipy.linalg.expm(a * period), 2 * period)[1]  # a wrong period is seen
    assert not np.allclose(np.sort_complex(wrong), np.sort_complex(lam), rtol=1e-3)


@pytest.mark.parametrize("theta", [[0.0, 0.0, 0.0], [1e-9, -2e-9, 0.0], [0.1, -0.2, 0.3], [0.0, 2.5, 0.0]])
def test_rotation_vector_round_trip(theta):
    theta = jnp.asarray(theta)
    q = fq.rotvec_to_quat(theta)
    np.testing.assert_allclose(float(jnp.linalg.norm(q)), 1.0, rtol=1e-14)
    np.testing.assert_allclose(fq.quat_to_rotvec(q), theta, atol=1e-13)
    np.testing.assert_allclose(fq.quat_to_rotvec(-q), theta, atol=1e-13)  # q and -q are one rotation
    # A rotation about z by the angle is the quaternion [cos(a/2), 0, 0, sin(a/2)].
    np.testing.assert_allclose(fq.rotvec_to_quat(jnp.array([0.0, 0.0, 0.4])), [np.cos(0.2), 0, 0, np.sin(0.2)],
                               atol=1e-15)


def test_rotation_vector_chart_is_differentiable_at_level():
    # d(rotvec)/d(quat vector part) = 2 I at identity, and the chart's Jacobians are inverse.
    j = jax.jacfwd(fq.quat_to_rotvec)(jnp.array([1.0, 0.0, 0.0, 0.0]))
    np.testing.assert_allclose(j[:, 1:], 2.0 * np.eye(3), atol=1e-14)
    j_back = jax.jacfwd(lambda t: fq.quat_to_rotvec(fq.rotvec_to_quat(t)))(jnp.zeros(3))
    np.testing.assert_allclose(j_back, np.eye(3), atol=1e-14)


def test_mirror_parity_separates_longitudinal_and_lateral():
    sym = np.zeros(21)
    sym[[1, 4, 9, 11, 13]] = [0.1, 0.2, 0.3, 0.4, 0.5]  # pitch, roll_joint, v_x, v_z, w_y
    sym[[5, 6]] = 0.7  # both strokes alike
    lat = np.zeros(21)
    lat[[0, 2, 3, 10]] = [0.1, 0.2, 0.3, 0.4]  # roll, yaw, pitch_joint, v_y
    lat[[19, 20]] = [1.0, -1.0]  # feathering rates opposite
    assert fq.mirror_parity(sym) == pytest.approx(1.0)
    assert fq.mirror_parity(lat) == pytest.approx(-1.0)
    assert abs(fq.mirror_parity(sym + lat)) < 0.5


def test_refuses_a_robot_or_step_count_it_does_not_describe():
    fixed = fl.make_robot("fixed", "wing", backend="rigid")
    with pytest.raises(ConfigError, match="robot"):
        fq.period_map(fixed, fl.default_params(fixed), jnp.zeros(21), 10)
    free = fl.make_robot("free", "wing", backend="rigid")
    params = fl.default_params(free, frequency=42.0)  # 238.1 steps per wingbeat
    with pytest.raises(ConfigError, match="n_steps"):
        fq.period_map(free, params, jnp.zeros(21), fq.steps_per_period(free, 42.0))
    assert fq.steps_per_period(free, 42.2213) == 237


def test_full_state_round_trip():
    robot = fl.make_robot("free", "wing", backend="rigid")
    params = fl.default_params(robot)
    x = jnp.arange(21.0) * 1e-2
    state = fq.full_state(robot, params, x, phase=0.3)
    np.testing.assert_allclose(fq.reduced_state(robot, state), x, atol=1e-14)
    assert float(state.phase_offset) == pytest.approx(0.3)
    assert int(state.step) == 0


def _averaged_robot():
    # The per-wing values identified by `flapjax identify --quick` (control moments and f_ref at defaults).
    avg = CycleAveragedParams(horizontal_damping=0.0187, rate_damping=(4.86e-5, 1.70e-5, 1e-5),
                              roll_speed_coupling=1.96e-4, pitch_speed_coupling=-1.97e-4)
    robot = fl.make_robot("free", "averaged", backend="rigid")
    return robot, fl.default_params(robot, frequency=float(avg.hover_frequency), averaged=avg), avg


@pytest.mark.slow
def test_averaged_robot_exponents_are_its_linearization_eigenvalues():
    # Closed form: the averaged robot is autonomous, so its exponents are
    # the eigenvalues of its linear hover model (up to the joints' servo
    # compliance and the Euler step: measured 1.6 % on the unstable pairs).
    robot, params, avg = _averaged_robot()
    x = fq.reduced_state(robot, fl.init_state(robot, params))
    n = 50
    np.testing.assert_allclose(fq.period_map(robot, params, x, n), x, atol=1e-12)  # hover is an equilibrium
    lam = fq.floquet_exponents(np.asarray(fq.monodromy(robot, params, x, n)), n * robot.dt)[1]
    a, _ = fl.linearize_hover(avg)
    expected = [e for e in np.linalg.eigvals(a) if abs(e) > 1e-6]
    for e in expected:  # 2.42 +- 6.55j, 1.01 +- 5.49j, -9.56, -12.39 [1/s]
        assert np.min(np.abs(lam - e)) < 0.03 * abs(e), (e, lam[:10])
    flipped = fl.linearize_hover(CycleAveragedParams(horizontal_damping=0.0187, rate_damping=avg.rate_damping,
                                                     roll_speed_coupling=-1.96e-4, pitch_speed_coupling=1.97e-4))[0]
    wrong = [e for e in np.linalg.eigvals(flipped) if abs(e) > 1e-6]
    assert max(np.min(np.abs(lam - e)) / abs(e) for e in wrong) > 0.1  # the flipped coupling would be seen


@pytest.mark.slow
def test_monodromy_is_the_jacobian_of_the_cycle_map():
    # Short per-wing case: 40 steps at 250 Hz from the schedule start.
    robot = fl.make_robot("free", "wing", backend="rigid")
    n = 40
    params = fl.default_params(robot, frequency=1.0 / (n * robot.dt), amplitude=0.5)
    x = fq.reduced_state(robot, fl.init_state(robot, params, periodic=False))
    m = np.asarray(fq.monodromy(robot, params, x, n))
    errors = fq.jacobian_check(robot, params, x, m, n, steps=(1e-4,))
    assert errors[1e-4] < 2e-5, errors  # measured 2.4e-6 (1e-3: 2.4e-4, 1e-6: 8e-5, round-off)
    assert not np.allclose(m, np.eye(21), atol=1e-3)  # the map does something
    swapped = m[:, [1, 0] + list(range(2, 21))]  # roll and pitch columns exchanged
    assert fq.jacobian_check(robot, params, x, swapped, n, steps=(1e-4,))[1e-4] > 0.1


@pytest.mark.slow
def test_trim_is_a_fixed_point_with_a_neutral_yaw():
    robot = fl.make_robot("free", "wing", backend="rigid")
    n = fq.steps_per_period(robot, 42.2213)
    params = fl.default_params(robot, frequency=1.0 / (n * robot.dt))
    init = fl.init_state(robot, params, periodic=True)
    x0, phase = fq.reduced_state(robot, init), float(init.phase_offset)
    trim = fq.trim_orbit(robot, params, x0, n, phase=phase)
    assert float(trim.residual[-1]) < 1e-10 < float(trim.residual[0]), trim.residual
    tp = fq.trim_params(params, trim)
    x1, disp = fq.flow(robot, tp, trim.x, n, phase=phase)
    np.testing.assert_allclose(x1, trim.x, atol=1e-9)
    np.testing.assert_allclose(disp, 0.0, atol=1e-11)
    mu = fq.floquet_exponents(np.asarray(fq.monodromy(robot, tp, trim.x, n, phase=phase)), n * robot.dt)[0]
    assert np.min(np.abs(mu - 1.0)) < 1e-6  # yaw is neutral
