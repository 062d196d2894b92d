"""The averaged model's plate-motion terms: the plate's inertial reaction
(the body turns back by kappa times the plate's turn) and the stroke-plane
damping (-D_s times the plate's rate about its joint axis), and the
phase-averaged free flights they are identified from."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.aero.cycle_averaged import PLATE_AXES, CycleAveragedParams, cycle_averaged_wrench, stroke_plane_torque
from flapjax.math import quat_to_mat
from flapjax.sim import flapper as fl
from flapjax.sim.flapper import free_flights as ff
from flapjax.aero.cycle_averaged import STROKE_PLANE_LAG_WINGBEATS
from flapjax.sim.flapper.plate_motion import stroke_plane_turn
from flapjax.validation import ConfigError

jax.config.update("jax_enable_x64", True)


def test_stroke_plane_torque_turns_against_each_joint_axis():
    p = CycleAveragedParams(stroke_plane_damping=(2e-5, 7e-5))
    # pitch_joint turns the plate about +x, roll_joint about -y
    np.testing.assert_allclose(stroke_plane_torque(p, jnp.array([1.0, 0.0])), [-2e-5, 0.0, 0.0], atol=1e-20)
    np.testing.assert_allclose(stroke_plane_torque(p, jnp.array([0.0, 1.0])), [0.0, 7e-5, 0.0], atol=1e-20)
    np.testing.assert_allclose(PLATE_AXES, [[1, 0, 0], [0, -1, 0]])


def test_zero_terms_and_no_rate_leave_the_seed_wrench_bit_identical():
    kw = dict(frequency=jnp.array(42.0), plate=jnp.array([0.02, -0.01]), rot_world_body=jnp.eye(3),
              v_world=jnp.array([0.1, -0.2, 0.0]), w_body=jnp.array([0.3, -0.1, 0.2]))
    seed = cycle_averaged_wrench(CycleAveragedParams(), **kw).wrench
    with_rate = cycle_averaged_wrench(CycleAveragedParams(), plate_rate=jnp.array([5.0, -3.0]), **kw).wrench
    np.testing.assert_array_equal(seed, with_rate)
    damped = cycle_averaged_wrench(CycleAveragedParams(stroke_plane_damping=(1e-5, 1e-5)),
                                   plate_rate=jnp.array([5.0, -3.0]), **kw).wrench
    np.testing.assert_allclose(damped[3:] - seed[3:], [-5e-5, -3e-5, 0.0], rtol=1e-12)


@pytest.mark.parametrize("values, match", [
    ({"plate_reaction": [1.2, 0.0]}, "plate_reaction"),
    ({"plate_reaction": [-1.0, 0.0]}, "plate_reaction"),
    ({"plate_reaction": [0.1]}, "plate_reaction"),
    ({"stroke_plane_damping": [float("nan"), 0.0]}, "stroke_plane_damping"),
])
def test_bad_plate_motion_values_name_the_field(values, match):
    with pytest.raises(ConfigError, match=match):
        CycleAveragedParams.from_dict(values)


def test_files_without_the_terms_load_with_zeros_and_new_ones_round_trip(tmp_path):
    old = {k: v for k, v in CycleAveragedParams().to_dict().items()
           if k not in ("plate_reaction", "stroke_plane_damping")}
    p = CycleAveragedParams.from_dict(old)
    np.testing.assert_array_equal(p.plate_reaction, [0.0, 0.0])
    np.testing.assert_array_equal(p.stroke_plane_damping, [0.0, 0.0])
    q = CycleAveragedParams(plate_reaction=(0.2, 0.05), stroke_plane_damping=(1e-5, 6e-5))
    np.testing.assert_array_equal(CycleAveragedParams.from_dict(q.to_dict()).stroke_plane_damping, [1e-5, 6e-5])


@pytest.fixture(scope="module")
def lumped():
    robot = fl.make_robot("lumped", "averaged", backend="rigid")
    return robot, jax.jit(lambda p, s, c: fl.step(robot, p, s, c)[0])


def _one_plate_step(lumped, averaged, delta):
    robot, step = lumped
    params = fl.default_params(robot, frequency=42.2, averaged=averaged)
    state = fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 0.5]))
    command = fl.FlapperCommand(frequency=jnp.asarray(42.2), plate=jnp.asarray(delta))
    return state, step(params, state, command)


def _held_plate(lumped, averaged, delta, n_steps):
    """The lumped robot after ``n_steps`` with the plate command held at ``delta``: (state, body rates (n, 3))."""
    robot, step = lumped
    params = fl.default_params(robot, frequency=42.2, averaged=averaged)
    state = fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 0.5]))
    command = fl.FlapperCommand(frequency=jnp.asarray(42.2), plate=jnp.asarray(delta))
    rates = []
    for _ in range(n_steps):
        state = step(params, state, command)
        rates.append(np.asarray(state.data.angular_velocity))
    return state, np.array(rates)


def test_the_lumped_body_turns_back_by_kappa_times_the_plate_turn(lumped):
    """The reaction is a body rate ``-kappa z'`` (a rate gyro sees it) whose
    integral turns the body back by ``kappa`` times the plate step about
    the joint's axis; with no damping nothing else turns it."""
    robot = lumped[0]
    kappa = CycleAveragedParams(plate_reaction=(0.25, 0.04), rate_damping=(0.0, 0.0, 0.0))
    plain = CycleAveragedParams(rate_damping=(0.0, 0.0, 0.0))
    delta, n = 0.02, 400  # 40 ms: 3.4 lag time constants
    for k, axis in ((0, np.array([1.0, 0.0, 0.0])), (1, np.array([0.0, -1.0, 0.0]))):
        command = np.zeros(2)
        command[k] = delta
        with_kappa, w_a = _held_plate(lumped, kappa, command, n)
        without, w_b = _held_plate(lumped, plain, command, n)
        # first step: the stroke plane's plate moves dt / (tau + dt) of the way (tau: half a wingbeat)
        lagged = delta * robot.dt / (STROKE_PLANE_LAG_WINGBEATS / 42.2 + robot.dt)
        np.testing.assert_allclose(w_a[0] - w_b[0], -[0.25, 0.04][k] * lagged / robot.dt * axis, rtol=1e-9,
                                   atol=1e-12)
        r_rel = np.asarray(quat_to_mat(without.data.quat)).T @ np.asarray(quat_to_mat(with_kappa.data.quat))
        sin_turn = 0.5 * np.array([r_rel[2, 1] - r_rel[1, 2], r_rel[0, 2] - r_rel[2, 0], r_rel[1, 0] - r_rel[0, 1]])
        turned = delta * (1 - (1 + robot.dt * 42.2 / STROKE_PLANE_LAG_WINGBEATS) ** -n)  # the lag's progress
        np.testing.assert_allclose(sin_turn, -np.sin([0.25, 0.04][k] * turned) * axis, rtol=2e-3, atol=1e-12)
        np.testing.assert_allclose(with_kappa.last_plate, command * turned / delta, rtol=1e-9)


def test_the_stroke_plane_follows_a_plate_step_in_half_a_wingbeat():
    # the lagged plate sums to the step (the turn-back is spread, not lost) and has the lag's time constant
    f, dt, step = 40.0, 1e-4, jnp.array([0.02, -0.01])
    z, turns = jnp.zeros(2), []
    for _ in range(5000):
        turns.append(stroke_plane_turn(step, z, jnp.asarray(f), dt))
        z = z + turns[-1]
    turns = np.asarray(turns)
    np.testing.assert_allclose(turns.sum(0), step, rtol=1e-9)
    tau = STROKE_PLANE_LAG_WINGBEATS / f
    k = int(round(tau / dt))
    np.testing.assert_allclose(turns[:k].sum(0) / step, 1 - (1 + dt / tau) ** -k, rtol=1e-9)
    assert 0.62 < float(turns[:k].sum(0)[0] / step[0]) < 0.64  # 1 - 1/e at one time constant


def test_stroke_plane_damping_gives_the_body_an_angular_impulse(lumped):
    robot, _ = lumped
    inertia = np.asarray(fl.lumped_inertia())
    damped = CycleAveragedParams(stroke_plane_damping=(2e-5, 7e-5))
    delta = np.array([0.02, -0.01])
    _, a = _one_plate_step(lumped, damped, delta)
    _, b = _one_plate_step(lumped, CycleAveragedParams(), delta)
    lagged = delta * robot.dt / (STROKE_PLANE_LAG_WINGBEATS / 42.2 + robot.dt)  # the stroke plane's turn
    impulse = -(np.array([2e-5, 7e-5]) * lagged) @ PLATE_AXES  # D_s * (turn / dt) over one step of dt
    dw = np.asarray(a.data.angular_velocity - b.data.angular_velocity)
    np.testing.assert_allclose(inertia @ dw, impulse, rtol=1e-3, atol=1e-12)


def test_phase_shifts_and_paired_response_align_each_onset():
    shifts = ff.phase_shifts(40.0, 2.5e-4, 2)
    np.testing.assert_array_equal(shifts, [0, 25])  # a quarter wingbeat: half of the half-wingbeat symmetry
    t = np.arange(400)
    # one manoeuvre, two phases, +/-: each world a ramp starting at its onset
    onset = np.array([20, 20, 70, 70])
    sign = np.array([1.0, -1.0, 1.0, -1.0])
    x = np.clip(t[None, :] - onset[:, None], 0, None) * sign[:, None] * np.array([1.0, 1.0, 3.0, 3.0])[:, None]
    out = np.asarray(ff.paired_response(x, 1, np.array([0, 50]), 1))[0]
    expected = 2.0 * np.clip(t[:350] - 20, 0, None)  # the mean of slopes 1 and 3, aligned at onset 20
    np.testing.assert_allclose(out, expected)
    with pytest.raises(ConfigError, match="phases"):
        ff.phase_shifts(40.0, 2.5e-4, 0)


def _settings(**over):
    s = {"amplitude": 0.03, "pulse_wingbeats": 2.0, "height": 0.5, "onset": 0.01, "horizon": 0.08,
         "timestep": 1e-4, "phases": 1, "backend": "rigid", "gust": 0.3, "gust_wingbeats": 4.0,
         "closed_loop_onset": 0.1, "closed_loop_horizon": 0.0}
    s.update(over)
    return s


@pytest.mark.parametrize("gust, closed_loop", [(0.0, 0.0), (0.3, 0.12)])
def test_the_fit_recovers_known_plate_motion_terms(monkeypatch, gust, closed_loop):
    """Data flown by the averaged model itself with known kappa, damping and
    (with gust pulses) speed and airspeed-rate couplings, open loop and (``closed_loop``)
    also under the designed gains: the Gauss-Newton fit through the rollout
    finds them again, and reports a residual far below the one without the
    terms."""
    import equinox as eqx

    from flapjax.identify.flapper import plate_motion as pm

    truth = CycleAveragedParams(plate_reaction=(0.15, 0.05), stroke_plane_damping=(3e-5, 5e-5),
                                rate_damping=(3e-5, 5e-5, 1e-4), roll_speed_coupling=-2e-5,
                                pitch_speed_coupling=-1.5e-4, airspeed_rate_coupling=(7e-7, 2.5e-6) if gust else (0, 0),
                                mass=0.0300, gravity=9.81)
    model = eqx.tree_at(lambda p: (p.plate_reaction, p.stroke_plane_damping), truth, (jnp.zeros(2), jnp.zeros(2)))
    model = eqx.tree_at(lambda p: p.rate_damping, model, jnp.array([2e-4, 2e-4, 1e-4]))
    if gust:  # the upstream (driven-base) couplings, which the gust pulses correct
        model = eqx.tree_at(lambda p: (p.roll_speed_coupling, p.pitch_speed_coupling), model,
                            (jnp.asarray(2e-4), jnp.asarray(-2e-4)))

    def measured_by_the_model(m, s, f_h, kw, gains=None):
        manoeuvres = pm.pulses(s, f_h)
        flights = ff.averaged_flights(truth, manoeuvres, timestep=float(s["timestep"]), gains=gains, **kw)
        return manoeuvres, flights, np.stack([flights.responses[x.name].tilt for x in manoeuvres])

    monkeypatch.setattr(pm, "_measured", measured_by_the_model)
    monkeypatch.setattr(fl, "robot_weight", lambda: (0.0300, 9.81))
    res = pm.study_plate_motion({"plate_motion": _settings(gust=gust, gust_wingbeats=2.0,
                                                           closed_loop_horizon=closed_loop)}, model)
    assert any(x.startswith("closed loop") for x in res.metrics["labels"]) == bool(closed_loop)
    if gust:
        np.testing.assert_allclose([res.values["L_v"], res.values["M_u"]], [-2e-5, -1.5e-4], rtol=1e-3)
        np.testing.assert_allclose(res.values["A_v"], [7e-7, 2.5e-6], rtol=1e-3)
        assert "gust" in res.metrics["labels"][2]
    else:
        assert "L_v" not in res.values
    np.testing.assert_allclose(res.values["kappa"], [0.15, 0.05], rtol=1e-4)
    np.testing.assert_allclose(res.values["D_s"], [3e-5, 5e-5], rtol=1e-4)
    np.testing.assert_allclose(res.values["D_w"], [3e-5, 5e-5, 1e-4], rtol=1e-4)
    assert res.metrics["rms_relative"] < 1e-4 < 0.1 < res.metrics["rms_relative_without_terms"]
    assert res.converged and np.all(np.asarray(res.std["kappa"]) >= 0)


@pytest.mark.parametrize("key, value, match", [
    ("pulse_wingbeats", 1.3, "half wingbeats"),
    ("pulse_wingbeats", 0.0, "pulse_wingbeats"),
    ("phases", 2.5, "phases"),
    ("timestep", 1e-3, "timestep"),
    ("amplitude", 1.0, "amplitude"),
    ("gust", -0.1, "gust"),
    ("gust_wingbeats", 0.1, "gust_wingbeats"),
    ("closed_loop_horizon", 5.0, "closed_loop_horizon"),
])
def test_bad_plate_motion_settings_name_the_field(key, value, match):
    from flapjax.identify.flapper.plate_motion import check_plate_motion_settings

    with pytest.raises(ConfigError, match=match):
        check_plate_motion_settings(_settings(**{key: value}))


def test_the_lumped_step_compiles_once_for_new_plate_commands():
    """New command values and a new last plate reuse the compiled step (no retrace)."""
    import chex

    robot = fl.make_robot("lumped", "averaged", backend="rigid")
    params = fl.default_params(robot, frequency=42.2, averaged=CycleAveragedParams(plate_reaction=(0.2, 0.1)))
    state = fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 0.5]))

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(s, plate):
        return fl.step(robot, params, s, fl.FlapperCommand(frequency=jnp.asarray(42.2), plate=plate))[0]

    z, w = np.zeros(2), robot.dt / (STROKE_PLANE_LAG_WINGBEATS / 42.2 + robot.dt)
    for plate in ([0.01, 0.0], [0.0, -0.02], [0.03, 0.01]):
        state = step(state, jnp.asarray(plate))
        z = z + (np.asarray(plate) - z) * w  # the stroke plane's plate, lagging the command
    np.testing.assert_allclose(state.last_plate, z, rtol=1e-12)
    with pytest.raises(AssertionError):
        ff.paired_response(np.zeros((6, 10)), 1, np.array([0, 1]), 1)  # 6 worlds are not 1 x 2 phases x 2 signs
