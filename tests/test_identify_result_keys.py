"""The shape of every ``results.json`` the identifications write: each nested
key path (``fit.correlation.matrix``; ``conditions[].held_out`` for the dicts
inside a list) that the quick simulated identification and each measured-data
fit (stand table, phase-resolved record, flight log, hover log) write for the
project's sample files. A refactoring of the fits must keep every key; a new
key is added here on purpose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "identification" / "data"

TINY_CONFIG = """
[run]
studies = ["lift", "moments"]
batch_size = 4

[lift]
frequencies = [40.0, 50.0]
duration = 0.05
discard = 0.02

[moments]
frequencies = [40.0]
tilts = [-0.2, 0.2]
duration = 0.05
discard = 0.02
"""


def key_paths(record, prefix: str = "") -> set[str]:
    """Every key path of a JSON record: ``a``, ``a.b`` for nested dicts,
    ``a[].b`` for the dicts inside a list (lists of values add nothing)."""
    out: set[str] = set()
    if isinstance(record, dict):
        for key, value in record.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out.add(path)
            out |= key_paths(value, path)
    elif isinstance(record, list):
        for value in record:
            out |= key_paths(value, prefix + "[]")
    return out


def assert_keys(out_dir: Path, expected: set[str]) -> None:
    """``out_dir/results.json`` has exactly the key paths ``expected``."""
    found = key_paths(json.loads((Path(out_dir) / "results.json").read_text()))
    missing, extra = sorted(expected - found), sorted(found - expected)
    assert not missing and not extra, f"missing keys {missing}; new keys {extra}"


def _keys(text: str) -> set[str]:
    return set(text.split())


QUICK = _keys("""
cycle_averaged cycle_averaged.gravity cycle_averaged.horizontal_damping
cycle_averaged.lift_coefficient cycle_averaged.mass cycle_averaged.pitch_gain
cycle_averaged.pitch_speed_coupling cycle_averaged.plate_reaction cycle_averaged.rate_damping
cycle_averaged.reference_frequency cycle_averaged.stroke_plane_damping cycle_averaged.airspeed_rate_coupling
cycle_averaged.roll_gain cycle_averaged.roll_speed_coupling identified identified.k_f
identified.k_pitch identified.k_roll k_f k_f_std k_pitch k_pitch_std k_roll k_roll_std residuals
residuals.lift residuals.lift.all_healthy residuals.lift.clip_fraction_max residuals.lift.final_loss
residuals.lift.fit_steps residuals.lift.hover_frequency residuals.lift.ignored_worlds
residuals.lift.k_f_least_squares residuals.lift.k_f_relative_difference
residuals.lift.lift_per_f2_spread residuals.lift.r2 residuals.lift.rms_residual
residuals.lift.robot_mass residuals.lift.stroke_error_rms_max residuals.moments
residuals.moments.base_drift_max residuals.moments.cross_moment_max residuals.moments.final_loss
residuals.moments.fit_steps residuals.moments.k_pitch_least_squares
residuals.moments.k_roll_least_squares residuals.moments.primary_moment_max
residuals.moments.r2_pitch residuals.moments.r2_roll residuals.moments.reference_frequency
residuals.moments.rms_residual settings settings.calibration settings.calibration.source
settings.calibration.values settings.damping settings.damping.armature
settings.damping.axes settings.damping.discard settings.damping.duration settings.damping.frequency
settings.damping.learning_rate settings.damping.max_steps settings.damping.optimizer
settings.damping.rates settings.damping.speeds settings.damping.start_factor settings.fidelity
settings.fidelity.amplitudes settings.fidelity.backend settings.fidelity.frequency_step settings.fidelity.gust
settings.fidelity.height settings.fidelity.horizon settings.fidelity.onset settings.fidelity.phases
settings.fidelity.timestep settings.plate_motion settings.plate_motion.amplitude settings.plate_motion.backend
settings.plate_motion.closed_loop_horizon settings.plate_motion.closed_loop_onset
settings.plate_motion.gust settings.plate_motion.gust_wingbeats settings.plate_motion.height settings.plate_motion.horizon settings.plate_motion.onset settings.plate_motion.phases
settings.plate_motion.pulse_wingbeats settings.plate_motion.timestep settings.lift
settings.lift.discard settings.lift.duration settings.lift.frequencies settings.lift.learning_rate
settings.lift.max_steps settings.lift.optimizer settings.lift.start_factor settings.moments
settings.moments.discard settings.moments.duration settings.moments.frequencies
settings.moments.learning_rate settings.moments.max_steps settings.moments.optimizer
settings.moments.start_factor settings.moments.tilts settings.physical settings.physical.discard
settings.physical.duration settings.physical.frequencies settings.physical.grad_mode
settings.physical.learning_rate settings.physical.line_search settings.physical.max_steps
settings.physical.optimizer settings.physical.parameters settings.physical.start
settings.physical.targets settings.reused_studies settings.run settings.run.batch_size
settings.run.float64 settings.run.plots settings.run.studies settings.validation
settings.validation.controller settings.validation.duration settings.validation.height
settings.validation.max_attitude_rms_deg settings.validation.max_position_rms
settings.validation.plate_step settings.validation.step_length settings.validation.step_start
settings.validation.tail settings.validation.window source std std.k_pitch std.k_roll studies
studies.lift studies.lift.converged studies.lift.data studies.lift.data.fitted
studies.lift.data.force_z studies.lift.data.frequency studies.lift.loss studies.lift.metrics
studies.lift.metrics.all_healthy studies.lift.metrics.clip_fraction_max
studies.lift.metrics.final_loss studies.lift.metrics.fit_steps studies.lift.metrics.hover_frequency
studies.lift.metrics.ignored_worlds studies.lift.metrics.k_f_least_squares
studies.lift.metrics.k_f_relative_difference studies.lift.metrics.lift_per_f2_spread
studies.lift.metrics.r2 studies.lift.metrics.rms_residual studies.lift.metrics.robot_mass
studies.lift.metrics.stroke_error_rms_max studies.lift.name studies.lift.notes studies.lift.seconds
studies.lift.std studies.lift.values studies.lift.values.k_f studies.moments
studies.moments.converged studies.moments.data studies.moments.data.frequency
studies.moments.data.moment studies.moments.data.pitch_x studies.moments.data.pitch_y
studies.moments.data.plate studies.moments.data.roll_x studies.moments.data.roll_y
studies.moments.loss studies.moments.metrics studies.moments.metrics.base_drift_max
studies.moments.metrics.cross_moment_max studies.moments.metrics.final_loss
studies.moments.metrics.fit_steps studies.moments.metrics.k_pitch_least_squares
studies.moments.metrics.k_roll_least_squares studies.moments.metrics.primary_moment_max
studies.moments.metrics.r2_pitch studies.moments.metrics.r2_roll
studies.moments.metrics.reference_frequency studies.moments.metrics.rms_residual
studies.moments.name studies.moments.notes studies.moments.seconds studies.moments.std
studies.moments.std.k_pitch studies.moments.std.k_roll studies.moments.values
studies.moments.values.k_pitch studies.moments.values.k_roll study units units.k_f units.k_pitch
units.k_roll validation validation_passed versions versions.equinox versions.flapjax
versions.float64 versions.jax versions.jax_backend versions.jaxlib versions.mujoco
versions.mujoco-mjx versions.numpy versions.optax versions.python
""")

STAND = _keys("""
converged correlation correlation.matrix correlation.names files fit_reason fit_steps fx_offset
fx_offset_std fy_offset fy_offset_std fz_offset fz_offset_std k_f k_f_std k_pitch k_pitch_cross
k_pitch_cross_std k_pitch_std k_roll k_roll_cross k_roll_cross_std k_roll_std least_squares
least_squares.fx_offset least_squares.fy_offset least_squares.fz_offset least_squares.k_f
least_squares.k_pitch least_squares.k_pitch_cross least_squares.k_roll least_squares.k_roll_cross
least_squares.mx_offset least_squares.my_offset mx_offset mx_offset_std my_offset my_offset_std
not_identified notes r2 r2.fx_n r2.fy_n r2.fz_n r2.mx_nm r2.my_nm reference_frequency residual_std
residual_std.fx_n residual_std.fy_n residual_std.fz_n residual_std.mx_nm residual_std.my_nm rows
rows_fitted rows_held_out seconds source study units units.fx_offset units.fy_offset units.fz_offset
units.k_f units.k_pitch units.k_pitch_cross units.k_roll units.k_roll_cross units.mx_offset
units.my_offset validation validation.fx_n validation.fx_n.rms validation.fx_n.rms_over_measured
validation.fx_n.rms_over_sigma validation.fy_n validation.fy_n.rms validation.fy_n.rms_over_measured
validation.fy_n.rms_over_sigma validation.fz_n validation.fz_n.rms validation.fz_n.rms_over_measured
validation.fz_n.rms_over_sigma validation.mx_nm validation.mx_nm.rms
validation.mx_nm.rms_over_measured validation.mx_nm.rms_over_sigma validation.my_nm
validation.my_nm.rms validation.my_nm.rms_over_measured validation.my_nm.rms_over_sigma versions
versions.equinox versions.flapjax versions.float64 versions.jax versions.jax_backend versions.jaxlib
versions.mujoco versions.mujoco-mjx versions.numpy versions.optax versions.python
""")

#: Added to STAND by a stand fit with physical=True.
STAND_PHYSICAL = _keys("""
physical physical.channels physical.converged physical.correlation physical.correlation.matrix
physical.correlation.names physical.discard physical.duration physical.fit_steps physical.fitted
physical.frequency physical.notes physical.reason physical.relative_std
physical.relative_std.lift_scale physical.residual_sigma physical.rows physical.seconds
physical.start physical.start.lift_scale physical.std physical.std.lift_scale physical.target
physical.values physical.values.lift_scale
""")

WAVEFORM = _keys("""
channels conditions conditions[].frequency_hz conditions[].held_out conditions[].pitch_plate_rad
conditions[].roll_plate_rad correlation correlation.matrix correlation.names discard duration files
fx_offset fx_offset_std fy_offset fy_offset_std fz_offset fz_offset_std hinge_stiffness
hinge_stiffness_std iterations lift_scale lift_scale_std mx_offset mx_offset_std my_offset
my_offset_std notes reason relative_std relative_std.hinge_stiffness relative_std.lift_scale
relative_std.wing_inertia_scale residual_std residual_std.fx_n residual_std.fy_n residual_std.fz_n
residual_std.mx_nm residual_std.my_nm rows seconds source start start.hinge_stiffness
start.lift_scale start.wing_inertia_scale study units units.fx_offset units.fy_offset
units.fz_offset units.hinge_stiffness units.lift_scale units.mx_offset units.my_offset
units.wing_inertia_scale validation validation.fx_n validation.fx_n.rms
validation.fx_n.rms_over_measured validation.fx_n.rms_over_sigma validation.fy_n validation.fy_n.rms
validation.fy_n.rms_over_measured validation.fy_n.rms_over_sigma validation.fz_n validation.fz_n.rms
validation.fz_n.rms_over_measured validation.fz_n.rms_over_sigma validation.mx_nm
validation.mx_nm.rms validation.mx_nm.rms_over_measured validation.mx_nm.rms_over_sigma
validation.my_nm validation.my_nm.rms validation.my_nm.rms_over_measured
validation.my_nm.rms_over_sigma versions versions.equinox versions.flapjax versions.float64
versions.jax versions.jax_backend versions.jaxlib versions.mujoco versions.mujoco-mjx versions.numpy
versions.optax versions.python wing_inertia_scale wing_inertia_scale_std
""")

FLIGHT_LOG = _keys("""
D_w_x D_w_x_std D_w_y D_w_y_std L_v L_v_std M_u M_u_std body body.given body.inertia_kgm2
body.mass_kg cycle_averaged cycle_averaged.gravity cycle_averaged.horizontal_damping
cycle_averaged.lift_coefficient cycle_averaged.mass cycle_averaged.pitch_gain
cycle_averaged.pitch_speed_coupling cycle_averaged.plate_reaction cycle_averaged.rate_damping
cycle_averaged.reference_frequency cycle_averaged.stroke_plane_damping cycle_averaged.airspeed_rate_coupling
cycle_averaged.roll_gain cycle_averaged.roll_speed_coupling files fit fit.command_delay_samples
fit.correlation fit.correlation.matrix fit.correlation.names fit.cost fit.iterations
fit.not_identified fit.nuisance_parameters fit.parameters fit.reason fit.residual_over_noise
fit.residual_over_noise.pitch_rad fit.residual_over_noise.roll_rad fit.residual_over_noise.x_m
fit.residual_over_noise.y_m fit.residual_over_noise.yaw_rad fit.residual_over_noise.z_m
fit.residual_sigma fit.sample_rate fit.samples_dropped fit.samples_fitted fit.seconds fit.segment
fit.segments k_f k_f_std k_pitch k_pitch_std k_roll k_roll_std k_v k_v_std noise noise.pitch_rad
noise.roll_rad noise.x_m noise.y_m noise.yaw_rad noise.z_m notes pitch_offset pitch_offset_std
roll_offset roll_offset_std seconds settings settings.holdout settings.init_window
settings.max_iterations settings.segment settings.substeps source study units units.D_w_x
units.D_w_y units.L_v units.M_u units.k_f units.k_pitch units.k_roll units.k_v units.pitch_offset
units.roll_offset validation validation.horizon validation.identified
validation.identified.attitude_rms_deg validation.identified.attitude_rms_over_sigma
validation.identified.position_rms validation.identified.position_rms_over_sigma
validation.init_window validation.segments validation.start validation.start.attitude_rms_deg
validation.start.attitude_rms_over_sigma validation.start.position_rms
validation.start.position_rms_over_sigma versions versions.equinox versions.flapjax versions.float64
versions.jax versions.jax_backend versions.jaxlib versions.mujoco versions.mujoco-mjx versions.numpy
versions.optax versions.python
""")

HOVER_LOG = _keys("""
accel_bias_x accel_bias_x_std accel_bias_y accel_bias_y_std accel_bias_z accel_bias_z_std
drag_linear_x drag_linear_x_std drag_linear_y drag_linear_y_std drag_linear_z drag_linear_z_std
drag_quadratic_x drag_quadratic_x_std drag_quadratic_y drag_quadratic_y_std drag_quadratic_z
drag_quadratic_z_std files fit fit.accel_noise_std_mps2 fit.converged fit.correlation
fit.correlation.matrix fit.correlation.names fit.final_loss fit.parameters fit.reason
fit.residual_over_noise fit.residual_rms_mps2 fit.residual_std_mps2 fit.rows
fit.rows_settling_after_gaps fit.samples_dropped fit.seconds fit.steps ground_coeff ground_coeff_std
not_identified notes robot scene scene.ground_z_m scene.wall_anchor_z_m scene.wall_pitch_rad
scene.wall_x_m scene_source seconds source study units units.accel_bias_x units.accel_bias_y
units.accel_bias_z units.drag_linear_x units.drag_linear_y units.drag_linear_z
units.drag_quadratic_x units.drag_quadratic_y units.drag_quadratic_z units.ground_coeff
units.wall_fade_start units.wall_lateral_coeff units.wall_range units.wall_thrust_coeff validation
validation.end_s validation.fraction validation.mean_error_mps2
validation.rms_default_coefficients_mps2 validation.rms_mps2 validation.rms_over_noise
validation.rms_over_sigma validation.rows validation.start_s versions versions.equinox
versions.flapjax versions.float64 versions.jax versions.jax_backend versions.jaxlib versions.mujoco
versions.mujoco-mjx versions.numpy versions.optax versions.python wall_fade_start
wall_fade_start_std wall_lateral_coeff wall_lateral_coeff_std wall_range wall_range_std
wall_thrust_coeff wall_thrust_coeff_std weakly_identified
""")



def test_key_paths_enter_nested_dicts_and_dicts_in_lists(tmp_path):
    rec = {"a": 1, "b": {"c": [1, 2], "d": {"e": None}}, "f": [{"g": 1}, {"h": 2}], "i": []}
    assert key_paths(rec) == {"a", "b", "b.c", "b.d", "b.d.e", "f", "f[].g", "f[].h", "i"}
    (tmp_path / "results.json").write_text(json.dumps(rec))
    assert_keys(tmp_path, key_paths(rec))
    with pytest.raises(AssertionError, match=r"missing keys \['b.d.x'\]; new keys \[\]"):
        assert_keys(tmp_path, key_paths(rec) | {"b.d.x"})
    with pytest.raises(AssertionError, match=r"missing keys \[\]; new keys \['f\[\].h'\]"):
        assert_keys(tmp_path, key_paths(rec) - {"f[].h"})


def test_stand_table_keys(tmp_path):
    from flapjax.runs.stand import run_stand_identification

    run_stand_identification(DATA / "stand_sample.csv", out_dir=tmp_path, echo=lambda s: None)
    assert_keys(tmp_path, STAND)


@pytest.mark.slow
def test_stand_table_with_physical_parameters_keys(tmp_path):
    from flapjax.runs.stand import run_stand_identification

    run_stand_identification(DATA / "stand_sample.csv", out_dir=tmp_path, echo=lambda s: None, physical=True,
                             physical_options={"parameters": ("lift_scale",), "duration": 0.04, "discard": 0.02,
                                               "max_steps": 4})
    assert_keys(tmp_path, STAND | STAND_PHYSICAL)


@pytest.mark.slow
def test_quick_identification_keys(tmp_path):
    from flapjax.identify import flapper
    from flapjax.runs import run_identification

    (tmp_path / "tiny.toml").write_text(TINY_CONFIG)
    run_identification(flapper.load_config(tmp_path / "tiny.toml"), out_dir=tmp_path / "out", progress=False,
                               echo=lambda s: None)
    assert_keys(tmp_path / "out", QUICK)


@pytest.mark.slow
def test_phase_resolved_record_keys(tmp_path):
    from flapjax.runs.from_file import identify_from_file

    identify_from_file(DATA / "stand_waveform_sample.csv", out_dir=tmp_path, echo=lambda s: None)
    assert_keys(tmp_path, WAVEFORM)


@pytest.mark.slow
def test_flight_log_keys(tmp_path):
    from flapjax.runs.flight_log import run_flight_identification

    run_flight_identification(DATA / "flight_log.csv", out_dir=tmp_path, quick=True, progress=False, echo=lambda s: None)
    assert_keys(tmp_path, FLIGHT_LOG)


@pytest.mark.slow
def test_hover_log_keys(tmp_path):
    from flapjax.runs import run_hover_identification

    run_hover_identification(DATA / "hover_quad_x.npz", robot="quad_x", out_dir=tmp_path, quick=True, progress=False,
                             echo=lambda s: None)
    assert_keys(tmp_path, HOVER_LOG)
