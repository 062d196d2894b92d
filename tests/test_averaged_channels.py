"""The cycle-averaged model's control matrix B (3, nc) and thrust tilt T
(2, nc): the plate robot written as a matrix is the plate robot (to
round-off), files without a matrix load as the plate robot, a channel robot's
moments are ``lambda_f B u`` with its thrust along the tilt, bad matrices are
named, and the lumped insect robot turns and lifts through them (a frequency
channel through L = k_f (f + df)^2).
"""

from __future__ import annotations

import pathlib
import tomllib

import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.aero.cycle_averaged import CycleAveragedParams, cycle_averaged_wrench
from flapjax.sim import flapper
from flapjax.sim.flapper import description as flapper_description
from flapjax.validation import ConfigError

INSECT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "flappers" / "insect"
#: The plate robot's thrust tilt: n_B ~ [-delta_r, -delta_p, 1].
PLATE_TILT = [[0.0, 1.0], [1.0, 0.0]]


def _plate_matrix(p: CycleAveragedParams) -> np.ndarray:
    return np.array([[float(p.roll_gain), 0.0], [0.0, -float(p.pitch_gain)], [0.0, 0.0]])


def _rotation(q) -> np.ndarray:
    w, x, y, z = np.asarray(q) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _states(n=5, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield dict(frequency=jnp.asarray(rng.uniform(30, 50)), plate=jnp.asarray(rng.uniform(-0.3, 0.3, 2)),
                   rot_world_body=jnp.asarray(_rotation(rng.normal(size=4))),
                   v_world=jnp.asarray(rng.normal(size=3)), w_body=jnp.asarray(rng.normal(size=3)),
                   plate_rate=jnp.asarray(rng.normal(size=2)))


def test_the_plate_robot_written_as_a_matrix_is_the_plate_robot():
    seed = CycleAveragedParams.from_json(flapper.AVERAGED_PATH)
    seed = CycleAveragedParams.from_dict({**seed.to_dict(), "roll_speed_coupling": 1e-3, "pitch_speed_coupling": -2e-3,
                                          "stroke_plane_damping": [1e-5, 2e-5]})
    as_matrix = CycleAveragedParams.from_dict({**seed.to_dict(), "control_matrix": _plate_matrix(seed).tolist(),
                                               "thrust_tilt": PLATE_TILT})
    flipped = CycleAveragedParams.from_dict({**as_matrix.to_dict(), "thrust_tilt": [[0.0, -1.0], [1.0, 0.0]]})
    for state in _states():
        want = cycle_averaged_wrench(seed, **state)
        got = cycle_averaged_wrench(as_matrix, **state)
        np.testing.assert_allclose(np.asarray(got.wrench), np.asarray(want.wrench), rtol=1e-13, atol=1e-18)
        np.testing.assert_allclose(np.asarray(got.thrust_direction_body), np.asarray(want.thrust_direction_body),
                                   rtol=1e-14, atol=1e-16)
        # the test can fail: a sign flipped in the tilt turns the force
        wrong = cycle_averaged_wrench(flipped, **state)
        assert not np.allclose(np.asarray(wrong.force_world), np.asarray(want.force_world), rtol=1e-6)


def test_files_without_a_matrix_load_as_the_plate_robot_and_matrices_round_trip():
    seed = CycleAveragedParams.from_json(flapper.AVERAGED_PATH)
    assert seed.control_matrix is None and seed.thrust_tilt is None
    assert "control_matrix" not in seed.to_dict() and "thrust_tilt" not in seed.to_dict()
    b = [[1e-7, 2e-7, 0.0], [-3e-7, 4e-7, 0.0], [0.0, 5e-9, 0.0]]
    p = CycleAveragedParams.from_dict({**seed.to_dict(), "control_matrix": b, "thrust_tilt": [[0.1, 0, 0], [0, 0, 0]]})
    back = CycleAveragedParams.from_dict(p.to_dict())
    np.testing.assert_array_equal(np.asarray(back.control_matrix), np.asarray(b))
    np.testing.assert_array_equal(np.asarray(back.thrust_tilt), np.asarray(p.thrust_tilt))


def test_a_channel_robots_moments_are_lambda_B_u_and_its_thrust_stays_upright():
    b = np.array([[0.0, 2e-7], [-3e-7, 0.0], [1e-9, 0.0]])
    p = CycleAveragedParams(lift_coefficient=6.5e-8, reference_frequency=125.0, mass=1e-4, control_matrix=b,
                            rate_damping=(1e-9, 2e-9, 3e-9))
    u, w = jnp.asarray([0.1, -0.2]), jnp.asarray([0.5, -1.0, 2.0])
    out = cycle_averaged_wrench(p, frequency=jnp.asarray(250.0), plate=u, rot_world_body=jnp.eye(3),
                                v_world=jnp.zeros(3), w_body=w)
    want = 4.0 * b @ np.asarray(u) - np.array([1e-9, 2e-9, 3e-9]) * np.asarray(w)  # lambda_f = (250 / 125)^2
    np.testing.assert_allclose(np.asarray(out.torque_body), want, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(out.force_world), [0.0, 0.0, 6.5e-8 * 250.0**2], rtol=1e-14, atol=1e-20)
    tilted = CycleAveragedParams(lift_coefficient=6.5e-8, control_matrix=b, thrust_tilt=[[0.0, 0.0], [0.5, 0.0]])
    n = cycle_averaged_wrench(tilted, frequency=jnp.asarray(125.0), plate=u, rot_world_body=jnp.eye(3),
                              v_world=jnp.zeros(3), w_body=w).thrust_direction_body
    np.testing.assert_allclose(np.asarray(n), np.array([0.0, -0.05, 1.0]) / np.sqrt(1.0025), rtol=1e-14, atol=1e-17)


@pytest.mark.parametrize("fields, message", [
    ({"control_matrix": [[1e-7, 0.0], [0.0, 1e-7]]}, r"control_matrix: expected shape \(3, N\)"),
    ({"control_matrix": np.zeros((3, 2)).tolist(), "thrust_tilt": np.zeros((2, 3)).tolist()},
     r"thrust_tilt: expected shape \(2, 2\)"),
    ({"thrust_tilt": PLATE_TILT}, "thrust_tilt: needs a control_matrix"),
    ({"control_matrix": [[float("nan"), 0.0], [0.0, 0.0], [0.0, 0.0]]}, "control_matrix: must be finite"),
], ids=["two rows", "tilt columns", "tilt without matrix", "nan"])
def test_bad_control_matrices_are_named(fields, message):
    with pytest.raises(ConfigError, match=message):
        CycleAveragedParams.from_dict(fields)


def test_a_channel_vector_of_the_wrong_length_is_named():
    p = CycleAveragedParams(control_matrix=np.zeros((3, 3)))
    with pytest.raises(ConfigError, match=r"plate: expected the channel vector, shape \(3,\)"):
        cycle_averaged_wrench(p, frequency=jnp.asarray(40.0), plate=jnp.zeros(2), rot_world_body=jnp.eye(3),
                              v_world=jnp.zeros(3), w_body=jnp.zeros(3))


def _insect_with_throttle():
    cfg = tomllib.loads((INSECT / "robot.toml").read_text())
    cfg["channels"].append({"name": "throttle", "kind": "frequency"})
    return flapper_description.description_from_dict(cfg, folder=INSECT)


def test_the_lumped_insect_turns_and_lifts_through_its_channels():
    """One averaged step of the lumped insect robot from rest: the body
    rates follow ``dt I^-1 lambda_f B u`` (linear in B, zero without input),
    the thrust is ``k_f (f + df)^2`` with a frequency channel's df, and the
    seed's gains are refused for a robot steered by other channels."""
    desc = _insect_with_throttle()
    robot = flapper.make_robot("lumped", "averaged", description=desc, backend="rigid")
    with pytest.raises(ConfigError, match="averaged: the robot's channels"):
        flapper.default_params(robot, description=desc, frequency=125.0)
    b = np.array([[0.0, 2e-7, 0.0], [-3e-7, 0.0, 0.0], [0.0, 0.0, 0.0]])

    def one_step(matrix, u):
        avg = CycleAveragedParams(lift_coefficient=6.5e-8, reference_frequency=125.0, mass=1e-4,
                                  control_matrix=matrix)
        params = flapper.default_params(robot, description=desc, frequency=125.0, plate=u, averaged=avg)
        new, diag = flapper.step(robot, params, flapper.init_state(robot, params))
        return np.asarray(new.data.angular_velocity), float(diag.lift_total), float(diag.frequency)

    w0, lift0, f0 = one_step(b, (0.0, 0.0, 0.0))
    np.testing.assert_allclose(w0, 0.0, atol=1e-15)
    w1, _, _ = one_step(b, (0.1, 0.0, 0.0))
    w2, _, _ = one_step(2 * b, (0.1, 0.0, 0.0))
    w3, _, _ = one_step(b, (0.0, 0.2, 0.0))
    np.testing.assert_allclose(w2, 2 * w1, rtol=1e-12)
    assert w1[1] < 0 < w3[0]  # stroke bias: -3e-8 N m about y; amplitude difference: +4e-8 N m about x
    assert abs(w1[0]) < 1e-3 * abs(w1[1]) and abs(w3[1]) < 1e-3 * abs(w3[0])
    _, lift, f = one_step(b, (0.0, 0.0, 10.0))
    assert f == pytest.approx(135.0) and f0 == pytest.approx(125.0)
    assert lift == pytest.approx(6.5e-8 * 135.0**2, rel=1e-12) and lift0 == pytest.approx(6.5e-8 * 125.0**2, rel=1e-12)


# ---------------------------------------------------------------------------
# The linear hover model and the gain design through the channels
# ---------------------------------------------------------------------------

#: The insect's identified control term (flapjax identify --robot examples/flappers/insect/robot.toml --quick).
INSECT_B = np.array([[0.0, 3.615e-5], [1.393e-5, 0.0], [0.0, 1.1e-12]])
INSECT_T = np.array([[-0.0767, 0.0], [0.0, 0.3141]])


def _insect_params(**extra):
    return CycleAveragedParams(lift_coefficient=8.076e-8, horizontal_damping=3.4e-4, rate_damping=(3.0e-8, 2.4e-8, 8.8e-8),
                               roll_speed_coupling=1.09e-6, pitch_speed_coupling=-3.15e-6, reference_frequency=125.0,
                               mass=1e-4, control_matrix=INSECT_B, thrust_tilt=INSECT_T, **extra)


def test_the_plate_robots_hover_model_through_its_matrix_is_unchanged():
    from flapjax.control.design import LinearHoverModel

    seed = CycleAveragedParams.from_json(flapper.AVERAGED_PATH)
    as_matrix = CycleAveragedParams.from_dict({**seed.to_dict(), "control_matrix": _plate_matrix(seed).tolist(),
                                               "thrust_tilt": PLATE_TILT})
    want, got = LinearHoverModel.from_averaged(seed), LinearHoverModel.from_averaged(as_matrix)
    assert got.channels == want.channels == (1, 0) and got.channel_signs == want.channel_signs == (-1.0, -1.0)
    np.testing.assert_allclose(got.control_gain, want.control_gain, rtol=1e-15)
    assert got.thrust_gain == want.thrust_gain == (1.0, 1.0)


def test_the_insect_hover_model_is_the_linearized_averaged_model():
    """Each axis' (A, B) of the channel model equals the rows of
    :func:`linearize_hover` (forward-mode Jacobians of the averaged model)
    for the channel that drives it, in tilt coordinates."""
    from flapjax.aero.cycle_averaged import linearize_hover
    from flapjax.control.design import LinearHoverModel, axis_matrices

    p, inertia = _insect_params(), (2.0e-10, 1.5e-10, 1.0e-10)  # (I_xx, I_yy, I_zz) [kg m^2]
    a, b = linearize_hover(p, inertia)
    model = LinearHoverModel.from_averaged(p, inertia=(inertia[1], inertia[0]))
    assert model.channels == (0, 1) and model.channel_signs == (1.0, -1.0)  # stroke bias pitches, u_y = -u rolls
    for axis, idx, state_sign in ((0, [0, 2, 5, 7], np.ones(4)), (1, [1, 3, 4, 6], np.array([1.0, 1.0, -1.0, -1.0]))):
        ai, bi = axis_matrices(model, axis)
        lin_a = state_sign[:, None] * a[np.ix_(idx, idx)] * state_sign[None, :]
        lin_b = state_sign * b[idx, model.channels[axis]] * model.channel_signs[axis]
        np.testing.assert_allclose(bi[:, 0], lin_b, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ai, lin_a, rtol=1e-9, atol=1e-12)
    # the stroke bias tilts the thrust forward as it pitches the robot forward
    assert model.thrust_gain[0] > 0 and model.control_gain[0] > 0


def test_designed_gains_stabilize_the_insect_hover_model():
    from flapjax.control.design import (LinearHoverModel, closed_loop_eigenvalues, design_feedback,
                                        design_gains, feedback_from_gains)

    p = _insect_params()
    model = LinearHoverModel.from_averaged(p, inertia=(1.5e-10, 2.0e-10), plate_lag=0.0)
    gains = design_gains(model, hover_frequency=float(p.hover_frequency))
    k = feedback_from_gains(gains, model.gravity)
    assert np.all(closed_loop_eigenvalues(model, k).real < 0)
    # and the test can fail: the feedback with the channel's sign flipped destabilizes
    assert np.any(closed_loop_eigenvalues(model, -design_feedback(model)).real > 0)


def test_designed_gains_hover_the_lumped_insect_from_randomized_starts():
    """The hover controller with gains designed through the channels holds
    the lumped averaged insect (1 cm, 0.2 rad starts) within 1 mm after 1.5 s;
    the controller's plate-order output ``(-u_y, -u_x)`` goes to channel
    ``j_i`` as ``s_i u_i``. With the channels swapped it does not."""
    import jax

    from flapjax.control.design import LinearHoverModel, design_gains
    from flapjax.control.hover import hover_command, hover_state
    from flapjax.sim.flapper.hover import base_pose
    from flapjax.sim.flapper.robot import FlapperCommand

    desc = flapper.load_robot_description(INSECT / "robot.toml")
    avg = _insect_params()
    robot = flapper.make_robot("lumped", "averaged", description=desc, backend="rigid", timestep=1e-4)
    f_h = float(avg.hover_frequency)
    model = LinearHoverModel.from_averaged(avg, inertia=(1.316e-9, 1.374e-9), plate_lag=0.0)
    gains = design_gains(model, hover_frequency=f_h, cycle_filter=False, plate_limit=0.3,
                         frequency_limits=desc.frequency_range)
    params = flapper.default_params(robot, description=desc, frequency=f_h, averaged=avg)
    target = jnp.asarray([0.0, 0.0, 0.5])

    def fly(pos0, quat0, channels):
        st = flapper.init_state(robot, params, position=pos0, quat=quat0)
        hs = hover_state(gains, hover_frequency=f_h, position=pos0, velocity=jnp.zeros(3), rot_world_body=jnp.eye(3),
                         w_body=jnp.zeros(3), dt=robot.dt, target=target)

        def one(carry, _):
            st, hs = carry
            pose = base_pose(robot, st.data)
            hs, cmd = hover_command(gains, hs, hover_frequency=f_h, gravity=9.81, target=target,
                                    position=pose.position, velocity=pose.velocity,
                                    rot_world_body=pose.rot_world_body, w_body=pose.w_body, dt=robot.dt)
            u = jnp.stack([-cmd.plate[1], -cmd.plate[0]])
            c = jnp.zeros(2).at[channels[0]].set(model.channel_signs[0] * u[0]).at[channels[1]].set(
                model.channel_signs[1] * u[1])
            st, _ = flapper.step(robot, params, st, FlapperCommand(frequency=cmd.frequency, plate=c))
            return (st, hs), None

        (st, _), _ = jax.lax.scan(one, (st, hs), None, length=15000)
        return jnp.linalg.norm(base_pose(robot, st.data).position - target)

    rng = np.random.default_rng(0)
    pos0 = np.asarray(target) + rng.uniform(-0.01, 0.01, (8, 3))
    tilt = rng.uniform(-0.2, 0.2, (8, 2))
    angle = np.hypot(tilt[:, 0], tilt[:, 1])
    quat0 = np.c_[np.cos(angle / 2), np.sin(angle / 2)[:, None] * np.c_[tilt, np.zeros(8)] / angle[:, None]]
    for channels, holds in ((model.channels, True), (model.channels[::-1], False)):
        err = np.asarray(jax.jit(jax.vmap(lambda p, q: fly(p, q, channels)))(jnp.asarray(pos0), jnp.asarray(quat0)))
        assert bool(np.all(err < 1e-3)) == holds, (channels, err)
