"""The per-wing robot (MJX, free flight) hovers under the designed controller:
2 s from z = 0.5 m on the periodic orbit; over the last 0.5 s the
cycle-mean tilt stays under 1 deg, the tilt RMS under 3 deg and the altitude
error under 5 mm (benchmarks/flapper_hover.py flies the randomized starts)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.control import design
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
