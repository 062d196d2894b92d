"""Hover controller: command signs, and closed-loop hover with both aerodynamic models."""

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.control.hover import HoverGains, HoverState, hover_command
from flapjax.math import rot_x, rot_y
from flapjax.sim import flapper as fl

G = HoverGains()
FH = 42.2213


def cmd(position=(0, 0, 0.5), velocity=(0, 0, 0), rot=jnp.eye(3), w=(0, 0, 0), target=(0, 0, 0.5)):
    return hover_command(
        G, HoverState(), hover_frequency=jnp.asarray(FH), gravity=jnp.asarray(9.81), target=jnp.asarray(target, float),
        position=jnp.asarray(position, float), velocity=jnp.asarray(velocity, float), rot_world_body=rot,
        w_body=jnp.asarray(w, float), dt=1e-4,
    )[1]


def test_equilibrium_is_hover_frequency_and_level_plate():
    c = cmd()
    assert float(c.frequency) == pytest.approx(FH, rel=1e-12)
    np.testing.assert_allclose(c.plate, 0.0, atol=1e-15)


def test_altitude_loop_signs():
    assert float(cmd(position=(0, 0, 0.49)).frequency) > FH  # too low: flap faster
    assert float(cmd(velocity=(0, 0, 0.1)).frequency) < FH  # climbing: slow down
    # a tilted robot flaps faster to keep its weight
    assert float(cmd(rot=rot_y(jnp.asarray(0.2))).frequency) > FH


def test_position_and_attitude_loops_use_crossed_plate_joints():
    # target ahead (+x): tilt toward +x, i.e. a positive pitch moment: roll_joint < 0
    c = cmd(target=(0.1, 0.0, 0.5))
    assert float(c.tilt_target[0]) > 0 and float(c.plate[1]) < 0 and abs(float(c.plate[0])) < 1e-12
    # target to the left (+y): tilt toward +y, a negative roll moment: pitch_joint < 0
    c = cmd(target=(0.0, 0.1, 0.5))
    assert float(c.tilt_target[1]) > 0 and float(c.plate[0]) < 0 and abs(float(c.plate[1])) < 1e-12
    # body tilted toward +x with nothing to do: command a negative pitch moment (roll_joint > 0)
    assert float(cmd(rot=rot_y(jnp.asarray(0.1))).plate[1]) > 0
    # body tilted toward +y (rotation about -x): positive roll moment (pitch_joint > 0)
    assert float(cmd(rot=rot_x(jnp.asarray(-0.1))).plate[0]) > 0


@pytest.fixture(scope="module")
def lumped():
    return fl.make_robot("lumped", "averaged")


def test_averaged_free_hover_beats_the_seed(lumped):
    """Seed 11.3: from z = 0.5 m for 2.5 s. Start 2 cm low, drifting and tilted."""
    p = fl.default_params(lumped, frequency=42.0)
    s = fl.init_state(
        lumped, p, position=jnp.array([0.02, -0.01, 0.48]), quat=jnp.array([1.0, 0.03, -0.02, 0.05]),
        velocity=jnp.array([0.05, 0.0, -0.05]), angular_velocity=jnp.array([0.3, 0.2, 0.0]),
    )
    target = jnp.array([0.0, 0.0, 0.5])
    fin, rec = jax.jit(lambda s: fl.hover_rollout(lumped, p, s, 25000, target=target, record_every=50))(s)
    z = np.asarray(rec.position[:, 2])
    assert bool(fin.healthy) and np.all(np.abs(z - 0.5) < 0.05)
    last = np.asarray(rec.time) > 2.0
    f_mean = float(np.mean(np.asarray(rec.frequency)[last]))
    f_h = float(p.averaged.hover_frequency)
    assert abs(f_mean / f_h - 1) < 0.002
    assert abs(z[-1] - 0.5) < 0.005
    assert np.linalg.norm(np.asarray(rec.position[-1, :2])) < 0.005


@pytest.mark.slow  # a per-wing MJX free flight (one compile of the closed-loop hover)
def test_per_wing_free_flight_holds_altitude_with_the_designed_controller():
    """0.3 s of the per-wing robot from its periodic orbit under the designed
    gains (the 2 s acceptance flight is in tests/test_flapper_hover_flight.py)."""
    from flapjax.control.design import design_gains

    robot = fl.make_robot("free", "wing")
    p = fl.default_params(robot, frequency=FH)
    target = jnp.array([0.0, 0.0, 0.5])
    s = fl.init_state(robot, p, position=target, periodic=True)
    prior = fl.BasePose(position=target, velocity=jnp.zeros(3), rot_world_body=jnp.eye(3), w_body=jnp.zeros(3))
    fin, rec = jax.jit(lambda s: fl.hover_rollout(robot, p, s, 3000, gains=design_gains(), record_every=100,
                                                  prior=prior))(s)
    pos = np.asarray(rec.position)
    assert bool(fin.healthy)
    # flapping rocks the body; the loop holds it near the set point with the plate well inside its limit
    assert np.all(np.abs(pos[:, 2] - 0.5) < 0.015)
    assert np.all(np.abs(pos[:, :2]) < 0.01)
    assert np.all(np.abs(np.asarray(rec.tilt)) < np.deg2rad(10.0))
    assert np.all(np.abs(np.asarray(rec.plate)) < 0.3)
    # the frequency stays near hover: the per-wing lift is near k_f f^2
    assert abs(float(np.mean(np.asarray(rec.frequency))) / float(p.averaged.hover_frequency) - 1) < 0.05


def test_hover_rollout_options_plate_step_and_first_step_records():
    """The one hover rollout: explicit f_h and g equal to the defaults change
    nothing; "first" records sample the same flight at block starts; a plate
    step adds its offset to the controller's plate command inside its window only."""
    robot = fl.make_robot("lumped", "averaged", backend="rigid")
    p = fl.default_params(robot)
    s = fl.init_state(robot, p, position=jnp.array([0.01, 0.0, 0.49]), angular_velocity=jnp.array([0.2, -0.1, 0.0]))

    def run(**kw):
        return jax.jit(lambda s: fl.hover_rollout(robot, p, s, 400, record_every=20, checkpoint=False, **kw))(s)

    fin, block = run()
    fin2, same = run(hover_frequency=p.averaged.hover_frequency, gravity=p.averaged.gravity)
    chex.assert_trees_all_equal(same, block)  # every recorded field, bit for bit
    _, first = run(record="first")
    assert float(first.time[0]) == 0.0
    np.testing.assert_array_equal(first.position[0], s.data.position)
    np.testing.assert_allclose(first.position[1:], block.position[:-1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(first.tilt[1:], block.tilt[:-1], rtol=0, atol=1e-15)
    # the plate offset begins at step 100 (record 5) and lasts 100 steps
    offset = jnp.array([0.05, -0.02])
    _, stepped = run(record="first", plate_step=fl.PlateStep(offset=offset, start=0.00995, length=0.01))
    np.testing.assert_array_equal(stepped.plate[:5], first.plate[:5])
    np.testing.assert_array_equal(stepped.position[:6], first.position[:6])
    np.testing.assert_allclose(stepped.plate[5], first.plate[5] + offset, rtol=0, atol=1e-15)
    assert float(jnp.abs(stepped.position[-1] - first.position[-1]).max()) > 1e-6  # the step moved the robot


# ---------------------------------------------------------------------------
# Cycle-averaged estimate and the gains designed on the linear hover model
# ---------------------------------------------------------------------------

from flapjax.control import design as dsg  # noqa: E402
from flapjax.control.estimate import cycle_filter_init, cycle_filter_update, notch_response  # noqa: E402
from flapjax.validation import ConfigError  # noqa: E402

DT = 1e-4
F_BEAT = 42.0


@pytest.fixture(scope="module")
def notch_run():
    """The notch bank (f, 2f, 3f; Q = 1) over 1 s of several test signals at once."""
    t = np.arange(0.0, 1.0, DT)
    ramp = 0.2 * t
    x = np.stack([np.sin(2 * np.pi * F_BEAT * t), np.cos(2 * np.pi * 2 * F_BEAT * t + 0.3),
                  np.sin(2 * np.pi * 3 * F_BEAT * t), ramp, ramp + 10.0 * np.sin(2 * np.pi * F_BEAT * t)], axis=1)
    st = cycle_filter_init(jnp.asarray(x[0]), jnp.asarray(F_BEAT), DT)
    run = jax.jit(lambda st, x: jax.lax.scan(lambda s, xi: cycle_filter_update(s, xi, jnp.asarray(F_BEAT), DT), st, x))
    _, y = run(st, jnp.asarray(x))
    return t, x, np.asarray(y)


def test_notches_remove_the_wingbeat_harmonics(notch_run):
    t, x, y = notch_run
    late = t > 0.5
    for i in range(3):  # unit sinusoids at f, 2f, 3f: attenuated by more than 60 dB once settled
        assert np.max(np.abs(y[late, i])) < 1e-3, i
    # a +/-10 rad/s wingbeat on top of a ramp leaves the ramp
    np.testing.assert_allclose(y[late, 4], y[late, 3], atol=1e-2)


def test_notches_pass_a_slow_ramp_with_bounded_lag(notch_run):
    t, x, y = notch_run
    late = t > 0.2
    lag = (x[late, 3] - y[late, 3]) / 0.2  # ramp of 0.2 units/s: the lag in seconds
    expected = dsg.notch_delay(F_BEAT)  # sum 1 / (Q 2 pi h f) = 6.9 ms
    assert np.all(np.abs(lag - expected) < 0.1 * expected)
    assert expected < 0.01
    # the design model of the lag: the phase of the bank at 3 Hz is -omega * delay
    w = 2 * np.pi * 3.0
    assert float(np.angle(notch_response(w, F_BEAT))) == pytest.approx(-w * expected, rel=0.05)


def test_notch_bad_input():
    with pytest.raises(ConfigError, match="harmonics"):
        cycle_filter_init(jnp.zeros(2), 40.0, DT, harmonics=())
    with pytest.raises(ConfigError, match="quality"):
        cycle_filter_init(jnp.zeros(2), 40.0, DT, quality=0.0)
    st = cycle_filter_init(jnp.zeros(2), 40.0, DT, harmonics=(1, 2))
    with pytest.raises(ConfigError, match="notches"):
        cycle_filter_update(st, jnp.zeros(2), 40.0, DT)


def test_linear_model_has_the_unstable_coupled_mode_and_lqr_stabilizes_it():
    model = dsg.LinearHoverModel.per_wing(estimate_lag=dsg.notch_delay(42.2))
    a, b = dsg.linear_hover_model(model)
    assert a.shape == (8, 8) and b.shape == (8, 2)
    assert np.max(np.linalg.eigvals(a).real) > 1.0  # the speed-to-moment coupling destabilizes hover
    no_coupling = dsg.LinearHoverModel.per_wing(coupling=(0.0, 0.0))
    assert np.max(np.linalg.eigvals(dsg.linear_hover_model(no_coupling)[0]).real) < 1e-9
    k = dsg.design_feedback(model)
    # the gain is the Riccati solution's: K = R^-1 B^T P, and A - B K is stable
    w = dsg.LqrWeights()
    q = np.diag([1 / w.position**2, 1 / w.velocity**2, 1 / w.tilt**2, 1 / w.rate**2])
    for i in (0, 1):
        ai, bi = dsg.axis_matrices(model, i)
        p = __import__("scipy").linalg.solve_continuous_are(ai, bi, q, np.array([[1 / w.plate**2]]))
        np.testing.assert_allclose(k[i], (w.plate**2 * bi.T @ p)[0], rtol=1e-10)
        res = ai.T @ p + p @ ai - p @ bi @ bi.T @ p * w.plate**2 + q
        assert np.max(np.abs(res)) < 1e-6 * np.max(np.abs(q))
    assert np.max(dsg.closed_loop_eigenvalues(model, k, lags=False).real) < -0.5
    # still stable with the plate servo and the estimate's delay as first-order lags
    assert np.max(dsg.closed_loop_eigenvalues(model, k).real) < -0.5
    # the controller's cascade form is the same state feedback
    gains = dsg.design_gains(model, coupling_scale=1.0)
    assert gains.cycle_filter
    np.testing.assert_allclose(dsg.feedback_from_gains(gains, model.gravity), k, rtol=1e-6)
    # the default design (half the coupling): positive rate feedback on both axes, and a
    # closed loop that stays stable from no coupling to three times the identified one
    gains = dsg.design_gains(model)
    k_half = dsg.feedback_from_gains(gains, model.gravity)
    assert np.all(k_half[:, 3] > 0)
    # (the plate servo and the controller's 6 ms command low-pass, with margin, as one 17 ms lag)
    for s in (0.0, 0.5, 1.0, 2.0, 3.0):
        scaled = dsg.LinearHoverModel.per_wing(estimate_lag=model.estimate_lag, plate_lag=0.017,
                                               coupling=tuple(s * c for c in model.coupling))
        assert np.max(dsg.closed_loop_eigenvalues(scaled, k_half).real) < -0.1, s
    # on the stiff-plate robot's coupling the full-coupling design keeps positive rate feedback too
    assert np.all(k[:, 3] > 0)
    # the altitude PID puts its three poles at -5 rad/s on z'' = (2 g / f_h) df
    bz = 2 * 9.81 / 42.2213
    poles = np.roots([1, bz * float(gains.altitude_d), bz * float(gains.altitude_p), bz * float(gains.altitude_i)])
    np.testing.assert_allclose(poles.real, -5.0, atol=1e-3)


def test_designed_gains_command_signs_and_filter_memory():
    gains = dsg.design_gains(command_lag=0.0)
    with pytest.raises(ConfigError, match="hover_state"):
        hover_command(gains, HoverState(), hover_frequency=jnp.asarray(FH), gravity=jnp.asarray(9.81),
                      target=jnp.zeros(3), position=jnp.zeros(3), velocity=jnp.zeros(3), rot_world_body=jnp.eye(3),
                      w_body=jnp.zeros(3), dt=DT)
    from flapjax.control.hover import hover_state

    kw = {"hover_frequency": jnp.asarray(FH), "position": jnp.array([0.0, 0.0, 0.5]), "velocity": jnp.zeros(3),
          "rot_world_body": jnp.eye(3), "w_body": jnp.zeros(3), "dt": DT}
    hs = hover_state(gains, target=jnp.array([0.1, 0.0, 0.5]), **kw)
    # the feedback fades in over filter_settle: nothing at the start, all of it after
    _, c0 = hover_command(gains, hs, gravity=jnp.asarray(9.81), target=jnp.array([0.1, 0.0, 0.5]), **kw)
    np.testing.assert_allclose(c0.plate, 0.0, atol=1e-15)
    hs = eqx.tree_at(lambda h: h.time, hs, jnp.asarray(1.0))
    hs2, c = hover_command(gains, hs, gravity=jnp.asarray(9.81), target=jnp.array([0.1, 0.0, 0.5]), **kw)
    assert float(c.plate[1]) < 0 and abs(float(c.plate[0])) < 1e-12  # target ahead: tilt toward +x
    assert float(c.frequency) == pytest.approx(FH, rel=1e-9)
    chex.assert_trees_all_equal_shapes_and_dtypes(hs2, hs)  # a scan carry: the state keeps its structure
    with pytest.raises(ConfigError, match="attitude_p"):
        HoverGains(attitude_p=jnp.ones(3))


def test_linear_model_from_the_averaged_models_linearization():
    """The averaged model with the per-wing coupling, linearized by autodiff,
    gives the same per-axis matrices as the design's own linear model."""
    from flapjax.aero.cycle_averaged import CycleAveragedParams, linearize_hover

    inertia = (4.14e-6, 4.99e-6)
    p = CycleAveragedParams(roll_speed_coupling=8.4e-4, pitch_speed_coupling=-4.7e-4, rate_damping=(3.2e-5, 1.9e-5, 1e-5),
                            horizontal_damping=0.045)
    a, b = linearize_hover(p, np.diag([inertia[1], inertia[0], 3e-6]))
    m = dsg.model_from_linearization(a, b, inertia=inertia, mass=float(p.mass))
    np.testing.assert_allclose(m.coupling, (-4.7e-4, -8.4e-4), rtol=1e-6)
    np.testing.assert_allclose(m.rate_damping, (1.9e-5, 3.2e-5), rtol=1e-6)
    np.testing.assert_allclose(m.horizontal_damping, (0.045, 0.045), rtol=1e-6)
    ref = dsg.LinearHoverModel.from_averaged(p, inertia=inertia, coupling=(-4.7e-4, -8.4e-4))
    for i in (0, 1):
        for x, y in zip(dsg.axis_matrices(m, i), dsg.axis_matrices(ref, i)):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-9)


def _rot_z(a):
    return np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])


def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def test_rate_feedback_damps_the_measured_tilt_rate_in_the_heading_frame():
    # The derivative term must oppose the rate at which the body z axis tilts
    # toward the heading frame's +x and +y, whatever the yaw: measure that
    # rate by finite differences of the attitude itself (R' = R [w]x).
    gains = HoverGains(attitude_p=5.0, attitude_d=0.3)
    yaw, w = 0.6, np.array([0.4, -0.7, 0.2])  # commands well inside the plate limit
    rot = _rot_z(yaw) @ np.asarray(rot_x(jnp.asarray(0.02))) @ np.asarray(rot_y(jnp.asarray(-0.01)))

    def heading_tilt(r):
        z = r[:, 2]
        return _rot_z(-yaw)[:2, :2] @ np.array([np.arctan2(z[0], z[2]), np.arctan2(z[1], z[2])])

    h = 1e-6
    rate = (heading_tilt(rot @ (np.eye(3) + h * _hat(w))) - heading_tilt(rot @ (np.eye(3) - h * _hat(w)))) / (2 * h)
    common = dict(hover_frequency=jnp.asarray(FH), gravity=jnp.asarray(9.81), target=jnp.array([0.0, 0.0, 0.5]),
                  position=jnp.array([0.0, 0.0, 0.5]), velocity=jnp.zeros(3), rot_world_body=jnp.asarray(rot), dt=1e-4)
    moving = hover_command(gains, HoverState(), w_body=jnp.asarray(w), **common)[1]
    still = hover_command(gains, HoverState(), w_body=jnp.zeros(3), **common)[1]
    assert float(jnp.max(jnp.abs(jnp.concatenate([moving.plate, still.plate])))) < 0.9 * float(gains.plate_limit)
    # plate = [-u_y, -u_x], so the rate part of u is -(plate_x, plate_y) swapped.
    du = -np.array([moving.plate[1] - still.plate[1], moving.plate[0] - still.plate[0]])
    # The yaw rate tilts a tilted body's axis a little too; the controller
    # uses the level-body rates (q, -p), exact to first order in the tilt.
    np.testing.assert_allclose(du, -0.3 * rate, rtol=0.02)
    np.testing.assert_allclose(du, -0.3 * np.array([w[1], -w[0]]), rtol=1e-12)


def test_commands_match_the_control_law_term_by_term():
    # Scalar gains, no cycle filter: every term of the law written out.
    gains = HoverGains(attitude_d=0.3)
    yaw = -0.8
    rot = _rot_z(yaw) @ np.asarray(rot_y(jnp.asarray(0.04)))
    target, pos, vel = np.array([0.05, -0.02, 0.5]), np.array([0.0, 0.01, 0.497]), np.array([0.1, -0.05, 0.02])
    w, dt = np.array([0.2, 0.1, 0.0]), 1e-3
    state, c = hover_command(gains, HoverState(), hover_frequency=jnp.asarray(FH), gravity=jnp.asarray(9.81),
                             target=jnp.asarray(target), position=jnp.asarray(pos), velocity=jnp.asarray(vel),
                             rot_world_body=jnp.asarray(rot), w_body=jnp.asarray(w), dt=dt)
    err = target - pos
    f = FH / np.sqrt(rot[2, 2]) + 60.0 * err[2] + 40.0 * err[2] * dt - 20.0 * vel[2]
    np.testing.assert_allclose(c.frequency, f, rtol=1e-13)
    np.testing.assert_allclose(state.altitude_integral, err[2] * dt, rtol=1e-13)
    to_heading = _rot_z(-yaw)[:2, :2]
    tilt_target = to_heading @ (9.0 * err[:2] - 4.0 * vel[:2]) / 9.81
    np.testing.assert_allclose(c.tilt_target, tilt_target, rtol=1e-12)
    z = rot[:, 2]
    tilt = to_heading @ np.array([np.arctan2(z[0], z[2]), np.arctan2(z[1], z[2])])
    u = 5.0 * (tilt_target - tilt) - 0.3 * np.array([w[1], -w[0]])
    np.testing.assert_allclose(c.plate, [-u[1], -u[0]], rtol=1e-12)
    # The feed-forward keeps the weight on a tilted body: f_h / sqrt(cos tilt).
    tilted = cmd(rot=rot_y(jnp.asarray(0.2)))
    np.testing.assert_allclose(tilted.frequency, FH / np.sqrt(np.cos(0.2)), rtol=1e-13)


@pytest.mark.parametrize("lags", [(0.004, 0.0), (0.004, 0.011)])
def test_closed_loop_with_lags_has_the_characteristic_polynomial_of_the_lagged_loop(lags):
    """With ``u = -k s`` passed through first-order lags ``1 / (tau_j s + 1)``,
    ``det(sI - A_cl) = prod_j (s + 1/tau_j) det(sI - A) (1 + G(s) k (sI - A)^-1 b)``
    with ``G = prod_j 1 / (tau_j s + 1)`` (one input): a wrong row of the lag
    chain changes it, whether or not the loop stays stable."""
    import dataclasses

    model = dataclasses.replace(dsg.LinearHoverModel.per_wing(), plate_lag=lags[0], estimate_lag=lags[1])
    k = dsg.design_feedback(model)
    taus = [t for t in lags if t > 0]
    for axis in (0, 1):
        a, b = dsg.axis_matrices(model, axis)
        acl = dsg.closed_loop(model, k, axis)
        assert acl.shape == (4 + len(taus),) * 2
        kk = np.asarray(k, dtype=float)[axis]
        for s in (0.3 + 2.0j, -1.5 + 7.0j, 12.0 - 3.0j):
            lhs = np.linalg.det(s * np.eye(acl.shape[0]) - acl)
            resolvent = np.linalg.solve(s * np.eye(4) - a, b[:, 0])
            g = np.prod([1.0 / (t * s + 1.0) for t in taus])
            rhs = np.prod([s + 1.0 / t for t in taus]) * np.linalg.det(s * np.eye(4) - a) * (1.0 + g * kk @ resolvent)
            np.testing.assert_allclose(lhs, rhs, rtol=1e-9)


@pytest.mark.slow  # gradients through per-wing MJX free flights
def test_refine_gains_lowers_the_free_flight_loss_and_keeps_every_sign():
    from flapjax.control import design as dsg

    gains = dsg.design_gains()
    refined, history = fl.refine_gains(gains, iterations=2, duration=0.05, tilts=(0.05,), record_every=10)
    assert len(history) == 3 and history[-1] < history[0], history
    for name in fl.REFINED_GAINS:
        before, after = np.broadcast_to(getattr(gains, name), (2,)), np.asarray(getattr(refined, name))
        assert after.shape == (2,) and np.all(np.sign(after) == np.sign(before)), name
        assert not np.allclose(after, before), name
    assert refined.altitude_p == gains.altitude_p  # only the lateral gains move
    with pytest.raises(Exception, match="iterations"):
        fl.refine_gains(gains, iterations=0)
