"""Identification studies of the flapping-wing robot (``flapjax identify``; docs/cli.md).

The per-wing model's rollouts produce cycle-mean "measurements"; the
cycle-averaged model (seed section 10) is fitted to them by gradient
(:mod:`flapjax.identify.fit`); then both models fly the same manoeuvres and
are compared. Each simulated study is a function ``cfg -> StudyResult`` in
its own module (:mod:`.lift`, :mod:`.moments`, :mod:`.damping`,
:mod:`.physical`, :mod:`.plate_motion`, :mod:`.validation`); :mod:`.studies`
is their registry, :mod:`.config` the settings and their checks,
:mod:`.results` the aggregate :class:`IdentificationResult`. Measured data
(stand tables, phase-resolved stand records, flight logs) are fitted by
:mod:`.stand_fit`, :mod:`.waveform` and :mod:`.flight_fit`. The driver
with resume, plots and files: :mod:`flapjax.runs`.
"""

from flapjax.identify.flapper.config import default_config, fit_averaged, load_config, validate_config
from flapjax.identify.flapper.damping import coupling_slopes, predict_damping
from flapjax.identify.flapper.lift import predict_lift, study_lift
from flapjax.identify.flapper.moments import predict_moments, study_moments
from flapjax.identify.flapper.physical import eval_lift, physical_loss
from flapjax.identify.flapper.results import IdentificationResult
from flapjax.identify.flapper.validation import study_validation
from flapjax.sim.flapper.stand import LiftRollout, nominal_physical, with_physical

__all__ = ["IdentificationResult", "LiftRollout", "coupling_slopes", "default_config", "eval_lift", "fit_averaged",
           "load_config", "nominal_physical", "physical_loss", "predict_damping", "predict_lift", "predict_moments",
           "study_lift", "study_moments", "study_validation", "validate_config",
           "with_physical"]
