"""Health per world: a world whose command, thrust or margin turns
non-finite, whose speed or body rate leaves the profile's bounds, or whose
scene holds NaN is flagged (``diverged``, with the reason in ``health``) and
frozen, both backends agree, the other worlds of the batch are untouched,
and an evaluation report counts such worlds."""

from types import SimpleNamespace

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import rotor
from flapjax.control.wrench import Reference
from flapjax.evaluate_report import aggregate
from flapjax.sim import multirotor
from flapjax.sim.multirotor import step as st
from flapjax.tasks.config import NoiseConfig
from flapjax.validation import ConfigError

QUAD = rotor.profiles.quad_x()
START = jnp.array([0.0, 0.0, 0.5])
N_STEPS = 6


def _batch(world, params_list, refs):
    params = jax.tree.map(lambda *x: jnp.stack(x), *params_list)
    reference = jax.tree.map(lambda *x: jnp.stack(x), *refs)
    n = len(params_list)
    keys = jax.random.split(jax.random.key(0), n)
    state = world.batched_reset(params, keys, jnp.tile(START, (n, 1)), jnp.zeros(n))
    return world.batched_rollout(params, state, reference, N_STEPS)


@pytest.fixture(scope="module")
def rigid_world():
    return multirotor.MultirotorWorld(QUAD, backend="rigid")


def _cases(world):
    p = world.default_params()
    hover = Reference.hover(START, 0.0)
    return {
        "healthy": (p, hover, 0),
        "NaN reference": (p, Reference.hover(jnp.array([jnp.nan, 0.0, 0.5]), 0.0), st.NON_FINITE_COMMAND),
        "NaN wall": (eqx.tree_at(lambda q: q.scene.wall_x, p, jnp.nan), hover, st.NON_FINITE_SCENE),
        "infinite sensor noise": (eqx.tree_at(lambda q: q.noise.sensor.position_std, p, jnp.full(3, jnp.inf)),
                                  hover, st.NON_FINITE_COMMAND),
    }


def test_unhealthy_worlds_are_flagged_frozen_and_leave_the_others_alone(rigid_world):
    cases = _cases(rigid_world)
    names = list(cases)
    _, traj = _batch(rigid_world, [cases[k][0] for k in names], [cases[k][1] for k in names])
    alone_final, alone = _batch(rigid_world, [cases["healthy"][0]], [cases["healthy"][1]])
    for i, name in enumerate(names):
        bit = cases[name][2]
        if bit == 0:
            assert not bool(traj.diverged[i].any()), name
            assert int(traj.health[i].max()) == 0, name
        else:
            assert bool(traj.diverged[i, 0]), f"{name}: not flagged at the first step"
            assert int(traj.health[i, 0]) & bit, f"{name}: {st.describe_health(int(traj.health[i, 0]))}"
            # frozen: the recorded position no longer moves
            np.testing.assert_array_equal(traj.position[i, 1], traj.position[i, -1])
    np.testing.assert_array_equal(traj.position[0], alone.position[0])


def test_health_names_each_reason():
    assert st.describe_health(0) == "healthy"
    assert st.describe_health(st.NON_FINITE_COMMAND | st.SPINNING) == (
        "non-finite command, thrust or control margin, body rate beyond the profile's bound")


def test_health_bounds_come_from_the_profile():
    speed, rate = rotor.feasibility.health_bounds(QUAD.positions, QUAD.radius, QUAD.thrust_max, QUAD.mass, box=100.0)
    # full thrust plus gravity across the 100 m box; rotor tips at the speed of sound
    a_max = float(np.sum(QUAD.thrust_max)) / float(QUAD.mass) + 9.81
    assert speed == pytest.approx(np.sqrt(2 * a_max * 100.0), rel=1e-3)
    assert rate == pytest.approx(343.0 / (0.18 + 0.0635), rel=1e-6)


def test_a_spinning_or_racing_world_is_unhealthy(rigid_world):
    zero = jnp.zeros(QUAD.n_rotors)
    out = SimpleNamespace(thrust_command=zero, thrust_realized=zero, control_margin=jnp.zeros(()), wrench=jnp.zeros(6))
    qpos = jnp.concatenate([START, jnp.array([1.0, 0, 0, 0])])
    kw = dict(speed_bound=rigid_world.speed_bound, rate_bound=rigid_world.rate_bound)
    scene = rigid_world.default_params().scene
    fast = jnp.array([rigid_world.speed_bound * 1.01, 0, 0, 0, 0, 0])
    spin = jnp.array([0, 0, 0, 0, 0, 1e8])
    assert int(st.health(qpos, jnp.zeros(6), jnp.zeros(6), out, scene, **kw)) == 0
    assert int(st.health(qpos, fast, jnp.zeros(6), out, scene, **kw)) == st.TOO_FAST
    assert int(st.health(qpos, spin, jnp.zeros(6), out, scene, **kw)) == st.SPINNING
    nan_margin = SimpleNamespace(**{**vars(out), "control_margin": jnp.asarray(jnp.nan)})
    assert int(st.health(qpos, jnp.zeros(6), jnp.zeros(6), nan_margin, scene, **kw)) == st.NON_FINITE_COMMAND


def test_rigid_and_mjx_agree_on_what_is_unhealthy(rigid_world):
    mjx_world = multirotor.MultirotorWorld(QUAD, backend="mjx")
    flags = {}
    for world in (rigid_world, mjx_world):
        cases = _cases(world)
        names = list(cases)
        _, traj = _batch(world, [cases[k][0] for k in names], [cases[k][1] for k in names])
        flags[world.backend] = np.asarray(traj.diverged)
    np.testing.assert_array_equal(flags["rigid"], flags["mjx"])


def test_the_report_counts_unhealthy_worlds_and_keeps_nan_out_of_the_margins():
    summary = dict(success=np.array([True, False, True]), diverged=np.array([False, True, False]),
                   saturation_fraction=np.zeros(3), min_control_margin=np.array([0.4, np.nan, 0.2]),
                   tracking=np.zeros(3))
    rep = aggregate(summary, 0.0)
    assert rep.unhealthy_worlds == 1 and rep.non_finite_margins == 1 and rep.diverged == 1
    assert rep.saturation["min_control_margin"] == pytest.approx(0.2)


def test_noise_that_would_overflow_float32_is_refused_naming_the_field():
    """Noise of 1e300 (inf in float32) would make NaN commands in every world;
    it is refused when the config is built, and the message names the field."""
    with pytest.raises(ConfigError, match="sensor_position_std"):
        NoiseConfig(sensor_position_std=1e300)
    with pytest.raises(ConfigError, match="command_thrust_std"):
        NoiseConfig(command_thrust_std=float("nan"))
    assert NoiseConfig(command_thrust_std=100.0).command_thrust_std == 100.0
