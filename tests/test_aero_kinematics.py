"""Affine velocity coefficients (seed 4.1) against rigid-body kinematics."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import aero
from tests.aero_reference import point_velocity_components

D0, DS = 0.01395, 0.0189913
NAMES = ["stroke", "stroke_rate", "pitch", "pitch_rate", "deviation", "deviation_rate", "stroke_plane", "stroke_plane_rate"]


def random_state(rng, scale=(1.5, 300.0, 1.0, 200.0, 0.3, 50.0, 0.4, 20.0)):
    k = {n: float(rng.uniform(-s, s)) for n, s in zip(NAMES, scale)}
    return k, rng.normal(size=3), rng.normal(size=3) * 5.0


@pytest.mark.parametrize("side", [1, -1])
def test_full_affine_coefficients_match_rigid_body_velocity(side):
    rng = np.random.default_rng(7 + side)
    r_probe = np.array([0.0, 1.0])
    for _ in range(25):
        k, v, w = random_state(rng)
        vel = aero.affine_velocity(aero.WingKinematics(**k), jnp.array(v), jnp.array(w), side=side,
                                   shoulder_half_width=D0, stroke_plane_offset=DS)
        ui, uo = point_velocity_components(side, k, v, w, D0, DS, r_probe)
        np.testing.assert_allclose(float(vel.in_plane_offset), ui[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(float(vel.in_plane_slope), ui[1] - ui[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(float(vel.out_of_plane_offset), uo[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(float(vel.out_of_plane_slope), uo[1] - uo[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("side", [1, -1])
def test_reduced_coefficients_without_deviation_and_stroke_plane(side):
    rng = np.random.default_rng(3)
    s = side
    for _ in range(10):
        psi, psi_dot = rng.uniform(-1.5, 1.5), rng.uniform(-300, 300)
        (u, v, w), (p, q, r) = rng.normal(size=3), rng.normal(size=3)
        kin = aero.WingKinematics(stroke=psi, stroke_rate=psi_dot, pitch=0.2, pitch_rate=1.0)
        vel = aero.affine_velocity(kin, jnp.array([u, v, w]), jnp.array([p, q, r]), side=s,
                                   shoulder_half_width=D0, stroke_plane_offset=DS)
        c, sn = np.cos(psi), np.sin(psi)
        np.testing.assert_allclose(float(vel.out_of_plane_slope), s * p * c + q * sn, atol=1e-12)
        np.testing.assert_allclose(float(vel.out_of_plane_offset), s * p * D0 + w, atol=1e-12)
        np.testing.assert_allclose(float(vel.in_plane_slope), s * r + psi_dot, atol=1e-12)
        np.testing.assert_allclose(float(vel.in_plane_offset),
                                   s * (r * D0 * c - (v - p * DS) * sn) - (u + q * DS) * c, atol=1e-12)


def test_stationary_body_gives_pure_flapping():
    kin = aero.WingKinematics(stroke=0.4, stroke_rate=123.0, pitch=0.3, pitch_rate=5.0)
    vel = aero.affine_velocity(kin, jnp.zeros(3), jnp.zeros(3), side=1, shoulder_half_width=D0, stroke_plane_offset=DS)
    assert float(vel.in_plane_slope) == pytest.approx(123.0, abs=1e-12)
    assert float(vel.in_plane_offset) == 0.0
    assert float(vel.out_of_plane_slope) == 0.0
    assert float(vel.out_of_plane_offset) == 0.0


def test_stroke_plane_angle_is_antisymmetric_between_wings():
    """Mirroring the left wing across the body x-z plane gives the right wing
    with the stroke-plane angle negated (the seed's sign convention)."""
    rng = np.random.default_rng(11)
    k, v, w = random_state(rng)
    v_m = v * np.array([1, -1, 1])
    w_m = w * np.array([-1, 1, -1])
    left = aero.affine_velocity(aero.WingKinematics(**k), jnp.array(v), jnp.array(w), side=1,
                                shoulder_half_width=D0, stroke_plane_offset=DS)
    k_r = dict(k, stroke_plane=-k["stroke_plane"], stroke_plane_rate=-k["stroke_plane_rate"])
    right = aero.affine_velocity(aero.WingKinematics(**k_r), jnp.array(v_m), jnp.array(w_m), side=-1,
                                 shoulder_half_width=D0, stroke_plane_offset=DS)
    for a, b in zip(jax.tree.leaves(left), jax.tree.leaves(right)):
        np.testing.assert_allclose(float(a), float(b), atol=1e-12)
