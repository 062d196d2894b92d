"""Closed-form quasi-steady loads (seed 5-7, 11.1, 12.1) against brute force."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from flapjax import ConfigError, aero
from tests.aero_reference import seed_alpha, strip_loads, whitney_wood
from tests.test_aero_kinematics import random_state

WING = aero.Wing.flapsim()
OPTS = aero.AeroOptions()
V0 = jnp.array([0.3, -0.2, 0.1])
W0 = jnp.array([0.7, -0.5, 0.4])
KIN0 = aero.WingKinematics(stroke=0.37, stroke_rate=92.0, pitch=0.48, pitch_rate=-11.0)


def loads(kin=KIN0, v=V0, w=W0, side=1, wing=WING, options=OPTS):
    return aero.wing_loads(wing, kin, v_body=v, w_body=w, side=side, options=options)


@pytest.mark.parametrize("side", [1, -1])
@pytest.mark.parametrize("planform", ["rectangle", "triangle"])
def test_closed_form_equals_brute_force_strip_integration(side, planform):
    if planform == "rectangle":
        wing, chord_fn = WING, lambda r: np.full_like(r, 0.02)
    else:
        R, c0 = 0.07, 0.04
        geom = aero.WingGeometry.from_planform([[0, 0], [R, 0], [0, c0]])
        wing = aero.Wing(geometry=geom, rho=1.225, shoulder_half_width=0.01395, stroke_plane_offset=0.0189913)
        chord_fn = lambda r: c0 * (1 - r / R)  # noqa: E731
    rng = np.random.default_rng(100 + side)
    for _ in range(4):
        k, v, w = random_state(rng)
        out = loads(aero.WingKinematics(**k), jnp.array(v), jnp.array(w), side, wing=wing)
        f_ref, m_ref, alpha_ref = strip_loads(
            side, k, v, w, span=0.07, chord_fn=chord_fn, rho=1.225, d0=0.01395, ds=0.0189913,
            r_cp=float(wing.geometry.span_cop))
        assert not bool(out.force_clipped)
        np.testing.assert_allclose(float(out.normal_force), f_ref, rtol=1e-9)
        np.testing.assert_allclose(float(out.aero_moment), m_ref, rtol=1e-9)
        np.testing.assert_allclose(float(out.alpha), alpha_ref, rtol=0, atol=1e-12)


def test_seed_representative_state_identities():
    out = loads()
    assert float(out.span_cop) == pytest.approx(0.0525, abs=1e-15)  # r_cp = 3R/4
    # -M_aero / F_N = c_cp, and for a rectangle c_cp = cbar d_cp(alpha).
    assert float(-out.aero_moment / out.normal_force) == pytest.approx(float(out.chord_cop), rel=1e-14)
    _, d_cp = whitney_wood(float(out.alpha))
    assert float(out.chord_cop) == pytest.approx(0.02 * d_cp, rel=1e-13)
    assert float(out.damping_moment) * -11.0 < 0.0


def test_rotational_damping_golden_value_and_dissipation():
    for theta_dot in [-300.0, -11.0, 0.0, 4.0, 250.0]:
        kin = aero.WingKinematics(stroke=0.1, stroke_rate=50.0, pitch=0.2, pitch_rate=theta_dot)
        m_rd = float(loads(kin).damping_moment)
        expected = -(1 / 8) * 1.225 * abs(theta_dot) * theta_dot * 5 * 0.07 * 0.02**4 * 1.0
        assert m_rd == pytest.approx(expected, rel=1e-14, abs=0)
        assert m_rd * theta_dot <= 0.0


@pytest.mark.parametrize("planform", ["rectangle", "triangle"])
def test_rotational_damping_equals_its_area_integral(planform):
    # A chord element at distance x behind the feathering axis (the leading
    # edge) moves at theta_dot x normal to the wing; its drag
    # 1/2 rho C_rd |theta_dot x| theta_dot x per unit area, times the arm x,
    # integrated over the wing area, is the damping moment.
    R, c0 = 0.07, 0.04
    if planform == "rectangle":
        wing, chord_fn = WING, lambda r: np.full_like(r, 0.02)
    else:
        geom = aero.WingGeometry.from_planform([[0, 0], [R, 0], [0, c0]])
        wing = aero.Wing(geometry=geom, rho=1.225, shoulder_half_width=0.01395, stroke_plane_offset=0.0189913)
        chord_fn = lambda r: c0 * (1 - r / R)  # noqa: E731
    c_rd = 5.0
    r = (np.arange(4000) + 0.5) * (R / 4000)
    u = (np.arange(400) + 0.5) / 400  # x = u c(r): midpoint rule across each chord
    for theta_dot in (-180.0, 7.0, 260.0):
        c = chord_fn(r)[:, None]
        x = u[None, :] * c
        per_area = 0.5 * 1.225 * c_rd * np.abs(theta_dot * x) * theta_dot * x * x
        reference = -np.sum(per_area * c / u.size) * (R / r.size)
        kin = aero.WingKinematics(stroke=0.1, stroke_rate=50.0, pitch=0.2, pitch_rate=theta_dot)
        out = loads(kin, wing=wing, options=aero.AeroOptions(rotational_damping=c_rd, damping_limit=1e3))
        np.testing.assert_allclose(float(out.damping_moment), reference, rtol=2e-5)


def test_pure_flapping_force_scales_with_frequency_squared():
    """Same phase and amplitude at 15 and 30 Hz, body at rest: ratio exactly 4."""
    def force_at(f):
        phase, amp = 0.7, 1.5
        kin = aero.WingKinematics(stroke=amp * np.sin(phase), stroke_rate=amp * 2 * np.pi * f * np.cos(phase),
                                  pitch=0.3, pitch_rate=0.0)
        return float(loads(kin, jnp.zeros(3), jnp.zeros(3)).normal_force)
    assert force_at(30.0) / force_at(15.0) == pytest.approx(4.0, rel=1e-13)
    # and the closed form F_N = 1/2 rho cbar C_N psi_dot^2 R^3 r22
    psi_dot = 1.5 * 2 * np.pi * 30 * np.cos(0.7)
    c_n, _ = whitney_wood(0.3 + np.pi / 2)
    assert force_at(30.0) == pytest.approx(0.5 * 1.225 * 0.02 * c_n * psi_dot**2 * 0.07**3 / 3, rel=1e-13)


def test_atan2_angle_of_attack_equals_seed_form_off_reversal():
    rng = np.random.default_rng(5)
    theta = rng.uniform(-1, 1, 2000)
    u_i = rng.normal(size=2000) * rng.choice([1e-6, 1.0, 1e3], 2000)
    u_o = rng.normal(size=2000)
    ours = np.asarray(jax.vmap(aero.angle_of_attack)(theta, u_i, u_o))
    assert np.any(u_i < 0) and np.any(u_i > 0)
    np.testing.assert_allclose(ours, seed_alpha(theta, u_i, u_o), rtol=0, atol=1e-12)


def test_angle_of_attack_is_continuous_through_stroke_reversal():
    eps = 1e-9
    a_minus = float(aero.angle_of_attack(0.2, -eps, 1.0))
    a_plus = float(aero.angle_of_attack(0.2, eps, 1.0))
    assert abs(a_plus - a_minus) < 1e-8  # the seed's branch jumps by ~pi here
    assert float(aero.angle_of_attack(0.2, 0.0, 0.0)) == 0.2


def test_scales_and_clips_keep_force_and_moment_consistent():
    base = loads()
    scaled = loads(options=aero.AeroOptions(lift_scale=2.0, moment_scale=3.0))
    assert float(scaled.normal_force) == pytest.approx(2 * float(base.normal_force), rel=1e-14)
    assert float(scaled.aero_moment) == pytest.approx(3 * float(base.aero_moment), rel=1e-13)
    assert float(scaled.damping_moment) == pytest.approx(3 * float(base.damping_moment), rel=1e-14)

    clipped = loads(options=aero.AeroOptions(force_limit=0.01))
    assert bool(clipped.force_clipped) and not bool(base.force_clipped)
    assert float(clipped.normal_force) == pytest.approx(0.01 * np.sign(float(base.normal_force)))
    # the clipped force acts at the same centre of pressure
    assert float(clipped.chord_cop) == pytest.approx(float(base.chord_cop), rel=1e-14)
    assert float(clipped.aero_moment) == pytest.approx(-float(base.chord_cop) * float(clipped.normal_force), rel=1e-14)

    kin = aero.WingKinematics(stroke=0.0, stroke_rate=0.0, pitch=0.0, pitch_rate=5000.0)
    damp = loads(kin, options=aero.AeroOptions(damping_limit=1e-4))
    assert bool(damp.damping_clipped) and float(damp.damping_moment) == pytest.approx(-1e-4)


@pytest.mark.parametrize("side", [1, -1])
def test_lift_scale_scales_the_force_and_leaves_the_feathering_moment(side):
    """docs/physics.md, Quasi-steady loads: lambda_L is a lift gain; the moment
    about the feathering axis (the passive-pitch balance) does not depend on
    it, so c_cp lambda_L is invariant, unlike FlapSim's c_cp from the unscaled
    force."""
    rng = np.random.default_rng(40 + side)
    for _ in range(6):
        k, v, w = random_state(rng)
        kin = aero.WingKinematics(**k)
        base = loads(kin, jnp.array(v), jnp.array(w), side, options=aero.AeroOptions(force_limit=1e3))
        for lam in (0.8, 1.3):
            out = loads(kin, jnp.array(v), jnp.array(w), side, options=aero.AeroOptions(lift_scale=lam, force_limit=1e3))
            np.testing.assert_allclose(float(out.normal_force), lam * float(base.normal_force), rtol=1e-12, atol=1e-300)
            np.testing.assert_allclose(float(out.aero_moment), float(base.aero_moment), rtol=1e-12, atol=1e-300)
            np.testing.assert_allclose(lam * float(out.chord_cop), float(base.chord_cop), rtol=1e-12)
            # FlapSim's rule would have given lam * M_aero
            if abs(float(base.aero_moment)) > 1e-12:
                assert abs(float(out.aero_moment) - lam * float(base.aero_moment)) > 0.1 * abs(float(base.aero_moment))


def test_angular_velocity_is_clipped_to_the_limit():
    w_big = jnp.array([3000.0, -4000.0, 0.0])  # |w| = 5000
    a = loads(w=w_big * 3.0, options=aero.AeroOptions(angular_velocity_limit=5000.0))
    b = loads(w=w_big)
    assert float(a.normal_force) == pytest.approx(float(b.normal_force), rel=1e-12)


def test_dickinson_coefficients_are_pluggable_and_in_degrees():
    model = aero.Dickinson1999()
    a = np.deg2rad(45.0)
    c_l = 0.225 + 1.58 * np.sin(np.deg2rad(2.13 * 45 - 7.20))
    c_d = 1.92 - 1.55 * np.cos(np.deg2rad(2.04 * 45 - 9.82))
    assert float(model.normal(a)) == pytest.approx(c_l * np.cos(a) + c_d * np.sin(a), rel=1e-12)
    assert float(model.normal(a)) == pytest.approx(2.48075, abs=1e-5)  # hand value at 45 deg
    assert float(model.normal(-a)) == pytest.approx(-float(model.normal(a)), rel=1e-14)
    assert float(model.normal(np.pi - a)) == pytest.approx(float(model.normal(a)), rel=1e-12)
    out = loads(options=aero.AeroOptions(coefficients=model))
    assert float(out.normal_coefficient) == pytest.approx(float(model.normal(out.alpha)), rel=1e-14)
    assert float(out.normal_force) != pytest.approx(float(loads().normal_force), rel=1e-3)
    # The published fit leaves C_L(0) = 0.225 + 1.58 sin(-7.20 deg) = 0.02697 at zero incidence:
    # the odd extension steps by twice that across alpha = 0, as the docstring states.
    c_zero = 0.225 + 1.58 * np.sin(np.deg2rad(-7.20))
    assert float(model.normal(1e-9)) == pytest.approx(c_zero, rel=1e-6)
    assert float(model.normal(-1e-9)) == pytest.approx(-c_zero, rel=1e-6)
    assert c_zero == pytest.approx(0.0270, abs=5e-5)


def test_whitney_wood_golden_values_and_symmetry():
    m = aero.WhitneyWood()
    assert float(m.normal(np.pi / 2)) == pytest.approx(3.45, rel=1e-14)
    assert float(m.normal(np.pi / 4)) == pytest.approx(3.75 * np.sqrt(0.5), rel=1e-14)
    assert float(m.centre_of_pressure(0.0)) == pytest.approx(0.078, rel=1e-13)
    assert float(m.centre_of_pressure(np.pi / 2)) == pytest.approx(0.46, rel=1e-13)
    a = jnp.linspace(-np.pi, np.pi, 1001)
    assert float(jnp.max(jnp.abs(m.normal(a) + m.normal(-a)))) == 0.0
    assert float(jnp.max(jnp.abs(m.centre_of_pressure(a) - m.centre_of_pressure(-a)))) == 0.0


def test_side_must_be_plus_or_minus_one():
    for bad in [0, 2, 0.5, "left"]:
        with pytest.raises(ConfigError, match="side"):
            loads(side=bad)


@pytest.mark.parametrize("field, value", [("force_limit", -1.0), ("lift_scale", 0.0), ("damping_limit", np.nan),
                                          ("angular_velocity_limit", 0.0), ("moment_scale", -2.0)])
def test_bad_options_name_the_field(field, value):
    with pytest.raises(ConfigError, match=field):
        aero.AeroOptions(**{field: value})


# --- gradients ---------------------------------------------------------------

def _loads_vector(x, side=1):
    kin = aero.WingKinematics(*[x[i] for i in range(8)])
    out = aero.wing_loads(WING, kin, v_body=x[8:11], w_body=x[11:14], side=side, options=OPTS)
    return jnp.stack([out.normal_force, out.aero_moment, out.chord_cop, out.damping_moment, out.alpha])


STATES = {
    "ordinary": [0.37, 92.0, 0.48, -11.0, 0.1, 3.0, 0.05, 1.0, 0.3, -0.2, 0.1, 0.7, -0.5, 0.4],
    "stroke_reversal": [1.5, 0.0, 0.7, 40.0, 0.0, 0.0, 0.0, 0.0, 0.3, -0.2, 0.1, 0.7, -0.5, 0.4],
    "zero_relative_velocity": [0.4, 0.0, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
}


@pytest.mark.parametrize("state", ["ordinary", "stroke_reversal"])
@pytest.mark.parametrize("side", [1, -1])
def test_check_grads_first_and_second_order(state, side):
    x = jnp.array(STATES[state])
    check_grads(lambda x: _loads_vector(x, side), (x,), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-5)


def test_gradients_finite_at_zero_relative_velocity():
    """At rest the loads are not differentiable in the classical sense (U^2
    has a minimum there); the gradient is finite and the force gradient zero."""
    x = jnp.array(STATES["zero_relative_velocity"])
    jac = jax.jacrev(_loads_vector)(x)
    assert bool(jnp.all(jnp.isfinite(jac)))
    np.testing.assert_allclose(jac[0], 0.0, atol=1e-15)  # dF_N/dx = 0 at U = 0
    check_grads(lambda p: _loads_vector(x.at[2].set(p)), (x[2],), order=1, modes=("fwd", "rev"))
    # The loads themselves (F_N, M_aero, M_rd) are smooth at rest in every input.
    check_grads(lambda x: _loads_vector(x)[jnp.array([0, 1, 3])], (x,), order=1, modes=("fwd", "rev"),
                atol=1e-7, rtol=1e-5)


def _random_states(n, seed=0):
    rng = np.random.default_rng(seed)
    scale = np.array([1.5, 300, 1.0, 300, 0.3, 50, 0.4, 20, 2, 2, 2, 50, 50, 50])
    x = rng.uniform(-1, 1, size=(n, 14)) * scale
    x[: n // 10, 1] = 0.0  # stroke reversal
    x[n // 10: n // 5, 1:] = 0.0  # at rest, only angles
    return jnp.array(x)


def test_no_nan_gradient_in_a_10k_state_scan():
    x = _random_states(10_000)
    grads = jax.jit(jax.vmap(jax.jacrev(lambda x: _loads_vector(x).sum())))(x)
    assert bool(jnp.all(jnp.isfinite(grads)))


def test_jit_vmap_equals_python_loop():
    x = _random_states(10_000, seed=1)
    batched = jax.jit(jax.vmap(_loads_vector))(x)
    single = jax.jit(_loads_vector)
    looped = np.stack([np.asarray(single(xi)) for xi in np.asarray(x)])
    np.testing.assert_allclose(np.asarray(batched), np.asarray(looped), rtol=1e-12, atol=1e-15)
