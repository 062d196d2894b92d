"""Wind on the flapper (docs/physics.md, Wind): the aerodynamics see the
velocity relative to the air, so a uniform wind w is the same as moving the
robot at -w; still air changes nothing; a gust pushes the hovering robot
downwind."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.sim import flapper as fl
from flapjax.validation import ConfigError

WIND = jnp.array([0.8, -0.5, 0.3])  # [m/s]


def _loads_equal(a, b, atol):
    for x, y in zip(jax.tree.leaves((a.force_world, a.moment_world, a.wing_loads)),
                    jax.tree.leaves((b.force_world, b.moment_world, b.wing_loads))):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0.0, atol=atol)


def _mid_stroke(robot, params):
    """The schedule start with the wings feathered (both hinges at 0.4 rad,
    turning at -30 rad/s) and the base at rest."""
    st = fl.init_state(robot, params, periodic=False)
    qpos = st.data.qpos.at[np.array(robot.pitch_q)].set(0.4)
    qvel = st.data.qvel.at[np.array(robot.pitch_v)].set(-30.0)
    return eqx.tree_at(lambda s: (s.data.qpos, s.data.qvel), st, (qpos, qvel))


def _step(robot, params):
    return jax.jit(lambda s, w: fl.step(robot, params, s, wind=w)[1])


def test_wind_on_the_fixed_base_equals_driving_the_base_against_it():
    """Driven (fixed-root) robot: the base slides at -w_xy in still air, or
    rests in the wind w_xy: the same per-wing loads."""
    robot = fl.make_driven_robot(backend="rigid")
    params = fl.default_params(robot, frequency=40.0)
    rest = _mid_stroke(robot, params)
    wind = WIND.at[2].set(0.0)  # the drive slides along x and y only
    moving = eqx.tree_at(lambda s: s.data.qvel, rest, rest.data.qvel.at[:2].set(-wind[:2]))
    step = _step(robot, params)
    in_wind, driven, still = step(rest, wind), step(moving, jnp.zeros(3)), step(rest, jnp.zeros(3))
    _loads_equal(in_wind, driven, 1e-10)
    # the wind matters at this state (so the equality above is not 0 == 0)
    assert float(jnp.max(jnp.abs(in_wind.force_world - still.force_world))) > 1e-3


def test_wind_on_the_free_robot_equals_flying_against_it():
    """Free robot, all three components: base velocity -w in still air, or
    at rest in the wind w."""
    robot = fl.make_robot("free", "wing", backend="rigid")
    params = fl.default_params(robot, frequency=40.0)
    rest = _mid_stroke(robot, params)
    v = robot.free_v
    moving = eqx.tree_at(lambda s: s.data.qvel, rest, rest.data.qvel.at[v:v + 3].set(-WIND))
    step = _step(robot, params)
    in_wind, flying, still = step(rest, WIND), step(moving, jnp.zeros(3)), step(rest, jnp.zeros(3))
    _loads_equal(in_wind, flying, 1e-10)
    assert float(jnp.max(jnp.abs(in_wind.force_world - still.force_world))) > 1e-3


@pytest.fixture(scope="module")
def lumped():
    robot = fl.make_robot("lumped", "averaged", backend="rigid")
    params = fl.default_params(robot)
    return robot, params, fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 0.5]))


def _fly(lumped, wind, n=6000):
    robot, params, st = lumped
    return jax.jit(lambda s, w: fl.hover_rollout(robot, params, s, n, record_every=100, wind=w))(st, wind)


def test_still_air_is_bit_identical(lumped):
    _, a = _fly(lumped, None, n=600)
    _, b = _fly(lumped, jnp.zeros(3), n=600)
    _, c = _fly(lumped, jnp.zeros((600, 3)), n=600)
    for x, y, z in zip(jax.tree.leaves(a), jax.tree.leaves(b), jax.tree.leaves(c)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        np.testing.assert_array_equal(np.asarray(x), np.asarray(z))


def test_gust_pushes_the_hovering_robot_downwind(lumped):
    """A 1 m/s gust along +x from 0.1 s on (per-step wind): over the 0.6 s
    flight the averaged model drifts downwind, the opposite gust mirrors it,
    and the cross-wind axis barely moves."""
    n = 6000
    t = np.arange(n) * 1e-4
    gust = np.zeros((n, 3))
    gust[t >= 0.1, 0] = 1.0
    _, down = _fly(lumped, jnp.asarray(gust), n)
    _, up = _fly(lumped, jnp.asarray(-gust), n)
    _, calm = _fly(lumped, None, n)
    dx = np.asarray(down.position[:, 0] - calm.position[:, 0])
    # before the gust nothing differs; after it the robot is pushed downwind
    assert np.all(dx[:10] == 0.0)
    assert np.max(dx) > 2e-3
    assert np.min(dx[10:]) > -1e-6
    np.testing.assert_allclose(np.asarray(up.position[:, 0] - calm.position[:, 0]), -dx, atol=1e-3 * np.max(dx))
    assert np.max(np.abs(np.asarray(down.position[:, 1] - calm.position[:, 1]))) < 0.05 * np.max(dx)


def test_bad_wind_is_refused_naming_it(lumped):
    robot, params, st = lumped
    for bad, message in ((jnp.zeros((5, 3)), r"wind: expected shape \(3,\) or \(n_steps, 3\) = \(600, 3\)"),
                         (jnp.zeros(2), "wind: expected shape"),
                         (jnp.array([0.0, jnp.nan, 0.0]), "wind"),
                         (jnp.array([True, False, True]), "wind")):
        with pytest.raises(ConfigError, match=message):
            fl.hover_rollout(robot, params, st, 600, wind=bad)


def test_constant_wind_equals_the_same_wind_every_step(lumped):
    _, a = _fly(lumped, WIND, n=600)
    _, b = _fly(lumped, jnp.tile(WIND, (600, 1)), n=600)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    _, calm = _fly(lumped, None, n=600)
    assert float(jnp.max(jnp.abs(a.position - calm.position))) > 1e-5  # the wind acts
