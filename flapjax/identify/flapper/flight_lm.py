"""Levenberg-Marquardt minimization of a sum of squared residuals, with the
Jacobian through the model (forward-mode autodiff by default)."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np


def levenberg_marquardt(residual_fn: Callable, x0, *, max_iterations: int, tol: float = 1e-10, args=(),
                        jac_fn: Callable | None = None):
    """Minimize ``0.5 |r(x)|^2`` from ``x0``; ``residual_fn(x, *args) -> r``
    (1-D; pass it jitted); Jacobians ``jac_fn(x, *args)`` (default
    ``jax.jacfwd`` of ``residual_fn``, jitted here: pass a module-level one
    to reuse its compilation). Returns ``(x, r, J, iterations, cost history, reason)``."""
    fn = residual_fn
    jac_fn = jax.jit(jax.jacfwd(residual_fn)) if jac_fn is None else jac_fn
    residual_fn = lambda x: fn(x, *args)
    x = jnp.asarray(x0)
    r = residual_fn(x)
    cost = 0.5 * float(jnp.sum(r * r))
    lam, history, reason = 1e-3, [cost], f"max_iterations={max_iterations}"
    J = jac_fn(x, *args)
    for it in range(max_iterations):
        jtj = np.asarray(J.T @ J)
        g = np.asarray(J.T @ r)
        diag = np.maximum(np.diag(jtj), 1e-12)
        improved = False
        for _ in range(12):
            step = np.linalg.solve(jtj + lam * np.diag(diag), -g)
            x_new = x + jnp.asarray(step)
            r_new = residual_fn(x_new)
            c_new = 0.5 * float(jnp.sum(r_new * r_new))
            if math.isfinite(c_new) and c_new < cost:
                improved = True
                break
            lam *= 10.0
        if not improved:
            reason = f"no decrease at iteration {it} (converged to the cost's resolution)"
            break
        rel = (cost - c_new) / max(cost, 1e-300)
        x, r, cost = x_new, r_new, c_new
        history.append(cost)
        lam = max(lam / 10.0, 1e-12)
        J = jac_fn(x, *args)
        if rel < tol:
            reason = f"relative cost change {rel:.1e} < {tol:g}"
            break
    return x, r, J, len(history) - 1, history, reason
