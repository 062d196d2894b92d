"""Gradient-based identification.

The generic machinery (no robot knowledge) is re-exported here:

- :mod:`flapjax.identify.parameters`: trainable vs nominal parameters (log
  space for positive constants);
- :mod:`flapjax.identify.fit`: optax optimizers, the jitted fit step, the fit
  loop and its convergence rules;
- :mod:`flapjax.identify.losses`: measurements, the least-squares loss,
  closed-form checks, uncertainty from the loss curvature;
- :mod:`flapjax.identify.solve`: what every measured-data fit shares: channel
  reweighting, Gauss-Newton covariance, correlation and unidentified
  parameters, held-out rows and their metrics;
- :mod:`flapjax.identify.results`: study results and their JSON form
  (the JSON files themselves: :mod:`flapjax.files`);
- :mod:`flapjax.identify.fit_report`: what a measured-data fit reports, and
  its table of values.

It computes and returns; the runs that write folders and plots are in
:mod:`flapjax.runs`.

The studies of the flapping-wing robot (``flapjax identify``) are in
:mod:`flapjax.identify.flapper`::

    from flapjax.identify import flapper as F
    from flapjax.runs import run_identification

    cfg = F.load_config("identification/lift.toml", quick=True)
    lift = F.study_lift(cfg)  # one study: a StudyResult, nothing written
    result = run_identification(cfg, out_dir="out/identify")  # every study, saved and resumable
"""

from flapjax.identify.fit import (
    Convergence,
    FitResult,
    LossFn,
    Nominal,
    Params,
    Trainable,
    combine,
    fit,
    make_fit_step,
    make_optimizer,
    scale_trainable,
    split,
)
from flapjax.identify.fit_report import Estimate, FitReport
from flapjax.identify.losses import (
    Measurements,
    Uncertainty,
    correlation_among,
    gauss_newton_uncertainty,
    least_squares,
    r_squared,
    residuals,
    slope_through_origin,
    valid_rows,
)
from flapjax.identify.results import StudyResult, versions

__all__ = ["Convergence", "Estimate", "FitReport", "FitResult", "LossFn", "Measurements", "Nominal", "Params",
           "StudyResult", "Trainable", "Uncertainty", "combine", "correlation_among", "fit",
           "gauss_newton_uncertainty", "least_squares", "make_fit_step", "make_optimizer", "r_squared",
           "residuals", "scale_trainable", "slope_through_origin", "split", "valid_rows", "versions"]
