"""Gains designed on the linear hover model with the plate's motion: the
loop reduces to the rigid-body one without the terms, the rigid-body LQR
gains ring with the identified terms, and the refined gains damp the loop."""

import numpy as np
import pytest

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.control.design import LinearHoverModel, closed_loop, design_feedback, design_gains, \
    feedback_from_gains
from flapjax.control.plate_motion_design import PlateMotionTerms, closed_loop_with_plate_motion, \
    design_feedback_with_plate_motion, design_gains_with_plate_motion
from flapjax.validation import ConfigError

F_H = 42.2137
# free-flight values of the identify --quick model with its plate-motion terms (docs/physics.md)
IDENTIFIED = CycleAveragedParams(
    lift_coefficient=1.6515e-4, horizontal_damping=0.018689, roll_gain=5.5301e-4, pitch_gain=5.4788e-4,
    rate_damping=(2.952e-5, 5.281e-5, 1.0624e-4), roll_speed_coupling=-6.31e-6, pitch_speed_coupling=-2.379e-4,
    plate_reaction=(0.2329, 0.1861), stroke_plane_damping=(2.952e-5, 5.281e-5))
LAGGED = dict(estimate_lag=0.0069, plate_lag=0.006)


def _least_damping(model, terms, k):
    z = []
    for axis in (0, 1):
        ev = np.linalg.eigvals(closed_loop_with_plate_motion(model, terms, k, axis)[0])
        z.append(float(np.min(-ev.real / np.abs(ev))))
    return np.array(z)


def test_without_terms_the_loop_is_the_rigid_body_one():
    model = LinearHoverModel.per_wing(**LAGGED)
    k = design_feedback(model)
    for axis in (0, 1):
        ours = np.linalg.eigvals(closed_loop_with_plate_motion(model, PlateMotionTerms(), k, axis)[0])
        theirs = np.linalg.eigvals(closed_loop(model, k, axis))
        # the stroke plane's plate adds one pole at -1/tau_s that nothing else sees
        extra = -1.0 / PlateMotionTerms().stroke_plane_lag
        ours = np.delete(ours, np.argmin(np.abs(ours - extra)))
        np.testing.assert_allclose(np.sort_complex(ours), np.sort_complex(theirs), rtol=1e-8)


def test_the_rigid_body_gains_ring_and_the_refined_ones_damp_the_loop():
    model = LinearHoverModel.from_averaged(IDENTIFIED, frequency=F_H, **LAGGED)
    terms = PlateMotionTerms.from_averaged(IDENTIFIED, F_H)
    rigid = feedback_from_gains(design_gains(LinearHoverModel.from_averaged(IDENTIFIED, frequency=F_H),
                                             hover_frequency=F_H), 9.81)
    assert _least_damping(model, terms, rigid).min() < 0.1  # the plate-reaction loop rings (about 8 Hz in roll)
    refined = feedback_from_gains(design_gains_with_plate_motion(IDENTIFIED, F_H), 9.81)
    assert _least_damping(model, terms, refined).min() > 0.3
    assert refined[1, 3] < 0.85 * rigid[1, 3]  # a gentler roll rate gain: the fast loop's gain falls
    no_reaction = PlateMotionTerms(stroke_plane_lag=terms.stroke_plane_lag)
    assert _least_damping(model, no_reaction, rigid).min() > 0.3  # the terms, not the lags, make it ring


def test_without_terms_the_designed_gains_are_kept():
    plain = CycleAveragedParams(lift_coefficient=1.6515e-4)
    a = feedback_from_gains(design_gains_with_plate_motion(plain, F_H), 9.81)
    b = feedback_from_gains(design_gains(LinearHoverModel.from_averaged(plain, frequency=F_H), hover_frequency=F_H),
                            9.81)
    np.testing.assert_array_equal(a, b)


def test_terms_map_the_joints_to_the_axes_they_tilt():
    terms = PlateMotionTerms.from_averaged(IDENTIFIED, 40.0)
    assert terms.plate_reaction == pytest.approx((0.1861, 0.2329))  # x: roll_joint, y: pitch_joint
    assert terms.stroke_plane_lag == pytest.approx(0.5 / 40.0)


def test_bad_inputs_name_the_field():
    with pytest.raises(ConfigError, match="stroke_plane_lag"):
        PlateMotionTerms(stroke_plane_lag=0.0)
    with pytest.raises(ConfigError, match="lag"):
        closed_loop_with_plate_motion(LinearHoverModel.per_wing(plate_lag=0.0), PlateMotionTerms(),
                                      np.zeros((2, 4)), 0)
    with pytest.raises(ConfigError, match="start"):
        design_feedback_with_plate_motion(LinearHoverModel.per_wing(**LAGGED), PlateMotionTerms(), np.zeros((2, 4)))
