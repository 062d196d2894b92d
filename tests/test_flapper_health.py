"""A flapper world that is no longer a result is flagged with its reasons:
non-finite state, base speed or body rate beyond the airframe's bounds, an
aerodynamic force beyond what the wings can make (``lift_scale`` = inf or
1e3), a non-finite scaling parameter. Each reason is checked on both sides
of its bound, in the pure check and through real steps."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import aero
from flapjax.sim import flapper as fl
from flapjax.sim.flapper import health as H
from flapjax.sim.flapper.step import step

N_STEPS = 20


@pytest.fixture(scope="module")
def wing_robot():
    return fl.make_robot("fixed", "wing", backend="rigid")


@pytest.fixture(scope="module")
def lumped_robot():
    return fl.make_robot("lumped", "averaged", backend="rigid")


def _run(robot, params, state, n=N_STEPS):
    """``n`` steps of one world (one compiled program per robot and shapes)."""
    return _steps(robot, params, state, n)


@eqx.filter_jit
def _steps(robot, params, state, n):
    return jax.lax.scan(lambda s, _: (step(robot, params, s)[0], None), state, None, length=n)[0]


def _pure(robot, params, **overrides):
    """:func:`H.health` of a calm world at 30 Hz with ``overrides`` of its inputs."""
    nq, nv = robot.model.nq, robot.model.nv
    args = dict(qpos=jnp.zeros(nq), qvel=jnp.zeros(nv), v_com=jnp.zeros(3), w_body=jnp.zeros(3),
                force_world=jnp.array([0.0, 0.0, 0.3]), frequency=jnp.asarray(30.0))
    args.update(overrides)
    return int(H.health(robot, params, **args))


def test_each_reason_on_both_sides_of_its_bound(lumped_robot):
    robot, params = lumped_robot, fl.default_params(lumped_robot)
    f30 = jnp.asarray(30.0)
    speed, rate, force = (float(H.speed_bound(robot, params, f30)), float(H.rate_bound(robot)),
                          float(H.force_bound(robot, params, f30)))
    assert _pure(robot, params) == 0
    cases = [
        ("qvel", lambda k: jnp.full(robot.model.nv, jnp.nan if k else 1.0), H.NON_FINITE_STATE),
        ("v_com", lambda k: jnp.array([(1.01 if k else 0.99) * speed, 0.0, 0.0]), H.TOO_FAST),
        ("w_body", lambda k: jnp.array([0.0, (1.01 if k else 0.99) * rate, 0.0]), H.SPINNING),
        ("force_world", lambda k: jnp.array([0.0, 0.0, (1.01 if k else 0.99) * force]), H.FORCE_BEYOND_WING),
        ("force_world", lambda k: jnp.array([0.0, jnp.nan if k else 0.0, 0.3]), H.FORCE_BEYOND_WING),
    ]
    for name, value, bit in cases:
        assert _pure(robot, params, **{name: value(False)}) == 0, name
        assert _pure(robot, params, **{name: value(True)}) == bit, name
    hot = eqx.tree_at(lambda p: p.aero.lift_scale, params, jnp.asarray(jnp.inf))
    assert _pure(robot, hot) == H.NON_FINITE_PARAMS
    no_clip = eqx.tree_at(lambda p: p.aero.force_limit, params, jnp.asarray(jnp.inf))  # inf limit: no clip, healthy
    assert _pure(robot, no_clip) == 0


def test_the_bounds_scale_with_weight_frequency_and_span(lumped_robot):
    robot, params = lumped_robot, fl.default_params(lumped_robot)
    weight = float(np.sum(robot.model.body_mass)) * 9.81
    k_f = float(params.averaged.lift_coefficient)
    assert float(H.force_bound(robot, params, jnp.asarray(1.0))) == pytest.approx(H.FORCE_MULTIPLE * weight, rel=1e-6)
    assert float(H.force_bound(robot, params, jnp.asarray(200.0))) == pytest.approx(
        H.FORCE_MULTIPLE * k_f * 200.0**2, rel=1e-6)
    assert float(H.rate_bound(robot)) == pytest.approx(H.SPEED_OF_SOUND / float(robot.wing.geometry.span))


@pytest.mark.parametrize("frequency", [20.0, 60.0, 120.0])
def test_a_nominal_wing_world_stays_healthy_well_inside_the_force_bound(wing_robot, frequency):
    robot = wing_robot
    params = fl.default_params(robot, frequency=frequency)
    state = fl.init_state(robot, params)
    final, peak = _peak_force(robot, params, state)
    assert int(final.health) == 0 and bool(final.healthy)
    assert float(peak) < 0.5 * float(H.force_bound(robot, params, jnp.asarray(frequency)))


@eqx.filter_jit
def _peak_force(robot, params, state):
    def body(s, _):
        s, dg = step(robot, params, s)
        return s, jnp.linalg.norm(dg.force_world)

    final, force = jax.lax.scan(body, state, None, length=400)
    return final, jnp.max(force)


@pytest.mark.parametrize("lift_scale,bits", [(jnp.inf, H.NON_FINITE_PARAMS | H.FORCE_BEYOND_WING),
                                             (1e3, H.FORCE_BEYOND_WING)], ids=["inf", "1e3"])
def test_a_wing_that_makes_too_much_force_is_unhealthy_with_its_reason(wing_robot, lift_scale, bits):
    robot = wing_robot
    nominal = fl.default_params(robot)
    state = fl.init_state(robot, nominal)
    calm = _run(robot, nominal, state)
    assert int(calm.health) == 0 and bool(calm.healthy)
    # AeroOptions refuses inf when it is built; a fit or a randomized batch can still reach it inside jit
    params = eqx.tree_at(lambda p: p.aero.lift_scale, nominal, jnp.asarray(lift_scale, nominal.aero.lift_scale.dtype))
    final = _run(robot, params, state)
    assert not bool(final.healthy)
    assert int(final.health) & bits == bits, H.describe_health(final.health)
    assert "beyond what the wings can make" in H.describe_health(final.health)


def test_a_non_finite_state_is_frozen_at_the_last_healthy_one(lumped_robot):
    robot = lumped_robot
    params = fl.default_params(robot)
    state = fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 1.0]))
    bad = eqx.tree_at(lambda s: s.data.velocity, state, jnp.array([jnp.nan, 0.0, 0.0]))
    good = _run(robot, params, state)
    final = _run(robot, params, bad)
    assert int(good.health) == 0 and bool(good.healthy)
    assert not bool(final.healthy) and int(final.health) & H.NON_FINITE_STATE
    np.testing.assert_array_equal(np.asarray(final.data.position), np.asarray(bad.data.position))


@pytest.mark.parametrize("field,bound,bit", [("velocity", "speed", H.TOO_FAST),
                                             ("angular_velocity", "rate", H.SPINNING)])
def test_a_world_beyond_the_motion_bounds_is_unhealthy(lumped_robot, field, bound, bit):
    robot = lumped_robot
    params = fl.default_params(robot)
    state = fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 1.0]))
    limit = float(H.speed_bound(robot, params, params.stroke.frequency) if bound == "speed" else H.rate_bound(robot))
    along = jnp.array([1.0, 0.0, 0.0]) if bound == "speed" else jnp.array([0.0, 0.0, 1.0])  # yaw: no drag torque
    flags = []
    for factor in (0.9, 1.1):
        moving = eqx.tree_at(lambda s: getattr(s.data, field), state, factor * limit * along)
        flags.append(int(_run(robot, params, moving, 2).health) & bit)
    assert flags == [0, bit]


def test_reasons_are_counted_and_described():
    codes = np.array([0, H.TOO_FAST, H.TOO_FAST | H.FORCE_BEYOND_WING, H.NON_FINITE_PARAMS])
    assert H.count_reasons(codes) == {
        H.HEALTH_BITS[H.TOO_FAST]: 2,
        H.HEALTH_BITS[H.FORCE_BEYOND_WING]: 1,
        H.HEALTH_BITS[H.NON_FINITE_PARAMS]: 1,
    }
    assert H.count_reasons(np.zeros(3, int)) == {}
    assert H.describe_health(0) == "healthy"
    assert H.describe_health(H.NON_FINITE_STATE | H.SPINNING) == "non-finite state, body rate beyond the airframe's bound"


def test_a_sweep_counts_its_unhealthy_worlds_by_reason(wing_robot):
    """A real fixed-base sweep, one world per row: the row whose wing makes
    1000x its lift (a finite, accepted ``lift_scale``) is unhealthy for that
    reason, the nominal row is not, and the table counts them."""
    import io

    from flapjax.sim.flapper.sweep_table import print_sweep_table

    rows = []
    for lift_scale in (1.0, 1e3):
        params = fl.default_params(wing_robot, aero_options=aero.AeroOptions(lift_scale=lift_scale))
        rows.append(fl.sweep([30.0], duration=0.04, discard=0.0, params=params, robot=wing_robot, batch_size=1))
    assert [bool(r.healthy[0]) for r in rows] == [True, False]
    assert [int(r.health[0]) for r in rows] == [0, H.FORCE_BEYOND_WING]
    out = io.StringIO()
    print_sweep_table(rows[1], file=out)
    assert out.getvalue().splitlines()[-1] == (
        "unhealthy worlds: 1 of 1 (aerodynamic force non-finite or beyond what the wings can make: 1)")
    out = io.StringIO()
    print_sweep_table(rows[0], file=out)
    assert "unhealthy" not in out.getvalue()


def test_a_state_built_without_reasons_still_gets_its_healthy_flag(lumped_robot):
    """States built by hand (no ``health``) keep their structure through a
    rollout, and the guard still flags them."""
    robot = lumped_robot
    params = fl.default_params(robot)
    state = fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 1.0]))
    bare = fl.FlapperState(data=state.data, step=state.step, phase_offset=state.phase_offset, healthy=state.healthy)
    fast = eqx.tree_at(lambda s: s.data.velocity, bare, jnp.array([1.1 * float(H.speed_bound(
        robot, params, params.stroke.frequency)), 0.0, 0.0]))
    calm, flagged = _run(robot, params, bare, 2), _run(robot, params, fast, 2)
    assert calm.health is None and flagged.health is None
    assert bool(calm.healthy) and not bool(flagged.healthy)
