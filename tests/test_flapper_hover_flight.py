"""The per-wing robot (MJX, free flight) hovers under the designed controller:
2 s from z = 0.5 m on the periodic orbit; over the last 0.5 s the
cycle-mean tilt stays under 1 deg, the tilt RMS under 3 deg and the altitude
error under 5 mm (benchmarks/flapper_hover.py flies the randomized starts).
The defaults of ``init_state`` and ``hover_rollout`` are that recipe; the
legacy gains miss the bounds."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.control import design
from flapjax.control.hover import HoverGains
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.hover import hover_quality

TARGET = jnp.array([0.0, 0.0, 0.5])
F_H = 42.2213


@pytest.mark.slow
def test_per_wing_robot_hovers_within_the_acceptance_bounds():
    robot = fl.make_robot("free", "wing")
    params = fl.default_params(robot, frequency=F_H)
    gains = design.design_gains()
    state = fl.init_state(robot, params, position=TARGET, periodic=True)
    prior = fl.BasePose(position=TARGET, velocity=jnp.zeros(3), rot_world_body=jnp.eye(3), w_body=jnp.zeros(3))
    fin, rec = jax.jit(lambda s: fl.hover_rollout(robot, params, s, 20000, gains=gains, target=TARGET,
                                                  record_every=10, checkpoint=False, prior=prior))(state)
    q = hover_quality(rec, TARGET, frequency=F_H, record_dt=10 * robot.dt)
    assert bool(fin.healthy)
    assert float(q.cycle_mean_tilt) < np.deg2rad(1.0), np.degrees(float(q.cycle_mean_tilt))
    assert float(q.tilt_rms) < np.deg2rad(3.0), np.degrees(float(q.tilt_rms))
    assert float(q.altitude_error) < 0.005, float(q.altitude_error)
    assert bool(q.meets())
    # the plate stays well inside its limit once the estimate has settled
    assert float(jnp.max(jnp.abs(rec.plate[100:]))) < 0.3


def _acceptance(robot, params, rec):
    q = hover_quality(rec, TARGET, frequency=float(params.averaged.hover_frequency), record_dt=10 * robot.dt)
    return q, (np.degrees(float(q.tilt_rms)), np.degrees(float(q.cycle_mean_tilt)), float(q.altitude_error))


@pytest.mark.slow
def test_the_defaults_fly_the_per_wing_robot():
    """The plain call, nothing chosen: default params (30 Hz schedule), the
    default (periodic) start, the default (designed) gains."""
    robot = fl.make_robot("free", "wing")
    params = fl.default_params(robot)
    fin, rec = fl.hover_rollout(robot, params, fl.init_state(robot, params, position=TARGET), 20_000)
    q, numbers = _acceptance(robot, params, rec)
    assert bool(fin.healthy)
    assert float(q.tilt_rms) < np.deg2rad(3.0), numbers
    assert float(q.cycle_mean_tilt) < np.deg2rad(1.0), numbers
    assert float(q.altitude_error) < 0.005, numbers


@pytest.mark.slow
@pytest.mark.parametrize("periodic", [True, False], ids=["periodic start", "schedule start"])
def test_the_legacy_gains_miss_the_bounds(periodic):
    """What the defaults were: the legacy gains (no cycle filter, no rate
    feedback) tip the per-wing robot over, from either start."""
    robot = fl.make_robot("free", "wing")
    params = fl.default_params(robot)
    state = fl.init_state(robot, params, position=TARGET, periodic=periodic)
    _, rec = fl.hover_rollout(robot, params, state, 20_000, gains="legacy")
    q, numbers = _acceptance(robot, params, rec)
    assert not bool(q.meets()), numbers
    assert float(q.tilt_rms) > np.deg2rad(30.0), numbers


def test_default_gains_are_the_designed_gains_of_the_readme_cached():
    """The per-wing robot's default gains are design_gains() at the params'
    hover frequency (the README's recipe), computed once; the averaged
    model keeps the legacy gains; names pick either."""
    wing = fl.make_robot("free", "wing", backend="rigid")
    params = fl.default_params(wing)
    gains = fl.hover_gains(wing, params)
    assert gains is fl.hover_gains(wing, fl.default_params(wing)) is fl.hover_gains(wing, params, "designed")
    readme = design.design_gains()
    assert gains.cycle_filter and readme.cycle_filter
    for name in ("position_p", "position_d", "attitude_p", "attitude_d", "altitude_p", "altitude_i", "altitude_d"):
        np.testing.assert_allclose(np.asarray(getattr(gains, name)), np.asarray(getattr(readme, name)), rtol=1e-5,
                                   err_msg=name)
    lumped = fl.make_robot("lumped", "averaged", backend="rigid")
    legacy = fl.hover_gains(lumped, fl.default_params(lumped))
    assert legacy == HoverGains.legacy() == fl.hover_gains(wing, params, "legacy")
    assert not legacy.cycle_filter
    heavier = fl.default_params(wing, averaged=params.averaged.__class__(mass=0.033))
    assert float(fl.hover_gains(wing, heavier).altitude_p) != float(gains.altitude_p)  # designed at its own f_h
    with pytest.raises(Exception, match="gains: must be a HoverGains or one of"):
        fl.hover_gains(wing, params, "designd")


def test_hover_quality_reads_the_window():
    """Synthetic records: a 2 deg wingbeat rocking about a 0.5 deg mean tilt,
    3 mm high."""
    n, dt_rec = 400, 1e-3
    t = np.arange(n) * dt_rec
    tilt = np.stack([np.deg2rad(0.5) + np.deg2rad(2.0) * np.sin(2 * np.pi * 40.0 * t), np.zeros(n)], axis=1)
    pos = np.tile([0.0, 0.0, 0.503], (n, 1))
    rec = fl.HoverRecord(time=jnp.asarray(t), position=jnp.asarray(pos), velocity=jnp.zeros((n, 3)),
                         tilt=jnp.asarray(tilt), frequency=jnp.full(n, 40.0), plate=jnp.zeros((n, 2)),
                         force_world=jnp.zeros((n, 3)), healthy=jnp.ones(n, bool))
    q = hover_quality(rec, TARGET, frequency=40.0, record_dt=dt_rec, window=0.2)
    assert float(q.cycle_mean_tilt) == pytest.approx(np.deg2rad(0.5), rel=0.02)
    assert float(q.tilt_rms) == pytest.approx(np.deg2rad(np.sqrt(0.5**2 + 2.0**2 / 2)), rel=0.02)
    assert float(q.altitude_error) == pytest.approx(0.003, rel=1e-9)
    assert bool(q.meets())
    assert not bool(q.meets(altitude_error=0.002))
    with pytest.raises(Exception, match="records"):
        hover_quality(rec, TARGET, frequency=40.0, record_dt=dt_rec, window=1.0)
