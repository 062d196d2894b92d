"""World wrench of one wing (seed 7.3, 8) and left/right mirror symmetry (seed 9)."""

import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import ConfigError, aero
from flapjax.math import rot_x, rot_y, rot_z

WING = aero.Wing.flapsim()
KIN = aero.WingKinematics(stroke=0.37, stroke_rate=92.0, pitch=0.48, pitch_rate=-11.0)


def _loads(side=1, v=(0.3, -0.2, 0.1), w=(0.7, -0.5, 0.4), kin=KIN):
    return aero.wing_loads(WING, kin, v_body=jnp.array(v), w_body=jnp.array(w), side=side)


def test_local_wrench_matches_seed_expansion():
    """With R_WA = I: tau = [0, l_z F_N + M_rd, -l_y F_N], l = cop - com."""
    loads = _loads()
    com = jnp.array([0.001, 0.03, -0.008])
    out = aero.wing_wrench(loads, side=1, rot_world_wing=jnp.eye(3), pos_world_origin=jnp.zeros(3), pos_world_com=com)
    f_n, m_rd = float(loads.normal_force), float(loads.damping_moment)
    l_y = float(loads.span_cop) - 0.03
    l_z = -float(loads.chord_cop) + 0.008
    np.testing.assert_allclose(out.wrench, [f_n, 0, 0, 0, l_z * f_n + m_rd, -l_y * f_n], rtol=1e-13, atol=1e-18)
    # about the wing origin, the chordwise lever reproduces M_aero exactly
    at_origin = aero.wing_wrench(loads, side=1, rot_world_wing=jnp.eye(3), pos_world_origin=jnp.zeros(3),
                                 pos_world_com=jnp.zeros(3))
    assert float(at_origin.torque_world[1]) == pytest.approx(float(loads.aero_moment + loads.damping_moment), rel=1e-13)


def test_world_wrench_is_the_rotated_local_wrench():
    loads = _loads(side=-1)
    R = np.asarray(rot_z(0.3) @ rot_y(-0.7) @ rot_x(1.1))
    origin = jnp.array([0.1, -0.2, 0.5])
    offset_local = jnp.array([0.0, -0.03, -0.009])
    com = origin + R @ offset_local
    world = aero.wing_wrench(loads, side=-1, rot_world_wing=jnp.array(R), pos_world_origin=origin, pos_world_com=com)
    local = aero.wing_wrench(loads, side=-1, rot_world_wing=jnp.eye(3), pos_world_origin=jnp.zeros(3),
                             pos_world_com=offset_local)
    np.testing.assert_allclose(world.force_world, R @ np.asarray(local.force_world), atol=1e-15)
    np.testing.assert_allclose(world.torque_world, R @ np.asarray(local.torque_world), atol=1e-15)
    np.testing.assert_allclose(world.cop_world, origin + R @ np.array([0, -float(loads.span_cop), -float(loads.chord_cop)]), atol=1e-15)
    assert float(jnp.linalg.norm(world.force_world)) == pytest.approx(abs(float(loads.normal_force)), rel=1e-14)


def test_read_only_returns_zero_wrench_with_full_diagnostics():
    loads = _loads()
    args = dict(side=1, rot_world_wing=jnp.eye(3), pos_world_origin=jnp.zeros(3), pos_world_com=jnp.zeros(3))
    live = aero.wing_wrench(loads, **args)
    ro = aero.wing_wrench(loads, read_only=True, **args)
    assert float(jnp.abs(ro.wrench).max()) == 0.0
    np.testing.assert_array_equal(ro.force_world, live.force_world)
    assert float(jnp.abs(live.wrench).max()) > 0.0


def test_mirrored_wings_give_mirrored_world_forces():
    """Left wing, and the right wing in the mirrored state: the world forces
    are mirror images (y flips) and the vertical components add."""
    v, w = np.array([0.3, -0.2, 0.1]), np.array([0.7, -0.5, 0.4])
    left = _loads(1, v, w)
    right = _loads(-1, v * [1, -1, 1], w * [-1, 1, -1])
    assert float(right.normal_force) == pytest.approx(float(left.normal_force), rel=1e-13)
    psi, theta = 0.37, 0.48
    R_left = rot_z(psi) @ rot_y(theta)
    R_right = rot_z(-psi) @ rot_y(theta)
    zero = jnp.zeros(3)
    f_l = aero.wing_wrench(left, side=1, rot_world_wing=R_left, pos_world_origin=zero, pos_world_com=zero)
    f_r = aero.wing_wrench(right, side=-1, rot_world_wing=R_right, pos_world_origin=zero, pos_world_com=zero)
    np.testing.assert_allclose(f_r.force_world, np.asarray(f_l.force_world) * [1, -1, 1], rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(f_r.cop_world, np.asarray(f_l.cop_world) * [1, -1, 1], rtol=1e-12, atol=1e-16)
    # axial torque mirrors as (-x, y, -z)
    np.testing.assert_allclose(f_r.torque_world, np.asarray(f_l.torque_world) * [-1, 1, -1], rtol=1e-12, atol=1e-18)


def test_hovering_stroke_produces_upward_force_with_the_right_pitch():
    """Wing moving along its in-plane direction with the leading edge pitched
    so the flow hits the lower surface pushes up: no sign flip anywhere."""
    kin = aero.WingKinematics(stroke=0.0, stroke_rate=300.0, pitch=-0.6, pitch_rate=0.0)
    loads = _loads(1, (0, 0, 0), (0, 0, 0), kin)
    out = aero.wing_wrench(loads, side=1, rot_world_wing=rot_y(-0.6), pos_world_origin=jnp.zeros(3),
                           pos_world_com=jnp.zeros(3))
    assert float(out.force_world[2]) > 0.0  # lift up
    assert float(out.force_world[0]) > 0.0  # drag opposes the motion along -x


def test_bad_shapes_are_named():
    with pytest.raises(ConfigError, match="rot_world_wing"):
        aero.wing_wrench(_loads(), side=1, rot_world_wing=jnp.eye(4), pos_world_origin=jnp.zeros(3),
                         pos_world_com=jnp.zeros(3))
    with pytest.raises(ConfigError, match="pos_world_com"):
        aero.wing_wrench(_loads(), side=1, rot_world_wing=jnp.eye(3), pos_world_origin=jnp.zeros(3),
                         pos_world_com=jnp.zeros(2))
