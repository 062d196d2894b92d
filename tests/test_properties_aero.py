"""Property-based tests of the per-wing kernels over their whole valid domain.

Invariants that must hold for every state: finite loads and gradients
(including stroke reversal and zero airspeed), C_N odd, d_cp even, left/right
mirror symmetry, dissipative rotational damping, and the force clip.
"""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flapjax import aero

WING = aero.Wing.flapsim()
OPTS = aero.AeroOptions()
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)


def _kin(x):
    return aero.WingKinematics(*[x[i] for i in range(8)])


@jax.jit
def _loads_and_grad(x):
    def f(x, side):
        out = aero.wing_loads(WING, _kin(x), v_body=x[8:11], w_body=x[11:14], side=side, options=OPTS)
        return out.normal_force + out.aero_moment * 10 + out.damping_moment * 10, out

    (val_l, out_l), g_l = jax.value_and_grad(lambda x: f(x, 1), has_aux=True)(x)
    (val_r, out_r), g_r = jax.value_and_grad(lambda x: f(x, -1), has_aux=True)(x)
    return out_l, out_r, g_l, g_r


@jax.jit
def _mirrored(x):
    """Left wing at x, right wing in the mirror-image state."""
    v, w = x[8:11], x[11:14]
    v_m = v * jnp.array([1.0, -1.0, 1.0])
    w_m = w * jnp.array([-1.0, 1.0, -1.0])
    x_m = x.at[6].set(-x[6]).at[7].set(-x[7])  # the stroke-plane angle is antisymmetric
    left = aero.wing_loads(WING, _kin(x), v_body=v, w_body=w, side=1, options=OPTS)
    right = aero.wing_loads(WING, _kin(x_m), v_body=v_m, w_body=w_m, side=-1, options=OPTS)
    return left, right


angle = st.floats(-np.pi, np.pi)
rate = st.floats(-3000.0, 3000.0)
speed = st.floats(-10.0, 10.0)
maybe_zero = lambda s: st.one_of(st.just(0.0), s)  # noqa: E731  degenerate values on purpose

state = st.tuples(
    angle, maybe_zero(rate), angle, maybe_zero(rate),  # stroke, rate, pitch, rate
    maybe_zero(st.floats(-0.5, 0.5)), maybe_zero(rate),  # deviation, rate
    maybe_zero(st.floats(-0.5, 0.5)), maybe_zero(rate),  # stroke plane, rate
    maybe_zero(speed), maybe_zero(speed), maybe_zero(speed),
    maybe_zero(rate), maybe_zero(rate), maybe_zero(rate),
).map(lambda t: jnp.array(t, dtype=float))


@SETTINGS
@given(state)
def test_loads_and_gradients_are_finite_everywhere(x):
    out_l, out_r, g_l, g_r = _loads_and_grad(x)
    for leaf in jax.tree.leaves((out_l, out_r, g_l, g_r)):
        assert bool(jnp.all(jnp.isfinite(leaf)))
    assert abs(float(out_l.normal_force)) <= float(OPTS.force_limit)
    assert abs(float(out_l.damping_moment)) <= float(OPTS.damping_limit)


@SETTINGS
@given(state)
def test_rest_and_reversal_states_have_finite_gradients(x):
    at_rest = x.at[jnp.array([1, 3, 5, 7, 8, 9, 10, 11, 12, 13])].set(0.0)
    reversal = x.at[1].set(0.0)
    for s in (at_rest, reversal):
        *_, g_l, g_r = _loads_and_grad(s)
        assert bool(jnp.all(jnp.isfinite(g_l))) and bool(jnp.all(jnp.isfinite(g_r)))


@SETTINGS
@given(state)
def test_mirror_symmetry_of_the_wings(x):
    left, right = _mirrored(x)
    for a, b in [(left.normal_force, right.normal_force), (left.aero_moment, right.aero_moment),
                 (left.damping_moment, right.damping_moment), (left.alpha, right.alpha)]:
        np.testing.assert_allclose(float(a), float(b), rtol=1e-9, atol=1e-12)


@SETTINGS
@given(state)
def test_rotational_damping_is_dissipative(x):
    out_l, out_r, *_ = _loads_and_grad(x)
    assert float(out_l.damping_moment) * float(x[3]) <= 0.0
    assert float(out_r.damping_moment) * float(x[3]) <= 0.0


@SETTINGS
@given(st.floats(-10.0, 10.0))
def test_normal_coefficient_odd_and_cop_even(alpha):
    for model in (aero.WhitneyWood(), aero.Dickinson1999()):
        assert float(model.normal(-alpha)) == -float(model.normal(alpha))
        assert float(model.centre_of_pressure(-alpha)) == float(model.centre_of_pressure(alpha))
