"""Least-squares losses of the identification studies and their curvature.

A study's data is a :class:`Measurements` pytree (inputs, measured targets,
their scale, which rows are valid); :func:`least_squares` turns a model
``predict(params, inputs)`` into the loss :func:`flapjax.identify.fit.fit`
minimizes; :func:`gauss_newton_uncertainty` gives parameter standard
deviations from the loss curvature at the optimum (an :class:`Uncertainty`;
its covariance from :mod:`flapjax.identify.solve`, whose :func:`gauss_newton_covariance` and
:func:`unidentified` are re-exported here). Closed forms
(:func:`slope_through_origin`, :func:`r_squared`) check the gradient fits.
No robot knowledge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.identify.fit import LossFn, Params, Trainable
from flapjax.identify.solve import gauss_newton_covariance, std_and_correlation, unidentified
from flapjax.validation import ConfigError

__all__ = [
    "Measurements",
    "Uncertainty",
    "correlation_among",
    "flat_names",
    "gauss_newton_covariance",
    "gauss_newton_uncertainty",
    "least_squares",
    "r_squared",
    "residuals",
    "slope_through_origin",
    "unidentified",
    "valid_rows",
]


# ---------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------


class Measurements(eqx.Module):
    """What a study fits: inputs, measured outputs and their scale.

    Attributes:
      inputs: pytree of the experiment settings, leading axis n.
      targets: (n, ...) measured values [SI].
      scale: () or broadcastable to targets: residuals are divided by it
        (e.g. the RMS of the targets, or a measurement standard deviation).
      valid: (n,) bool or None: rows from worlds that diverged or produced
        non-finite values are False and left out of the loss (see
        :func:`valid_rows`); None keeps every row.
    """

    inputs: Any
    targets: Float[Array, "n ..."]
    scale: Any
    valid: Any = None

    @property
    def n_ignored(self) -> int:
        """How many rows (worlds) the loss ignores."""
        return 0 if self.valid is None else int(np.sum(~np.asarray(self.valid)))


def valid_rows(targets, healthy=None) -> np.ndarray:
    """(n,) bool: the world stayed healthy and every target of its row is finite."""
    t = np.asarray(targets, dtype=float)
    ok = np.all(np.isfinite(t.reshape(t.shape[0], -1)), axis=1)
    if healthy is not None:
        ok &= np.asarray(healthy, dtype=bool).reshape(-1)
    return ok


def _row_mask(data: Measurements, like: Array) -> Array:
    mask = jnp.asarray(data.valid, dtype=bool)
    return jnp.broadcast_to(mask.reshape(mask.shape + (1,) * (like.ndim - 1)), like.shape)


def residuals(predict: Callable[[Params, Any], Array], params: Params, data: Measurements) -> Array:
    """Scaled residuals ``(predict(params, inputs) - targets) / scale``, flattened;
    rows marked invalid give 0 (and no NaN reaches the gradient)."""
    pred = predict(params, data.inputs)
    if data.valid is None:
        return jnp.ravel((pred - data.targets) / data.scale)
    mask = _row_mask(data, jnp.asarray(data.targets))
    diff = jnp.where(mask, pred, 0.0) - jnp.where(mask, data.targets, 0.0)
    return jnp.ravel(jnp.where(mask, diff / data.scale, 0.0))


def least_squares(predict: Callable[[Params, Any], Array]) -> LossFn:
    """``loss(params, data) = 0.5 mean(residuals^2)`` over the valid rows: the
    loss every study uses."""

    def loss(params: Params, data: Measurements) -> Array:
        r = residuals(predict, params, data)
        if data.valid is None:
            return 0.5 * jnp.mean(r**2)
        count = jnp.maximum(jnp.sum(_row_mask(data, jnp.asarray(data.targets))), 1)
        return 0.5 * jnp.sum(r**2) / count

    return loss


def slope_through_origin(x, y) -> float:
    """Closed-form least-squares ``k`` of ``y = k x`` (no intercept)."""
    x = np.ravel(np.asarray(x, dtype=float))
    y = np.ravel(np.asarray(y, dtype=float))
    return float(np.dot(x, y) / np.dot(x, x))


def r_squared(y, y_fit) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot`` (about the mean)."""
    y = np.ravel(np.asarray(y, dtype=float))
    y_fit = np.ravel(np.asarray(y_fit, dtype=float))
    ss_res = float(np.sum((y - y_fit) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


# ---------------------------------------------------------------------------
# Uncertainty from the loss curvature
# ---------------------------------------------------------------------------


def flat_names(trainable: Trainable) -> list[str]:
    """One name per entry of the flattened ``trainable`` vector, in order:
    ``name`` for a scalar, ``name[i]`` for entry ``i`` of an array
    (C order)."""
    out = []
    for name, leaf in zip(trainable.names, jax.tree.leaves(trainable)):
        size = int(np.size(leaf))
        out += [name] if np.ndim(leaf) == 0 else [f"{name}[{i}]" for i in range(size)]
    return out


@dataclass(frozen=True)
class Uncertainty:
    """Parameter standard deviations from the curvature of a least-squares
    loss (:func:`gauss_newton_uncertainty`).

    Attributes:
      std: name -> standard deviation in the parameter's own units, shaped
        like the parameter (() for a scalar).
      relative_std: name -> standard deviation over the value's magnitude
        [-] (for a log-space parameter, its log-space standard deviation).
      names: the p entries of the flattened trainable vector, in order:
        ``name`` for a scalar, ``name[i]`` for the entries of an array.
      correlation: (p, p) correlation of those entries [-], rows and columns
        in the order of ``names`` (:func:`correlation_among` picks any order).
      sigma: the residual standard deviation used [residual units].
      hessian: (p, p) Gauss-Newton curvature ``J^T J / n`` of the loss
        ``0.5 mean(r^2)`` in the trainable coordinates.
    """

    std: dict[str, np.ndarray]
    relative_std: dict[str, np.ndarray]
    names: list[str]
    correlation: np.ndarray
    sigma: float
    hessian: np.ndarray


def correlation_among(uncertainty: Uncertainty, names) -> np.ndarray:
    """(k, k) correlation of ``names`` (in that order) from
    :func:`gauss_newton_uncertainty`; raises :class:`ConfigError` naming an
    entry it does not hold."""
    order = list(uncertainty.names)
    missing = [n for n in names if n not in order]
    if missing:
        raise ConfigError(f"names: {missing} are not among the fitted entries {order}")
    idx = [order.index(n) for n in names]
    return np.asarray(uncertainty.correlation, dtype=float)[np.ix_(idx, idx)]


def gauss_newton_uncertainty(
    residual_fn: Callable[[Trainable], Array],
    trainable: Trainable,
    *,
    sigma: float | None = None,
    n_residuals: int | None = None,
    compiler_options: dict[str, Any] | None = None,
) -> Uncertainty:
    """Parameter standard deviations from the curvature of a least-squares loss.

    With scaled residuals ``r(theta)`` (theta: the trainable vector, log space
    for positive constants), the loss ``0.5 mean(r^2)`` has Gauss-Newton
    Hessian ``H = J^T J / n``; the covariance of theta is
    ``sigma^2 (J^T J)^-1`` where ``sigma^2`` is the residual variance
    ``SSR / (n - p)`` (or the given ``sigma``, in residual units, when
    ``n <= p``; ``n`` is ``n_residuals`` when the residuals are padded with
    masked zero rows). Log-space standard deviations are relative ones; they are
    mapped to physical units by the delta method (``std = value * std_log``).
    J comes from forward mode (``jax.jacfwd``): one JVP per parameter, in
    one program compiled with ``compiler_options`` when they are given
    (e.g. :func:`flapjax.sim.tree.compiler_options` for residuals that step
    the pure-JAX joint tree). Returns the :class:`Uncertainty`.
    """
    flat, unravel = jax.flatten_util.ravel_pytree(trainable)
    r0 = residual_fn(trainable)
    jacobian = jax.jacfwd(lambda v: residual_fn(unravel(v)))
    if compiler_options is not None:
        jacobian = jax.jit(jacobian, compiler_options=compiler_options)
    jac = jacobian(flat)
    cov, s2 = gauss_newton_covariance(r0, jac, sigma=sigma, n_residuals=n_residuals)
    jtj = np.asarray(jac.T @ jac, dtype=float)
    std_flat, corr = std_and_correlation(cov)
    std_tree = unravel(jnp.asarray(std_flat))
    values = trainable.values()
    std, rel = {}, {}
    for name, s in std_tree.log.items():
        std[name] = np.asarray(values[name]) * np.asarray(s)
        rel[name] = np.asarray(s)
    for name, s in std_tree.linear.items():
        std[name] = np.asarray(s)
        v = np.asarray(values[name])
        rel[name] = np.asarray(s) / np.where(v != 0, np.abs(v), 1.0)
    n = jac.shape[0] if n_residuals is None else int(n_residuals)
    return Uncertainty(std=std, relative_std=rel, names=flat_names(trainable), correlation=corr,
                       sigma=math.sqrt(s2), hessian=jtj / n)
