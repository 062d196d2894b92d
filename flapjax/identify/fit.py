"""Gradient-based fitting: the machinery every identification study shares.

A study minimizes a differentiable ``loss(params, data)`` of a plain
``dict[str, Array]`` of physical values [SI]: the trainable entries are kept
apart from the nominal ones (:mod:`flapjax.identify.parameters`, re-exported
here), one jitted optax step (:func:`make_fit_step`) is iterated until
:class:`Convergence` says stop (:func:`fit`). Losses and their curvature:
:mod:`flapjax.identify.losses`. No robot knowledge: a loss may run MJX
rollouts inside, but this module only sees a differentiable function.
"""

from __future__ import annotations

import functools

import math
from typing import Any, Callable

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float

from flapjax.identify.parameters import LossFn, Nominal, Params, Trainable, combine, scale_trainable, split
from flapjax.validation import check_choice, check_positive, check_range

__all__ = [
    "FORWARD_MAX_PARAMS",
    "GRAD_MODES",
    "LINE_SEARCHES",
    "OPTIMIZERS",
    "Convergence",
    "FitResult",
    "LossFn",
    "Nominal",
    "Params",
    "Trainable",
    "as_step_outputs",
    "choose_grad_mode",
    "combine",
    "fit",
    "make_fit_step",
    "make_optimizer",
    "scale_trainable",
    "split",
    "value_and_grad",
]


# ---------------------------------------------------------------------------
# Optimizers, the fit step, convergence
# ---------------------------------------------------------------------------

OPTIMIZERS = ("lbfgs", "adam")


LINE_SEARCHES = ("zoom", "backtracking", "none")


def make_optimizer(
    name: str = "lbfgs", *, learning_rate: float = 0.05, decay_steps: int = 0, line_search: str = "zoom"
) -> optax.GradientTransformation:
    """An optax optimizer by name.

    ``"lbfgs"`` (best for the smooth least-squares losses here, converges in
    tens of steps) with a ``"zoom"`` line search (values and gradients) or a
    ``"backtracking"`` one (values only: the choice when each gradient is a
    long rollout) or ``"none"`` (unit steps: one compiled rollout, for
    nearly quadratic losses), or ``"adam"`` with ``learning_rate``, cosine-decayed to
    1 % over ``decay_steps`` when that is > 0.
    """
    check_choice("optimizer", name, OPTIMIZERS)
    check_choice("line_search", line_search, LINE_SEARCHES)
    if name == "lbfgs":
        if line_search == "none":
            return optax.lbfgs(linesearch=None)
        if line_search == "backtracking":
            ls = optax.scale_by_backtracking_linesearch(max_backtracking_steps=12, store_grad=False)
            return optax.lbfgs(linesearch=ls)
        return optax.lbfgs()
    check_positive("learning_rate", learning_rate)
    lr = optax.cosine_decay_schedule(learning_rate, int(decay_steps), alpha=0.01) if decay_steps > 0 else learning_rate
    return optax.adam(lr)


def _holds_state(opt_state: Any, kind: str) -> bool:
    """Whether an optax state (or any state of a chain's tuple) is one whose
    type name contains ``kind``: ``"Linesearch"`` for any line search (its
    update needs the objective), ``"Zoom"`` for the zoom line search (it
    evaluates gradients itself: reverse mode at every trial point)."""
    if kind in type(opt_state).__name__:
        return True
    if isinstance(opt_state, tuple):
        return any(_holds_state(s, kind) for s in opt_state)
    return False


GRAD_MODES = ("auto", "reverse", "forward")

#: ``grad_mode="auto"`` takes forward mode up to this many trainable scalars.
FORWARD_MAX_PARAMS = 8


def choose_grad_mode(n_params: int, opt_state: Any = None) -> str:
    """The gradient mode ``grad_mode="auto"`` uses: ``"forward"`` for at most
    :data:`FORWARD_MAX_PARAMS` trainable scalars (one JVP each, about one
    extra forward pass per parameter and no stored trajectory), unless the
    optimizer's line search takes gradients itself (zoom, which is reverse
    mode); ``"reverse"`` otherwise (one reverse pass, whatever the count)."""
    if n_params <= FORWARD_MAX_PARAMS and not _holds_state(opt_state, "Zoom"):
        return "forward"
    return "reverse"


def _forward_value_and_grad(objective, trainable):
    """Value and gradient by forward mode: one JVP per trainable scalar.

    For a few parameters and a long rollout this avoids the reverse pass
    through the whole scan (tens of times the cost of the forward run here).
    The value comes out of the same pass: the tangents are batched and the
    primal is not (``out_axes=None``), so the rollout runs once with all
    tangents beside it, instead of once for the value and again under
    ``jax.jacfwd``.
    """
    flat, unravel = jax.flatten_util.ravel_pytree(trainable)
    f = lambda v: objective(unravel(v))  # noqa: E731
    basis = jnp.eye(flat.size, dtype=flat.dtype)
    pushforward = lambda t: jax.jvp(f, (flat,), (t,))  # noqa: E731
    try:
        value, grad = jax.vmap(pushforward, out_axes=(None, 0))(basis)
    except ValueError:  # an objective whose value depends on the batch axis
        values, grad = jax.vmap(pushforward)(basis)
        value = values[0]
    return value, unravel(grad)


def value_and_grad(objective: Callable[[Any], Array], params: Any, mode: str = "auto") -> tuple[Array, Any]:
    """Value and gradient of a scalar ``objective`` at the pytree ``params``.

    ``mode``: ``"forward"`` (one JVP per scalar, value from the same pass),
    ``"reverse"`` (one reverse pass) or ``"auto"`` (:func:`choose_grad_mode`
    on the number of scalars). The fit step uses the same rule.
    """
    check_choice("mode", mode, GRAD_MODES)
    if mode == "auto":
        mode = choose_grad_mode(jax.flatten_util.ravel_pytree(params)[0].size)
    if mode == "forward":
        return _forward_value_and_grad(objective, params)
    return eqx.filter_value_and_grad(objective)(params)


def as_step_outputs(tree: Any) -> Any:
    """``tree`` with every array leaf strongly typed and committed to its
    device (same dtype and value), as a jitted step returns them. ``optax``
    initial states hold weakly typed scalars (a line search's counters) and
    uncommitted arrays; a jitted step fed the initial state and then its own
    outputs would be compiled twice, once per typing and placement."""

    def canonical(x):
        if not isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer):
            return x
        if getattr(x, "weak_type", False):
            x = jnp.asarray(x, dtype=x.dtype)
        return jax.device_put(x, x.sharding)

    return jax.tree.map(canonical, tree)


def make_fit_step(
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    *,
    line_search: bool | None = None,
    grad_mode: str = "auto",
    compiler_options: dict[str, Any] | None = None,
):
    """One jitted optimizer step.

    Returns ``step(trainable, opt_state, nominal, data) -> (trainable,
    opt_state, loss, grad_norm)``: the loss and its gradient at the incoming
    ``trainable``, then one optax update. ``line_search`` (default: detected
    from the optimizer state, e.g. ``optax.lbfgs``) passes the objective to
    the update, as optax's line searches require; a zoom search's own value
    and gradient are reused. ``grad_mode``: ``"reverse"``
    (``eqx.filter_value_and_grad``), ``"forward"`` (one JVP per parameter;
    pair it with a value-only line search such as
    ``make_optimizer("lbfgs", line_search="backtracking")``) or ``"auto"``
    (:func:`choose_grad_mode`, decided when the step is traced).
    ``compiler_options``: XLA options of the step's program (e.g.
    :func:`flapjax.sim.tree.compiler_options` for losses that step the
    pure-JAX joint tree).
    """
    check_choice("grad_mode", grad_mode, GRAD_MODES)

    @functools.partial(eqx.filter_jit, compiler_options=compiler_options)
    def step(trainable: Trainable, opt_state, nominal: Nominal, data):
        def objective(t):
            return loss_fn(combine(t, nominal), data)

        use_ls = _holds_state(opt_state, "Linesearch") if line_search is None else line_search
        mode = grad_mode
        if mode == "auto":
            mode = choose_grad_mode(jax.flatten_util.ravel_pytree(trainable)[0].size, opt_state)
        if mode == "forward":
            value, grad = _forward_value_and_grad(objective, trainable)
        elif use_ls and _holds_state(opt_state, "Zoom"):  # reuse the zoom search's value and gradient
            value, grad = optax.value_and_grad_from_state(objective)(trainable, state=opt_state)
        else:  # no line search, or a value-only one (backtracking) that stores no gradient
            value, grad = eqx.filter_value_and_grad(objective)(trainable)
        extra = dict(value=value, grad=grad, value_fn=objective) if use_ls else {}
        updates, opt_state = optimizer.update(grad, opt_state, trainable, **extra)
        trainable = eqx.apply_updates(trainable, updates)
        return trainable, opt_state, value, optax.tree.norm(grad)

    return step


class Convergence(eqx.Module):
    """When a fit stops.

    Stops at ``max_steps``, or as soon as the gradient norm (log-space
    parameters: relative units) drops below ``grad_tol``, or when the loss
    changed by less than ``rtol`` (relative) for ``patience`` steps in a row,
    or when the loss falls below ``loss_tol``.

    Attributes (static): max_steps, grad_tol, rtol, patience, loss_tol.
    """

    max_steps: int = eqx.field(static=True, default=200)
    grad_tol: float = eqx.field(static=True, default=1e-9)
    rtol: float = eqx.field(static=True, default=1e-12)
    patience: int = eqx.field(static=True, default=5)
    loss_tol: float = eqx.field(static=True, default=0.0)

    def __check_init__(self):
        check_range("Convergence.max_steps", self.max_steps, 1, None)
        check_positive("Convergence.grad_tol", self.grad_tol, allow_zero=True)
        check_positive("Convergence.rtol", self.rtol, allow_zero=True)
        check_range("Convergence.patience", self.patience, 1, None)
        check_positive("Convergence.loss_tol", self.loss_tol, allow_zero=True)


class FitResult(eqx.Module):
    """Outcome of :func:`fit`.

    Attributes:
      params: name -> fitted physical value (trainable and nominal) [SI].
      trainable: the fitted trainable part.
      loss: (steps,) loss before each step.
      grad_norm: (steps,) gradient norm before each step.
      final_loss: () loss at the returned parameters.
      converged: whether a tolerance (not max_steps) stopped the fit.
      reason: why it stopped.
    """

    params: Params
    trainable: Trainable
    loss: Float[Array, "steps"]
    grad_norm: Float[Array, "steps"]
    final_loss: Array
    converged: bool = eqx.field(static=True)
    reason: str = eqx.field(static=True)

    @property
    def steps(self) -> int:
        return int(self.loss.shape[0])


def fit(
    loss_fn: LossFn,
    trainable: Trainable,
    nominal: Nominal,
    data: Any,
    *,
    optimizer: optax.GradientTransformation | None = None,
    convergence: Convergence | None = None,
    step_fn=None,
    progress: Callable[[int, float], None] | None = None,
) -> FitResult:
    """Minimize ``loss_fn(combine(trainable, nominal), data)`` over ``trainable``.

    Args:
      loss_fn: differentiable ``loss(params, data) -> ()``.
      trainable, nominal: from :func:`split` (or :func:`scale_trainable`).
      data: the loss's data pytree (e.g. :class:`~flapjax.identify.losses.Measurements`).
      optimizer: default ``optax.lbfgs()``.
      convergence: stopping rules (default :class:`Convergence`).
      step_fn: a step from :func:`make_fit_step` to reuse (its compilation);
        built from ``loss_fn`` and ``optimizer`` when None.
      progress: called as ``progress(step, loss)`` after every step.
    """
    optimizer = make_optimizer("lbfgs") if optimizer is None else optimizer
    conv = Convergence() if convergence is None else convergence
    step = make_fit_step(loss_fn, optimizer) if step_fn is None else step_fn
    trainable, opt_state = as_step_outputs((trainable, optimizer.init(trainable)))  # one compilation of the step
    losses, norms = [], []
    reason, converged, calm = f"max_steps={conv.max_steps}", False, 0
    for k in range(conv.max_steps):
        new, opt_state, value, gnorm = step(trainable, opt_state, nominal, data)
        opt_state = as_step_outputs(opt_state)
        value, gnorm = float(value), float(gnorm)
        if not (math.isfinite(value) and math.isfinite(gnorm)):
            reason = f"non-finite loss or gradient at step {k}"
            break
        losses.append(value)
        norms.append(gnorm)
        if progress is not None:
            progress(k, value)
        if gnorm <= conv.grad_tol:
            reason, converged = f"grad_norm {gnorm:.2e} <= {conv.grad_tol:g}", True
            break
        if value <= conv.loss_tol:
            reason, converged = f"loss {value:.2e} <= {conv.loss_tol:g}", True
            break
        trainable = new
        if len(losses) > 1 and abs(losses[-2] - value) <= conv.rtol * max(abs(losses[-2]), 1e-300):
            calm += 1
            if calm >= conv.patience:
                reason, converged = f"loss change < rtol={conv.rtol:g} for {conv.patience} steps", True
                break
        else:
            calm = 0
    final = float(loss_fn(combine(trainable, nominal), data))
    return FitResult(
        params=combine(trainable, nominal),
        trainable=trainable,
        loss=jnp.asarray(losses),
        grad_norm=jnp.asarray(norms),
        final_loss=jnp.asarray(final),
        converged=converged,
        reason=reason,
    )
