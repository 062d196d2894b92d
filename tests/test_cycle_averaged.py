"""Cycle-averaged hover model (seed section 10)."""

import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from flapjax import ConfigError
from flapjax.aero.cycle_averaged import CycleAveragedParams, cycle_averaged_wrench
from flapjax.math import rot_x, rot_y, rot_z
from flapjax.sim.flapper import AVERAGED_PATH

P = CycleAveragedParams.flapsim()
I3 = jnp.eye(3)
Z3 = jnp.zeros(3)


def wrench(f=42.0, plate=(0.0, 0.0), rot=I3, v=Z3, w=Z3, params=P):
    return cycle_averaged_wrench(params, frequency=jnp.asarray(f), plate=jnp.asarray(plate), rot_world_body=rot, v_world=v, w_body=w)


def test_seed_golden_values():
    # seed 10.1 / 10.3: k_f = 0.14858349039827917 / 30^2, f_h = 42.2213 Hz, L(42) = 0.291224 N
    assert float(P.lift_coefficient) == pytest.approx(1.6509276711e-4, rel=1e-10)
    assert float(P.hover_frequency) == pytest.approx(42.2213, abs=1e-4)
    out = wrench(42.0)
    assert float(out.force_world[2]) == pytest.approx(0.291224, abs=1e-6)
    np.testing.assert_allclose(out.wrench[3:], 0.0, atol=1e-15)


def test_plate_tilt_direction_and_crossed_moments():
    d = 0.1
    # roll_joint tilts the thrust toward -x and makes a negative *pitch* moment
    out = wrench(42.0, plate=(0.0, d))
    L = float(P.lift_coefficient) * 42.0**2
    np.testing.assert_allclose(out.force_world, L * np.array([-d, 0, 1]) / np.sqrt(1 + d * d), rtol=1e-12)
    np.testing.assert_allclose(out.torque_body, [0.0, -0.01144 / 20 * d, 0.0], rtol=1e-12)
    # pitch_joint tilts it toward -y and makes a positive *roll* moment
    out = wrench(42.0, plate=(d, 0.0))
    np.testing.assert_allclose(out.force_world, L * np.array([0, -d, 1]) / np.sqrt(1 + d * d), rtol=1e-12)
    np.testing.assert_allclose(out.torque_body, [0.01055 / 20 * d, 0.0, 0.0], rtol=1e-12)
    # moments scale with (f / 42)^2
    out21 = wrench(21.0, plate=(d, 0.0))
    assert float(out21.torque_body[0]) == pytest.approx(0.25 * 0.01055 / 20 * d, rel=1e-12)


def test_damping_is_dissipative_and_horizontal_only():
    v = jnp.array([0.3, -0.2, 0.5])
    w = jnp.array([1.0, -2.0, 3.0])
    out = wrench(42.0, v=v, w=w)
    L = float(P.lift_coefficient) * 42.0**2
    np.testing.assert_allclose(out.force_world, [-0.06 * 0.3, 0.06 * 0.2, L], rtol=1e-12)
    np.testing.assert_allclose(out.torque_body, [-2e-4, 4e-4, -3e-4], rtol=1e-12)
    assert float(out.force_world[:2] @ v[:2]) < 0 and float(out.torque_body @ w) < 0


def test_world_wrench_rotates_with_the_body():
    rot = rot_z(0.7) @ rot_y(0.2) @ rot_x(-0.3)
    w = jnp.array([0.5, -0.4, 0.2])
    out = wrench(40.0, plate=(0.05, -0.08), rot=rot, w=w)
    ref = wrench(40.0, plate=(0.05, -0.08), w=w)
    np.testing.assert_allclose(out.force_world, rot @ ref.force_world, rtol=1e-12)
    np.testing.assert_allclose(out.torque_world, rot @ ref.torque_body, rtol=1e-12)
    np.testing.assert_allclose(out.wrench, jnp.concatenate([out.force_world, out.torque_world]))


def test_jit_vmap_equals_loop_and_grads():
    fs = jnp.array([30.0, 40.0, 45.0])
    plates = jnp.array([[0.1, 0.0], [0.0, -0.2], [0.05, 0.05]])
    f = jax.jit(jax.vmap(lambda f, p: wrench(f, plate=p).wrench))
    batched = f(fs, plates)
    chex.assert_shape(batched, (3, 6))
    looped = jnp.stack([wrench(fs[i], plate=plates[i]).wrench for i in range(3)])
    chex.assert_trees_all_close(batched, looped, rtol=1e-12)

    def g(f, plate, kf_scale):
        params = CycleAveragedParams(lift_coefficient=1.6e-4 * kf_scale)
        return wrench(f, plate=plate, params=params, v=jnp.array([0.1, 0.2, 0.0]), w=jnp.array([0.3, 0.1, -0.2])).wrench

    check_grads(g, (jnp.asarray(41.0), jnp.array([0.1, -0.05]), jnp.asarray(1.0)), order=1, modes=("fwd", "rev"))


def test_json_round_trip_and_asset(tmp_path):
    p = CycleAveragedParams.from_json(AVERAGED_PATH)
    assert float(p.hover_frequency) == pytest.approx(42.2213, abs=1e-4)
    changed = CycleAveragedParams(lift_coefficient=2e-4, rate_damping=(1e-4, 2e-4, 3e-4))
    path = tmp_path / "p.json"
    path.write_text(json.dumps(changed.to_dict()))
    back = CycleAveragedParams.from_json(path)
    chex.assert_trees_all_equal_structs(changed, back)
    chex.assert_trees_all_close(changed, back, rtol=0.0, atol=0.0)


@pytest.mark.parametrize(
    "values, field",
    [
        ({"lift_coefficient": -1.0}, "lift_coefficient"),
        ({"rate_damping": [1e-4, 1e-4]}, "rate_damping"),
        ({"lift_coefficent": 1e-4}, "unknown"),
        ({"mass": 0.0}, "mass"),
    ],
)
def test_bad_params_name_the_field(values, field):
    with pytest.raises(ConfigError, match=field):
        CycleAveragedParams.from_dict(values)


# --- speed-to-moment coupling --------------------------------------------------

L_V, M_U = 8.4e-4, -4.7e-4
PC = CycleAveragedParams(roll_speed_coupling=L_V, pitch_speed_coupling=M_U)


def test_coupling_defaults_to_zero_and_leaves_the_seed_model_unchanged():
    assert float(P.roll_speed_coupling) == 0.0 and float(P.pitch_speed_coupling) == 0.0
    v, w = jnp.array([0.4, -0.3, 0.1]), jnp.array([0.2, 0.1, -0.3])
    rot = rot_z(0.3) @ rot_y(0.1)
    a = wrench(41.0, plate=(0.05, -0.02), rot=rot, v=v, w=w)
    b = wrench(41.0, plate=(0.05, -0.02), rot=rot, v=v, w=w, params=PC)
    np.testing.assert_array_equal(a.force_world, b.force_world)  # forces never see the coupling
    assert not np.allclose(a.torque_body, b.torque_body)


def test_coupling_sign_matches_drag_above_the_centre_of_mass():
    # Drag -k_v v acting at r = (0, 0, h) above the CoM: tau = r x F.
    k_v, h = 0.05, 0.015
    params = CycleAveragedParams(horizontal_damping=k_v, roll_speed_coupling=k_v * h, pitch_speed_coupling=-k_v * h,
                                 rate_damping=(0.0, 0.0, 0.0))
    # moving +x: negative pitch (body-y) moment, the top tilts back
    out = wrench(42.0, v=jnp.array([0.5, 0.0, 0.0]), params=params)
    assert float(out.torque_body[1]) < 0 and float(out.torque_body[0]) == 0.0
    # moving +y: positive roll (body-x) moment
    out_y = wrench(42.0, v=jnp.array([0.0, 0.5, 0.0]), params=params)
    assert float(out_y.torque_body[0]) > 0 and float(out_y.torque_body[1]) == 0.0
    for v in (jnp.array([0.5, 0.0, 0.0]), jnp.array([0.3, -0.7, 0.0])):
        drag = -k_v * v
        expected = np.cross([0.0, 0.0, h], drag)
        np.testing.assert_allclose(wrench(42.0, v=v, params=params).torque_body, expected, rtol=1e-12, atol=1e-18)


def test_coupling_acts_on_body_frame_speed():
    # Yawed 90 deg: world +x is body -y, so a world-x speed makes a negative roll moment.
    out = wrench(42.0, rot=rot_z(jnp.pi / 2), v=jnp.array([1.0, 0.0, 0.0]), params=PC)
    np.testing.assert_allclose(out.torque_body, [-L_V, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(out.torque_world, rot_z(jnp.pi / 2) @ out.torque_body, atol=1e-15)


def test_coupling_gradient_matches_finite_differences():
    def g(lv, mu, vx, vy):
        params = CycleAveragedParams(roll_speed_coupling=lv, pitch_speed_coupling=mu)
        rot = rot_z(0.4) @ rot_y(0.15) @ rot_x(-0.1)
        return wrench(40.0, plate=(0.02, 0.03), rot=rot, v=jnp.stack([vx, vy, 0.2]), params=params).wrench

    check_grads(g, (jnp.asarray(L_V), jnp.asarray(M_U), jnp.asarray(0.3), jnp.asarray(-0.4)), order=1,
                modes=("fwd", "rev"), eps=1e-6)


def test_old_json_without_coupling_loads_and_new_json_round_trips(tmp_path):
    old = json.loads(open(AVERAGED_PATH).read())
    old.pop("roll_speed_coupling", None)
    old.pop("pitch_speed_coupling", None)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    p = CycleAveragedParams.from_json(path)
    assert float(p.roll_speed_coupling) == 0.0 and float(p.pitch_speed_coupling) == 0.0
    path.write_text(json.dumps(PC.to_dict()))
    back = CycleAveragedParams.from_json(path)
    assert float(back.roll_speed_coupling) == L_V and float(back.pitch_speed_coupling) == M_U
    with pytest.raises(ConfigError, match="roll_speed_coupling"):
        CycleAveragedParams.from_dict({"roll_speed_coupling": [1.0, 2.0]})


def test_a_results_file_is_refused_with_the_file_to_load(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"study": "hover", "ground_coeff": 1.3}))
    with pytest.raises(ConfigError, match="results of a 'hover' identification; cycle-averaged parameters come from"):
        CycleAveragedParams.from_json(results)
    results.write_text(json.dumps({"study": "stand", "k_f": 1.6e-4}))
    (tmp_path / "cycle_averaged.json").write_text(json.dumps({"lift_coefficient": 1.6e-4}))
    with pytest.raises(ConfigError, match="'stand' identification; load cycle_averaged.json from the same folder"):
        CycleAveragedParams.from_json(results)
    assert float(CycleAveragedParams.from_json(tmp_path / "cycle_averaged.json").lift_coefficient) == 1.6e-4


# --- linear model about hover ----------------------------------------------------

INERTIA = np.diag([5.0e-6, 4.1e-6, 2.9e-6])


def test_linearize_hover_matches_finite_differences_and_closed_form():
    from flapjax.aero.cycle_averaged import HOVER_INPUT, HOVER_STATE, hover_dynamics, linearize_hover

    d_w = (3.2e-5, 1.9e-5, 2.3e-4)  # the per-wing model's rate damping
    params = CycleAveragedParams(roll_speed_coupling=L_V, pitch_speed_coupling=M_U, horizontal_damping=0.043,
                                 rate_damping=d_w)
    A, B = linearize_hover(params, INERTIA)
    chex.assert_shape([A, B], [(len(HOVER_STATE), len(HOVER_STATE)), (len(HOVER_STATE), len(HOVER_INPUT))])
    chex.assert_tree_all_finite((A, B))
    f_h = params.hover_frequency
    dyn = jax.jit(lambda s, u: hover_dynamics(params, s, u, inertia=jnp.asarray(INERTIA), frequency=f_h))
    s0, u0, eps = np.zeros(8), np.zeros(2), 1e-6
    fd_a = np.stack([(dyn(s0 + eps * e, u0) - dyn(s0 - eps * e, u0)) / (2 * eps) for e in np.eye(8)], axis=1)
    fd_b = np.stack([(dyn(s0, u0 + eps * e) - dyn(s0, u0 - eps * e)) / (2 * eps) for e in np.eye(2)], axis=1)
    np.testing.assert_allclose(A, fd_a, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(B, fd_b, rtol=1e-6, atol=1e-6)
    g, m, k_v = 9.81, 0.03, 0.043
    lam = float(f_h / 42.0) ** 2
    expected = {(2, 5): g, (3, 4): -g, (2, 2): -k_v / m, (3, 3): -k_v / m, (4, 6): 1.0, (5, 7): 1.0,
                (6, 6): -d_w[0] / INERTIA[0, 0], (7, 7): -d_w[1] / INERTIA[1, 1],
                (6, 3): L_V / INERTIA[0, 0], (7, 2): M_U / INERTIA[1, 1]}
    for (i, j), value in expected.items():
        assert A[i, j] == pytest.approx(value, rel=1e-9), (i, j)
    np.testing.assert_allclose(B[[2, 3, 6, 7]], [[0, -g], [-g, 0], [lam * 0.01055 / 20 / INERTIA[0, 0], 0],
                                                 [0, -lam * 0.01144 / 20 / INERTIA[1, 1]]], rtol=1e-9, atol=1e-12)
    # with the per-wing coupling the open-loop lateral mode is unstable; without it no mode grows
    assert np.max(np.linalg.eigvals(A).real) > 1.0
    A0, _ = linearize_hover(eqx_replace(params, roll_speed_coupling=0.0, pitch_speed_coupling=0.0), INERTIA)
    assert np.max(np.linalg.eigvals(A0).real) <= 1e-9
    with pytest.raises(ConfigError, match="inertia"):
        linearize_hover(params, [1.0, 2.0])


def eqx_replace(params, **changes):
    return CycleAveragedParams.from_dict({**params.to_dict(), **changes})


@pytest.mark.parametrize("inertia, match", [
    ([1e-5, 1e-5, 3e-5], "linearize_hover.inertia: principal moments must satisfy the triangle inequality"),
    ([[1e-5, 0, 0], [0, -1e-5, 0], [0, 0, 1e-5]], "linearize_hover.inertia: must be positive definite"),
    ([1e-5, 1e-5, 1e-5, 1e-5], "linearize_hover.inertia: expected 3 principal moments, 6 values"),
])
def test_linearize_hover_refuses_an_unphysical_inertia(inertia, match):
    from flapjax.aero.cycle_averaged import linearize_hover

    with pytest.raises(ConfigError, match=match):
        linearize_hover(CycleAveragedParams(), inertia)


def test_the_robot_linear_model_takes_the_whole_robot_inertia():
    """sim.flapper.linearize_hover is the pure model with the robot's inertia:
    the subtree of the articulated MJCF about its centre of mass, which equals
    the merged body of the lumped variant (an independent construction)."""
    from flapjax.aero.cycle_averaged import linearize_hover
    from flapjax.sim import flapper as fl

    inertia = fl.lumped_inertia()
    chex.assert_shape(inertia, (3, 3))
    lumped = fl.build("lumped")
    merged = lumped.body_inertia[lumped.body("base").id]  # principal moments, in MuJoCo's order
    np.testing.assert_allclose(np.sort(np.diag(inertia)), np.sort(merged), rtol=1e-6)
    np.testing.assert_allclose(inertia, np.diag(np.diag(inertia)), atol=1e-15)
    params = CycleAveragedParams(roll_speed_coupling=L_V, pitch_speed_coupling=M_U)
    chex.assert_trees_all_close(fl.linearize_hover(params), linearize_hover(params, inertia), rtol=0.0, atol=0.0)
    # the control columns scale with 1 / I: twice the inertia halves them
    _, b_heavy = linearize_hover(params, 2.0 * inertia)
    np.testing.assert_allclose(b_heavy[6:], 0.5 * fl.linearize_hover(params)[1][6:], rtol=1e-12)
    with pytest.raises(TypeError, match="inertia"):
        linearize_hover(params)
