"""Identification studies of the flapping-wing robot (``flapjax identify``).

The per-wing model (rollouts of the fixed-base robot on the pure-JAX joint
tree, of the driven-base and free robots on MJX)
produces cycle-mean "measurements"; the cycle-averaged model (seed section 10)
is fitted to them by gradient (:mod:`flapjax.identify.fit`); then both models
fly the same closed-loop manoeuvres and are compared.

Studies (each a function ``cfg -> StudyResult``; configs in ``identification/``):

``lift`` (:mod:`.lift`)
    k_f from a vmapped fixed-base frequency sweep: cycle-mean world F_z vs f,
    fitted as ``k_f f^2`` by gradient and compared with the closed-form
    least-squares ``sum F f^2 / sum f^4``.
``moments`` (:mod:`.moments`)
    k_roll and k_pitch from plate-tilt sweeps at several frequencies (driven
    base held at rest): the cycle-mean body moment about the robot's
    instantaneous centre of mass fitted as
    ``lambda_f [k_roll delta_p, -k_pitch delta_r]``, ``lambda_f = (f/42)^2``.
``damping`` (:mod:`.damping`)
    D_w, k_v and the speed-to-moment coupling L_v, M_u from runs with an
    imposed body motion: cycle-mean body-frame moment (about the moving
    centre of mass) vs mean body rate gives ``-D_w omega``; force vs speed
    gives ``-k_v v``; the cross moment vs speed ``L_v v_y``, ``M_u v_x``.
``physical`` (:mod:`.physical`)
    Parameters inside the per-wing model (default: feathering hinge stiffness
    and lift scale) fitted by gradient *through the fixed-base rollout* to cycle-mean
    F_z (the seed's table 11.2 by default), with Gauss-Newton uncertainties.
``validation`` (:mod:`.validation`)
    The identified averaged model and the per-wing free-flight model fly the
    same hover and plate-command steps under the same hover controller.

Flight logs (:mod:`.flight_log`, ``flapjax identify --data FLIGHT.csv``):
the averaged model fitted to a motion-capture log over the logged commands
by multiple shooting (:func:`run_flight_identification`). Stand tables
(:mod:`.stand`, per-wing parameters through the rollout: :mod:`.stand_physical`)
and phase-resolved stand records (:mod:`.waveform`) are fitted the same way.

:mod:`.studies` is the registry of the simulated studies (what each reads
from the others, how it runs), which :mod:`.run` orders and resumes.
:mod:`.config` holds the settings and their checks, :mod:`.calibration`
the per-wing calibration a config's ``[calibration]`` section sets for every
simulated study, :mod:`.run` the driver with resume, :mod:`.report` the
plots and the summary table, :mod:`.results` the aggregate
:class:`IdentificationResult`.
"""

from flapjax.identify.flapper.config import (
    DEFAULT_CONFIG,
    PHYSICAL_PARAMETERS,
    PHYSICAL_UNITS,
    QUICK_OVERRIDES,
    STUDIES,
    convergence_for,
    default_config,
    fit_averaged,
    load_config,
    optimizer_for,
    validate_config,
)
from flapjax.identify.flapper.damping import coupling_slopes, damping_frequency, predict_damping, study_damping
from flapjax.identify.flapper.flight_log import identify_flight_log, read_flight_log, run_flight_identification
from flapjax.identify.flapper.lift import fixed_sweep, predict_lift, study_lift
from flapjax.identify.flapper.moments import REFERENCE_FREQUENCY, predict_moments, study_moments
from flapjax.identify.flapper.physical import eval_lift, physical_loss, study_physical
from flapjax.sim.flapper.stand import LiftRollout, nominal_physical, with_physical
from flapjax.identify.flapper.report import summary_table, write_plots
from flapjax.identify.flapper.results import SEED_NAMES, SEED_UNITS, SEED_VALUES, IdentificationResult
from flapjax.identify.flapper.run import run_identification
from flapjax.identify.flapper.validation import fly, study_validation

__all__ = [
    "DEFAULT_CONFIG",
    "PHYSICAL_PARAMETERS",
    "PHYSICAL_UNITS",
    "QUICK_OVERRIDES",
    "REFERENCE_FREQUENCY",
    "SEED_NAMES",
    "SEED_UNITS",
    "SEED_VALUES",
    "STUDIES",
    "IdentificationResult",
    "LiftRollout",
    "convergence_for",
    "coupling_slopes",
    "damping_frequency",
    "default_config",
    "eval_lift",
    "fit_averaged",
    "fixed_sweep",
    "fly",
    "identify_flight_log",
    "load_config",
    "nominal_physical",
    "optimizer_for",
    "physical_loss",
    "predict_damping",
    "predict_lift",
    "predict_moments",
    "read_flight_log",
    "run_flight_identification",
    "run_identification",
    "study_damping",
    "study_lift",
    "study_moments",
    "study_physical",
    "study_validation",
    "summary_table",
    "validate_config",
    "with_physical",
    "write_plots",
]
