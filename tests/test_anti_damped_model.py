"""An anti-damped axis is an identification result, not a bad input.

Per-wing calibrations that reproduce the seed's lift table equally well give
the plate_motion study's free-flight fit D_w,y < 0 (the flapping wings' mean
pitch moment pushes with the body's pitch rate). The identification builds
its averaged model from that fit and designs the validation's controller on
it; both must take the signed value, and the LQR must hold the unstable axis.
"""

import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.control.design import LinearHoverModel, axis_matrices, feedback_from_gains, notch_delay
from flapjax.control.plate_motion_design import PlateMotionTerms, closed_loop_with_plate_motion
from flapjax.identify.flapper.results import IdentificationResult
from flapjax.identify.flapper.validation import validation_gains
from flapjax.identify.results import StudyResult
from flapjax.validation import ConfigError

# identify --quick with the admissible calibration of least driven-base D_y (benchmarks/calibration_admissible_set)
UPSTREAM = {"k_f": 1.6533e-4, "k_roll": 5.5636e-4, "k_pitch": 5.1897e-4, "k_v": 0.017025,
            "D_w": (5.18e-5, 1e-12, 3.334e-5)}  # the damping study keeps D_w >= 0 on the driven base
PLATE_MOTION = {"kappa": (0.29185, 0.41636), "D_s": (1.4662e-5, -5.0462e-5), "D_w": (1.4662e-5, -5.0462e-5, 3.334e-5),
                "L_v": -3.7246e-5, "M_u": 1.4907e-4, "A_v": (1.351e-6, -6.093e-6)}


def _study(name: str, values: dict) -> StudyResult:
    return StudyResult(name=name, values={k: jnp.asarray(v) for k, v in values.items()}, std={}, metrics={},
                       data={}, loss=jnp.zeros(0))


def _identified() -> CycleAveragedParams:
    """The model the identification builds for the studies after plate_motion (flapjax.runs.flapper_studies' path)."""
    studies = {"upstream": _study("damping", UPSTREAM), "plate_motion": _study("plate_motion", PLATE_MOTION)}
    return IdentificationResult.from_studies(studies).to_cycle_averaged_params(CycleAveragedParams())


def test_the_free_flight_fit_with_negative_pitch_damping_makes_a_model():
    model = _identified()
    np.testing.assert_allclose(model.rate_damping, PLATE_MOTION["D_w"], rtol=1e-12)
    assert float(model.rate_damping[1]) < 0.0
    np.testing.assert_allclose(model.stroke_plane_damping, PLATE_MOTION["D_s"], rtol=1e-12)
    again = CycleAveragedParams.from_dict(model.to_dict())  # a cycle_averaged.json with it loads
    np.testing.assert_array_equal(again.rate_damping, model.rate_damping)


def test_the_validation_controller_holds_the_anti_damped_axis():
    model = _identified()
    f_h = float(model.hover_frequency)
    linear = LinearHoverModel.from_averaged(model, frequency=f_h)
    assert linear.rate_damping[0] == pytest.approx(PLATE_MOTION["D_w"][1])  # x axis (pitch) carries D_y
    # without the speed coupling the pitch rate alone diverges at -D_y / I_yy
    a, _ = axis_matrices(LinearHoverModel.from_averaged(model, frequency=f_h, coupling=(0.0, 0.0)), 0)
    growth = -PLATE_MOTION["D_w"][1] / linear.inertia[0]
    assert np.max(np.linalg.eigvals(a).real) == pytest.approx(growth, rel=1e-9)
    gains = validation_gains({"controller": "designed"}, model, f_h)
    k = feedback_from_gains(gains, float(model.gravity))
    lagged = LinearHoverModel.from_averaged(model, frequency=f_h, estimate_lag=notch_delay(f_h),
                                            plate_lag=gains.command_lag)
    terms = PlateMotionTerms.from_averaged(model, f_h)
    for axis in (0, 1):
        closed = closed_loop_with_plate_motion(lagged, terms, k, axis)[0]
        assert np.max(np.linalg.eigvals(closed).real) < -0.5, axis
        open_loop = closed_loop_with_plate_motion(lagged, terms, np.zeros_like(k), axis)[0]
        assert np.max(np.linalg.eigvals(open_loop).real) > 0.0, axis  # the loop closes around an unstable plant


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_rate_damping_is_refused_by_name(bad):
    with pytest.raises(ConfigError, match=r"CycleAveragedParams\.rate_damping: must be finite"):
        CycleAveragedParams(rate_damping=(1e-5, bad, 1e-5))
    with pytest.raises(ConfigError, match=r"LinearHoverModel\.rate_damping"):
        LinearHoverModel(rate_damping=(bad, 1e-5))


def test_identify_runs_to_the_end_after_an_anti_damped_free_flight_fit(tmp_path, monkeypatch):
    """The driver (flapjax.runs.flapper_studies) builds the model for the study after plate_motion
    from its D_w,y < 0 (where it once stopped), designs the validation's
    gains on it, and writes results.json and cycle_averaged.json; the
    rollouts are replaced by the values they gave."""
    from flapjax.identify.flapper import config as idc
    from flapjax.identify.flapper import studies
    from flapjax.runs import flapper_studies as run

    def fake(name, values):
        return lambda cfg, *args, **kw: _study(name, values)

    handed = []

    def validation(cfg, identified, *, bar=None):
        f_h = float(identified.hover_frequency)
        gains = validation_gains(cfg["validation"], identified, f_h)
        handed.append((identified, gains))
        metrics = {"hover_frequency": f_h, "fixed_base_lift_at_hover_over_weight": 1.0,
                   "per_wing_hover_frequency_over_identified": 1.0, "flights": {}}
        return StudyResult(name="validation", values={}, std={}, metrics=metrics, data={}, loss=jnp.zeros(0))

    monkeypatch.setattr(studies, "study_plate_motion", fake("plate_motion", PLATE_MOTION))
    monkeypatch.setattr(studies, "study_validation", validation)
    cfg = idc.default_config(quick=True)
    cfg["run"].update(studies=["plate_motion", "validation"], plots=False)
    out = tmp_path / "run"
    final = run.run_identification(cfg, out_dir=out, progress=False, echo=lambda s: None)
    (model, gains), = handed
    assert float(model.rate_damping[1]) == pytest.approx(PLATE_MOTION["D_w"][1], rel=1e-12)
    assert np.all(np.isfinite(feedback_from_gains(gains, 9.81)))
    saved = CycleAveragedParams.from_json(out / "cycle_averaged.json")
    assert float(saved.rate_damping[1]) == pytest.approx(PLATE_MOTION["D_w"][1], rel=1e-12)
    assert (out / "results.json").is_file() and "validation" in final.studies
