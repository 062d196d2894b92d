"""The second robot of ``examples/flappers/insect/``: an insect-scale
two-wing flapper (0.1 g, 15 mm wings, 100-150 Hz, no plates) that steers
through its stroke. Its wing file holds the integrals of its outline, it
builds from its description, and its fixed-base mean lift agrees with an
independent strip quadrature of the quasi-steady normal force (seed
sections 5-6) over the stroke and feathering angles of the rollout.
"""

from __future__ import annotations

import json
import pathlib
import re

import jax
import mujoco
import numpy as np
import pytest

from flapjax import aero
from flapjax.sim import flapper
from flapjax.sim.flapper import description_model
from flapjax.sim.flapper.sweep import cycle_window

INSECT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "flappers" / "insect"
DESCRIPTION = INSECT / "robot.toml"
MM = 1e-3
#: The wing's outline (r spanwise from the root, y chordwise, leading edge
#: straight at y = 0 on the feathering axis) [m]; examples/flappers/README.md.
OUTLINE = np.array([(0, 0), (15, 0), (15, -1.0), (14, -3.0), (12, -4.5), (8, -5.0), (4, -4.5), (1, -3.0),
                    (0, -2.0)]) * MM
FREQUENCIES = (100.0, 125.0, 150.0)
DURATION, DISCARD = 0.03, 0.01


@pytest.fixture(scope="module")
def description():
    return flapper.load_robot_description(DESCRIPTION)


@pytest.fixture(scope="module")
def robot(description):
    return flapper.make_robot("fixed", "wing", description=description, backend="rigid")


def test_the_wing_file_holds_the_integrals_of_the_outline():
    geom = aero.WingGeometry.from_planform(OUTLINE)
    values = json.loads((INSECT / "wing.json").read_text())
    got = [values[k] for k in ("wing_length", "mean_chord", "r00", "r11", "r22", "r33", "z_cp0", "z_cp1", "z_cp2",
                               "z_rd")]
    want = [float(geom.span), float(geom.mean_chord), *np.asarray(geom.r), *np.asarray(geom.z_cp), float(geom.z_rd)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert 0.014 < values["wing_length"] < 0.016  # a 15 mm wing


def test_the_description_builds_a_plateless_robot_of_a_tenth_of_a_gram(description, robot):
    assert robot.channel_kinds == ("stroke_bias", "amplitude_difference")
    assert robot.plate_act == () and robot.plate_q == ()
    assert robot.plate_body == robot.base_body  # the stroke hinges ride on the base
    m = description_model.build(description, "free")
    assert np.sum(m.body_mass) == pytest.approx(1.0e-4, rel=1e-9)
    lo, hi = description.frequency_range
    assert (lo, hi) == (100.0, 150.0)
    # the wing body's inertia is the outline's: a 0.3 mg plate
    wing = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "left_wing")
    assert m.body_mass[wing] == pytest.approx(3e-7)


def _chord(r: np.ndarray) -> np.ndarray:
    """c(r) of the outline [m]: the trailing edge is the lower vertices, the
    leading edge y = 0 (written out here, not taken from flapjax)."""
    trailing = OUTLINE[OUTLINE[:, 1] < 0]
    trailing = trailing[np.argsort(trailing[:, 0])]
    return -np.interp(r, trailing[:, 0], trailing[:, 1])


def _normal_force_coefficient(alpha: np.ndarray) -> np.ndarray:
    """C_N(alpha), seed eq. in section 5."""
    return 1.8 * np.sin(2 * alpha) * np.cos(alpha) + 1.95 * np.sin(alpha) - 1.5 * np.cos(2 * alpha) * np.sin(alpha)


def strip_lift(stroke_rate: np.ndarray, pitch: np.ndarray, *, rho: float, lift_scale: float) -> np.ndarray:
    """Vertical force of the wings on a still base [N], (T,) from (T, 2)
    stroke rates [rad/s] and feathering angles [rad]: each strip ``dr``
    carries ``1/2 rho C_N c(r) (psi_dot r)^2 dr`` along the wing normal,
    whose world z component is ``-sin(theta)``; C_N at the angle of attack
    ``alpha = theta + sgn(psi_dot) pi / 2`` (no inflow on a still base)."""
    r = np.linspace(0.0, OUTLINE[:, 0].max(), 20001)
    second_moment = np.trapezoid(_chord(r) * r**2, r)  # int c(r) r^2 dr [m^4]
    alpha = pitch + np.sign(stroke_rate) * np.pi / 2
    normal = lift_scale * 0.5 * rho * _normal_force_coefficient(alpha) * stroke_rate**2 * second_moment
    return np.sum(-np.sin(pitch) * normal, axis=-1)


def test_fixed_base_lift_per_f2_agrees_with_a_strip_quadrature(description, robot):
    """Cycle-mean F_z / f^2 of the sweep over the robot's frequency range
    against the strip quadrature of the recorded kinematics (acceptance: 2 %)."""
    params = flapper.default_params(robot, description=description, frequency=125.0)
    res = flapper.sweep(FREQUENCIES, robot=robot, params=params, duration=DURATION, discard=DISCARD,
                        batch_size=len(FREQUENCIES))
    assert bool(np.all(np.asarray(res.healthy)))
    batched = flapper.sweep_params(FREQUENCIES, params=params, robot=robot)
    n_steps = int(round(DURATION / robot.dt))
    discard = int(round(DISCARD / robot.dt))
    sv = np.array(robot.stroke_v)

    def one(p):
        s0 = flapper.init_state(robot, p)
        _, (fz, pitch, qvel_after) = flapper.rollout(
            robot, p, s0, n_steps, observe=lambda s, d: (d.force_world[2], d.pitch, s.data.qvel[sv]))
        rate = jax.numpy.concatenate([s0.data.qvel[sv][None], qvel_after[:-1]])  # at the start of each step
        return fz, pitch, rate

    fz, pitch, rate = (np.asarray(x) for x in jax.jit(jax.vmap(one))(batched))
    options = description.aero_options
    for i, f in enumerate(FREQUENCIES):
        w = np.asarray(cycle_window(f, n_steps, discard, robot.dt))
        swept = float(res.lift_per_f2[i])
        # the sweep's mean is the mean of the force this rollout applied
        assert swept * f**2 == pytest.approx(np.sum(w * fz[i]) / np.sum(w), rel=1e-9)
        check = strip_lift(rate[i], pitch[i], rho=float(description.wing.rho), lift_scale=float(options.lift_scale))
        expected = np.sum(w * check) / np.sum(w) / f**2
        # The acceptance bound is 2 %; the two agree to the quadrature's
        # error (~5e-9 measured), and a rectangular wing's r22 would be 4.7 % off.
        assert swept == pytest.approx(expected, rel=1e-6), (f, swept, expected)
    # the lift grows as f^2 to within the passive feathering's drift, and carries the 0.1 g robot in range
    per_f2 = np.asarray(res.lift_per_f2)
    assert np.ptp(per_f2) / np.mean(per_f2) < 0.15
    weight = 1.0e-4 * 9.81
    assert float(res.force[0, 2]) < weight < float(res.force[-1, 2])


@pytest.mark.slow  # 22 s on 2 cores: compiles the MJX and the tree step of the robot
def test_mjx_and_the_pure_jax_tree_fly_the_steered_robot_alike(description):
    """Free flight with both channels set: the MJX step and the pure-JAX
    joint tree give the same flight (measured: 5e-16 in qpos after 400 steps)."""
    out = []
    for backend in ("mjx", "rigid"):
        robot = flapper.make_robot("free", "wing", description=description, backend=backend)
        params = flapper.default_params(robot, description=description, frequency=115.0, plate=(0.05, 0.05))
        final, forces = flapper.rollout(robot, params, flapper.init_state(robot, params), 400,
                                         observe=lambda s, d: d.force_world)
        assert bool(final.healthy)
        out.append((np.asarray(final.data.qpos), np.asarray(forces)))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-9, atol=1e-15)
    assert abs(out[0][0][4]) > 1e-3  # the channels turned the body (quaternion x, y away from level)


def _planform_config(outline, **extra) -> dict:
    """The insect description with its wing given inline as an outline."""
    from flapjax.safe_io import read_settings

    cfg = read_settings(DESCRIPTION, what="robot description")
    wing = {"planform": [list(map(float, v)) if len(v) == 2 else list(v) for v in outline], "air_density": 1.225, "shoulder_half_width": 0.0015,
            "stroke_plane_offset": 0.003, **extra}
    cfg.update(model=str(INSECT / "insect.xml"), wing=wing)
    return cfg


def test_an_inline_planform_gives_the_wing_files_wing():
    from flapjax.sim.flapper.description import description_from_dict

    d = description_from_dict(_planform_config(OUTLINE, options={"lift_scale": 1.0}), source="robot.toml")
    want, options = aero.read_wing_file(INSECT / "wing.json")
    for got_leaf, want_leaf in zip(jax.tree.leaves(d.wing), jax.tree.leaves(want)):
        np.testing.assert_allclose(got_leaf, want_leaf, rtol=1e-12)
    assert d.aero_options == options


@pytest.mark.parametrize("outline, extra, message", [
    (OUTLINE[[0, 1, 3, 2, 4, 5, 6, 7, 8]], {}, "robot.toml: wing.planform: is not simple: edge"),
    (OUTLINE, {"r22": 0.3}, "robot.toml: wing.r22: unknown key"),
    ([[0.0, 0.0], [0.015]], {}, "robot.toml: wing.planform: must be a list of [r, y] vertices in m"),
    (OUTLINE, {"air_density": -1.0}, "robot.toml: wing: air_density: must be > 0"),
], ids=["self-intersecting", "a wing-file integral beside it", "a vertex of one number", "negative air density"])
def test_a_bad_planform_gives_one_clear_error(outline, extra, message):
    from flapjax.sim.flapper.description import description_from_dict
    from flapjax.validation import ConfigError

    with pytest.raises(ConfigError, match=f"^{re.escape(message)}"):
        description_from_dict(_planform_config(outline, **extra), source="robot.toml")
