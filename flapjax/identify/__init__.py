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
- :mod:`flapjax.identify.results`: study results and their JSON form.

The studies of the flapping-wing robot (``flapjax identify``) are in
:mod:`flapjax.identify.flapper`::

    from flapjax import identify
    from flapjax.identify import flapper as F

    cfg = F.load_config("identification/lift.toml", quick=True)
    result = F.run_identification(cfg, out_dir="out/identify")
"""

from flapjax.identify.fit import (
    GRAD_MODES,
    LINE_SEARCHES,
    OPTIMIZERS,
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
from flapjax.identify.results import StudyResult, read_json, to_arrays, to_jsonable, versions, write_json

__all__ = [
    "GRAD_MODES",
    "LINE_SEARCHES",
    "OPTIMIZERS",
    "Convergence",
    "Estimate",
    "FitReport",
    "FitResult",
    "LossFn",
    "Measurements",
    "Nominal",
    "Params",
    "StudyResult",
    "Trainable",
    "Uncertainty",
    "combine",
    "correlation_among",
    "fit",
    "gauss_newton_uncertainty",
    "least_squares",
    "make_fit_step",
    "make_optimizer",
    "r_squared",
    "read_json",
    "residuals",
    "scale_trainable",
    "slope_through_origin",
    "split",
    "to_arrays",
    "to_jsonable",
    "valid_rows",
    "versions",
    "write_json",
]
