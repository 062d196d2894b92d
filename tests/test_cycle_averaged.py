"""Cycle-averaged hover model (seed section 10)."""

import json

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
    for i in range(3):
        np.testing.assert_allclose(batched[i], wrench(fs[i], plate=plates[i]).wrench, rtol=1e-12)

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
    for a, b in zip(jax.tree.leaves(changed), jax.tree.leaves(back)):
        np.testing.assert_allclose(a, b)


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
