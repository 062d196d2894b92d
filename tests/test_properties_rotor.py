"""Property-based tests of the multirotor chain over its valid input domain:
finite values and gradients everywhere (zero thrust, rotors exactly at a
clamp, surfaces exactly at the clamp distance), dissipative drag, exact
allocation of reachable wrenches, saturation before proximity."""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flapjax import rotor

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True)
PROFILES = {name: rotor.profiles.preset(name) for name in ("quad_x", "hexa", "hexa_tilted")}
QUAD = PROFILES["quad_x"]
R = float(QUAD.radius[0])
T_MIN, T_MAX = float(QUAD.thrust_min[0]), float(QUAD.thrust_max[0])


def _chain_sum(thrust_cmd, ground, wall, speed, v_body):
    prox = rotor.ProximityInput(ground_distance=ground, wall_distance=wall,
                                wall_normal=jnp.tile(jnp.array([-1.0, 0.0, 0.0]), (4, 1)))
    motion = rotor.BodyMotion(rotation=jnp.eye(3), velocity_body=v_body, time=jnp.asarray(0.3))
    inputs = rotor.ChainInput(rotor.ActuatorState(speed=speed), prox, motion=motion)
    out = rotor.realize_thrusts(QUAD, thrust_cmd, inputs, rotor.ChainOptions(turbulence=False), dt=0.002)
    return jnp.sum(out.wrench) + jnp.sum(out.thrust_realized), out


@jax.jit
def _value_and_grads(thrust_cmd, ground, wall, speed, v_body):
    (val, out), grads = jax.value_and_grad(_chain_sum, argnums=(0, 1, 2, 3, 4), has_aux=True)(
        thrust_cmd, ground, wall, speed, v_body)
    return val, out, grads


# thrust commands include exact zero and the exact clamp values on purpose
thrust = st.one_of(st.just(0.0), st.just(T_MIN), st.just(T_MAX), st.floats(-2.0, 12.0))
# distances include exactly the clamps (0.5 R for the ground, R for the wall) and "no surface"
ground = st.one_of(st.just(0.5 * R), st.just(np.inf), st.floats(0.0, 10 * R))
wall = st.one_of(st.just(R), st.just(np.inf), st.floats(0.0, 10 * R))
speed = st.one_of(st.just(0.0), st.floats(0.0, 1.0))
vel = st.floats(-10.0, 10.0)


@SETTINGS
@given(st.lists(thrust, min_size=4, max_size=4), st.lists(ground, min_size=4, max_size=4),
       st.lists(wall, min_size=4, max_size=4), st.lists(speed, min_size=4, max_size=4),
       st.lists(st.one_of(st.just(0.0), vel), min_size=3, max_size=3))
def test_chain_values_and_gradients_are_finite_everywhere(t, g, w, u, v):
    val, out, grads = _value_and_grads(jnp.array(t), jnp.array(g), jnp.array(w), jnp.array(u), jnp.array(v))
    assert bool(jnp.isfinite(val))
    for leaf in jax.tree.leaves(grads):
        assert bool(jnp.all(jnp.isfinite(leaf)))
    # saturation acts before proximity: realized thrust = produced thrust x factors >= produced
    assert bool(jnp.all(out.thrust_realized >= out.thrust_actuated - 1e-12))
    assert bool(jnp.all(out.thrust_clamped <= T_MAX + 1e-12)) and bool(jnp.all(out.thrust_clamped >= T_MIN - 1e-12))


@SETTINGS
@given(st.lists(vel, min_size=3, max_size=3))
def test_drag_never_adds_energy(v):
    v = jnp.array(v)
    assert float(v @ rotor.drag_force(rotor.DragParams(), v)) <= 0.0


@SETTINGS
@given(st.sampled_from(sorted(PROFILES)), st.lists(st.floats(0.2, 6.0), min_size=6, max_size=6))
def test_allocation_is_exact_for_reachable_wrenches(name, t):
    prof = PROFILES[name]
    thrusts = jnp.array(t[: prof.n_rotors])
    wrench = rotor.allocation_matrix(prof) @ thrusts  # reachable by construction
    alloc = rotor.allocate_with_residual(prof, wrench)
    np.testing.assert_allclose(rotor.allocation_matrix(prof) @ alloc.thrust, wrench, atol=1e-9)
    np.testing.assert_allclose(alloc.unreachable, 0.0, atol=1e-9)


@SETTINGS
@given(st.floats(0.0, 20.0))
def test_ground_effect_factor_is_bounded_monotone_and_finite_in_gradient(h_over_r):
    h = jnp.asarray(h_over_r * R)
    k, dk = jax.value_and_grad(lambda h: rotor.ground_effect_factor(h, R))(h)
    assert 1.0 <= float(k) <= 4.0 / 3.0 + 1e-12
    assert bool(jnp.isfinite(dk)) and float(dk) <= 0.0
