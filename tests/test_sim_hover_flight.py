"""The planned hover flight: the plan reaches the ground and wall regimes the
hover identification needs, and the minimum-jerk reference joins its
waypoints smoothly."""

from __future__ import annotations

import numpy as np
import pytest

from flapjax import rotor
from flapjax.sim.multirotor.hover_flight import flight_plan, reference_trajectory

PROF = rotor.profiles.preset("quad_x")


def test_the_plan_crosses_the_ground_and_wall_regimes_of_the_proximity_model():
    radius = float(np.mean(PROF.radius))
    reach = float(np.max(-np.asarray(PROF.positions)[:, 0]))  # nearest rotor toward +x at yaw pi
    for ground_z, wall_x in ((0.0, 2.0), (0.3, 3.1)):
        pts = np.array([p for p, _, _ in flight_plan(PROF, ground_z=ground_z, wall_x=wall_x)])
        h = (pts[:, 2] - ground_z) / radius  # rotor height is the CoM height in a level hover
        d = (wall_x - reach - pts[:, 0]) / radius
        assert h.min() == pytest.approx(0.85) and h.max() >= 6.0
        assert d.min() == pytest.approx(1.15) and np.sum((d > 1.0) & (d < 6.01) & (pts[:, 2] > ground_z + 1.0)) >= 10
        assert np.all(pts[:, 0] < wall_x - reach) and np.all(pts[:, 2] > ground_z)


def test_minimum_jerk_reference_stops_at_each_waypoint_and_integrates_to_its_positions():
    dt = 0.005
    plan = [(np.zeros(3), 0.0, 0.1), (np.array([1.0, -0.5, 0.2]), 1.0, 0.2), (np.array([0.0, 0.5, 0.0]), 0.8, 0.1)]
    pos, vel, acc = reference_trajectory(plan, dt)
    assert pos.shape == vel.shape == acc.shape == (int(round((0.1 + 1.0 + 0.2 + 0.8 + 0.1) / dt)), 3)
    hold_1 = slice(int(round(1.1 / dt)), int(round(1.3 / dt)))
    np.testing.assert_allclose(pos[hold_1], np.tile(plan[1][0], (hold_1.stop - hold_1.start, 1)))
    np.testing.assert_allclose(vel[hold_1], 0.0)
    np.testing.assert_allclose(np.diff(pos, axis=0) / dt, 0.5 * (vel[1:] + vel[:-1]), atol=2e-3)
    np.testing.assert_allclose(np.diff(vel, axis=0) / dt, 0.5 * (acc[1:] + acc[:-1]), atol=2e-2)
    speed = np.linalg.norm(vel, axis=1)
    for (start, _, _), (end, t_move, _), first in zip(plan[:-1], plan[1:], (0.1, 1.3)):  # peak: 15/8 of the mean
        move = speed[int(round(first / dt)):int(round((first + t_move) / dt))]
        assert move.max() == pytest.approx(1.875 * np.linalg.norm(end - start) / t_move, rel=1e-3)
