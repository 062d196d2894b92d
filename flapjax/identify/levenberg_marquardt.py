"""Levenberg-Marquardt minimization of a sum of squared residuals.

The loop runs on the host in float64: the residuals and Jacobians come from
compiled model functions (forward-mode autodiff through rollouts, in the
studies), and each step solves the damped normal equations

    (J^T J + lambda diag(J^T J)) dx = -J^T r

with Marquardt's scaling. A step that lowers the cost is taken and lambda
shrinks tenfold; one that does not is retried with lambda ten times larger.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

__all__ = ["LMResult", "levenberg_marquardt"]


class LMResult(NamedTuple):
    """What :func:`levenberg_marquardt` found (unpacks as a tuple)."""

    x: Any              # (p,) the minimizer, of the type of ``x0``
    residual: Any       # (n,) residuals at ``x``
    jacobian: Any       # (n, p) Jacobian at ``x``
    iterations: int     # accepted steps
    history: list       # cost 0.5 |r|^2 at the start and after each accepted step
    reason: str         # why the loop stopped


def _cost(r) -> float:
    r = np.asarray(r, dtype=float)
    return 0.5 * float(np.sum(r * r))


def _normal_equations(J, r) -> tuple[np.ndarray, np.ndarray]:
    """``(J^T J, J^T r)`` in host float64."""
    J = np.asarray(J, dtype=float)
    return J.T @ J, J.T @ np.asarray(r, dtype=float)


def levenberg_marquardt(
    residual: Callable[[Any], Any],
    jacobian: Callable[[Any], Any],
    x0,
    *,
    max_iterations: int,
    cost_tol: float | None = 1e-10,
    step_tol: float | None = None,
    max_tries: int = 12,
    damping: float = 1e-3,
    callback: Callable[[int, float], None] | None = None,
) -> LMResult:
    """Minimize ``0.5 |r(x)|^2`` from ``x0``.

    Args:
      residual: ``x -> r``, (n,) (pass a compiled function).
      jacobian: ``x -> J = dr/dx``, (n, p).
      x0: (p,) start (a NumPy or JAX array; ``x`` keeps its type).
      max_iterations: most accepted steps.
      cost_tol: stop when an accepted step lowers the cost by less than this
        fraction of it (None: never).
      step_tol: stop when, after an accepted step, every component of the
        undamped Gauss-Newton step ``-(J^T J)^-1 J^T r`` is below this
        fraction of that parameter's standard deviation
        ``sqrt(diag((J^T J)^-1))`` (unit-variance residuals; None: never):
        the optimum of the local quadratic model is that close.
      max_tries: damping increases per iteration before the loop gives up
        (the cost cannot be lowered at its floating-point resolution).
      damping: initial lambda.
      callback: called after every accepted step with its number (from 1)
        and the new cost (a progress bar).

    Raises ``FloatingPointError`` when the residuals or the Jacobian at
    ``x0`` are not finite.
    """
    x = x0
    r = residual(x)
    J = jacobian(x)
    cost = _cost(r)
    if not (math.isfinite(cost) and np.all(np.isfinite(np.asarray(J)))):
        raise FloatingPointError("levenberg_marquardt: non-finite residuals or Jacobian at the start point")
    jtj, g = _normal_equations(J, r)
    lam, history, reason = damping, [cost], f"max_iterations={max_iterations}"
    for it in range(max_iterations):
        scale = np.maximum(np.diag(jtj), 1e-300)
        for _ in range(max_tries):
            step = np.linalg.solve(jtj + lam * np.diag(scale), -g)
            x_new = x + step
            r_new = residual(x_new)
            c_new = _cost(r_new)
            if math.isfinite(c_new) and c_new < cost:
                break
            lam *= 10.0
        else:
            reason = f"no decrease at iteration {it} (converged to the cost's resolution)"
            break
        drop = (cost - c_new) / max(cost, 1e-300)
        x, r, cost = x_new, r_new, c_new
        history.append(cost)
        if callback is not None:
            callback(it + 1, cost)
        lam = max(lam / 10.0, 1e-12)
        J = jacobian(x)
        jtj, g = _normal_equations(J, r)
        if cost_tol is not None and drop < cost_tol:
            reason = f"relative cost change {drop:.1e} < {cost_tol:g}"
            break
        if step_tol is not None:
            # the undamped (Gauss-Newton) step from here: a damped step is
            # small whenever lambda is large, near the optimum or not
            inv = np.linalg.pinv(jtj)
            gauss_newton = -inv @ g
            std = np.sqrt(np.clip(np.diag(inv), 1e-300, None))
            if np.all(np.abs(gauss_newton) < step_tol * std):
                reason = f"Gauss-Newton step below {step_tol:g} of the standard deviations"
                break
    return LMResult(x, r, J, len(history) - 1, history, reason)
