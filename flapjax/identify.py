"""Gradient-based identification: the machinery shared by every study.

A study has three parts:

1. *measurements* -- arrays produced by rollouts (or a table), held in a
   :class:`Measurements` pytree;
2. a *model* of those measurements, ``predict(params, inputs) -> predictions``,
   with ``params`` a plain ``dict[str, Array]`` of physical values in SI units;
3. a *fit*: the trainable entries of ``params`` are kept apart from the
   nominal ones (:func:`split`), positive constants live in log space, and one
   jitted optax step (:func:`make_fit_step`, ``eqx.filter_value_and_grad``)
   is iterated until :class:`Convergence` says stop (:func:`fit`).

Results are typed pytrees (:class:`StudyResult`, :class:`IdentificationResult`)
that round-trip through JSON; :meth:`IdentificationResult.to_cycle_averaged_params`
turns the identified values (under the seed's names ``k_f``, ``k_v``,
``k_roll``, ``k_pitch``, ``D_w``) into the cycle-averaged model's parameters.

Nothing here knows about MuJoCo: a loss may run MJX rollouts inside, but this
module only sees a differentiable function of a parameter dict.
"""

from __future__ import annotations

import json
import math
import platform
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import jax.flatten_util
import optax
from jaxtyping import Array, Float

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.validation import ConfigError, as_float_array, check_choice, check_positive, check_range

Params = dict[str, Array]
LossFn = Callable[[Params, Any], Array]

# Seed symbol -> CycleAveragedParams field.
SEED_NAMES: dict[str, str] = {
    "k_f": "lift_coefficient",
    "k_v": "horizontal_damping",
    "k_roll": "roll_gain",
    "k_pitch": "pitch_gain",
    "D_w": "rate_damping",
}
SEED_UNITS: dict[str, str] = {
    "k_f": "N/Hz^2",
    "k_v": "N s/m",
    "k_roll": "N m/rad",
    "k_pitch": "N m/rad",
    "D_w": "N m s/rad",
}


# ---------------------------------------------------------------------------
# Trainable vs nominal parameters
# ---------------------------------------------------------------------------


class Trainable(eqx.Module):
    """The values an optimizer moves.

    Attributes:
      log: name -> log of a positive constant (any shape) [log SI].
      linear: name -> a signed value, trained as is [SI].
    """

    log: dict[str, Array]
    linear: dict[str, Array]

    def values(self) -> Params:
        """Physical values: ``exp`` of the log entries, the linear ones as is."""
        out = {k: jnp.exp(v) for k, v in self.log.items()}
        out.update(self.linear)
        return out

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.log) + tuple(self.linear)


class Nominal(eqx.Module):
    """Values a study needs but does not train (held fixed, no gradient).

    Attributes:
      values: name -> value [SI].
    """

    values: dict[str, Array]


def split(
    values: Mapping[str, Any],
    trainable: Sequence[str],
    *,
    signed: Sequence[str] = (),
) -> tuple[Trainable, Nominal]:
    """Split a parameter dict into trainable and nominal parts.

    Trainable names are positive constants trained in log space, except those
    listed in ``signed`` (trained as they are). Raises :class:`ConfigError`
    for an unknown name or a non-positive value of a log-space parameter.
    """
    unknown = sorted(set(trainable) - set(values))
    if unknown:
        raise ConfigError(f"trainable: unknown parameter(s) {unknown}; known: {sorted(values)}")
    bad_signed = sorted(set(signed) - set(trainable))
    if bad_signed:
        raise ConfigError(f"signed: {bad_signed} are not trainable parameters {list(trainable)}")
    log, linear, nominal = {}, {}, {}
    for name, v in values.items():
        arr = jnp.asarray(as_float_array(name, v))
        if name not in trainable:
            nominal[name] = arr
        elif name in signed:
            linear[name] = arr
        else:
            check_positive(name, arr)
            log[name] = jnp.log(arr)
    return Trainable(log=log, linear=linear), Nominal(values=nominal)


def combine(trainable: Trainable, nominal: Nominal) -> Params:
    """The full physical parameter dict seen by a loss."""
    out = dict(nominal.values)
    out.update(trainable.values())
    return out


def scale_trainable(trainable: Trainable, factors: Mapping[str, float]) -> Trainable:
    """Multiply named trainable values by ``factors`` (e.g. a +30 % start)."""
    log = {k: v + math.log(factors[k]) if k in factors else v for k, v in trainable.log.items()}
    linear = {k: v * factors[k] if k in factors else v for k, v in trainable.linear.items()}
    return Trainable(log=log, linear=linear)


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


def _has_line_search(opt_state: Any) -> bool:
    """Whether an optax state holds a line search (whose update needs the objective)."""
    if "Linesearch" in type(opt_state).__name__:
        return True
    if isinstance(opt_state, tuple):
        return any(_has_line_search(s) for s in opt_state)
    return False


GRAD_MODES = ("reverse", "forward")


def _forward_value_and_grad(objective, trainable):
    """Value and gradient by forward mode: one JVP per trainable scalar.

    For a few parameters and a long rollout this avoids the reverse pass
    through the whole scan (tens of times the cost of the forward run here).
    """
    flat, unravel = jax.flatten_util.ravel_pytree(trainable)
    f = lambda v: objective(unravel(v))  # noqa: E731
    value = f(flat)
    grad = jax.jacfwd(f)(flat)
    return value, unravel(grad)


def make_fit_step(
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    *,
    line_search: bool | None = None,
    grad_mode: str = "reverse",
):
    """One jitted optimizer step.

    Returns ``step(trainable, opt_state, nominal, data) -> (trainable,
    opt_state, loss, grad_norm)``: the loss and its gradient at the incoming
    ``trainable`` (``eqx.filter_value_and_grad``), then one optax update.
    ``line_search`` (default: detected from the optimizer state, e.g. ``optax.lbfgs``) passes the
    objective to the update, as optax's line searches require; the value and
    gradient the line search already computed are reused. ``grad_mode``:
    ``"reverse"`` (``eqx.filter_value_and_grad``) or ``"forward"``
    (``jax.jacfwd``, one JVP per parameter; pair it with a value-only line
    search such as ``make_optimizer("lbfgs", line_search="backtracking")``).
    """
    check_choice("grad_mode", grad_mode, GRAD_MODES)

    @eqx.filter_jit
    def step(trainable: Trainable, opt_state, nominal: Nominal, data):
        def objective(t):
            return loss_fn(combine(t, nominal), data)

        use_ls = _has_line_search(opt_state) if line_search is None else line_search
        if grad_mode == "forward":
            value, grad = _forward_value_and_grad(objective, trainable)
            if use_ls:
                updates, opt_state = optimizer.update(
                    grad, opt_state, trainable, value=value, grad=grad, value_fn=objective
                )
            else:
                updates, opt_state = optimizer.update(grad, opt_state, trainable)
        elif use_ls:
            value, grad = optax.value_and_grad_from_state(objective)(trainable, state=opt_state)
            updates, opt_state = optimizer.update(
                grad, opt_state, trainable, value=value, grad=grad, value_fn=objective
            )
        else:
            value, grad = eqx.filter_value_and_grad(objective)(trainable)
            updates, opt_state = optimizer.update(grad, opt_state, trainable)
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
      data: the loss's data pytree (e.g. :class:`Measurements`).
      optimizer: default ``optax.lbfgs()``.
      convergence: stopping rules (default :class:`Convergence`).
      step_fn: a step from :func:`make_fit_step` to reuse (its compilation);
        built from ``loss_fn`` and ``optimizer`` when None.
      progress: called as ``progress(step, loss)`` after every step.
    """
    optimizer = make_optimizer("lbfgs") if optimizer is None else optimizer
    conv = Convergence() if convergence is None else convergence
    step = make_fit_step(loss_fn, optimizer) if step_fn is None else step_fn
    opt_state = optimizer.init(trainable)
    losses, norms = [], []
    reason, converged, calm = f"max_steps={conv.max_steps}", False, 0
    for k in range(conv.max_steps):
        new, opt_state, value, gnorm = step(trainable, opt_state, nominal, data)
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


# ---------------------------------------------------------------------------
# Uncertainty from the loss curvature
# ---------------------------------------------------------------------------


def gauss_newton_uncertainty(
    residual_fn: Callable[[Trainable], Array],
    trainable: Trainable,
    *,
    sigma: float | None = None,
) -> dict[str, Any]:
    """Parameter standard deviations from the curvature of a least-squares loss.

    With scaled residuals ``r(theta)`` (theta: the trainable vector, log space
    for positive constants), the loss ``0.5 mean(r^2)`` has Gauss-Newton
    Hessian ``H = J^T J / n``; the covariance of theta is
    ``sigma^2 (J^T J)^-1`` where ``sigma^2`` is the residual variance
    ``SSR / (n - p)`` (or the given ``sigma``, in residual units, when
    ``n <= p``). Log-space standard deviations are relative ones; they are
    mapped to physical units by the delta method (``std = value * std_log``).
    J comes from forward mode (``jax.jacfwd``): one JVP per parameter.

    Returns a dict: ``std`` (name -> physical std), ``relative_std``,
    ``correlation`` (p x p nested list), ``sigma`` (residual std used),
    ``hessian`` (p x p, the Gauss-Newton loss curvature).
    """
    flat, unravel = jax.flatten_util.ravel_pytree(trainable)
    r0 = residual_fn(trainable)
    jac = jax.jacfwd(lambda v: residual_fn(unravel(v)))(flat)
    n, p = int(r0.shape[0]), int(flat.shape[0])
    ssr = float(jnp.sum(r0**2))
    if n > p:
        s2 = ssr / (n - p)
    elif sigma is not None:
        s2 = float(sigma) ** 2
    else:
        raise ConfigError(f"sigma: needed when residuals ({n}) do not outnumber parameters ({p})")
    jtj = np.asarray(jac.T @ jac, dtype=float)
    cov = s2 * np.linalg.pinv(jtj)
    std_flat = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    denom = np.outer(std_flat, std_flat)
    corr = np.where(denom > 0, cov / np.where(denom > 0, denom, 1.0), 0.0)
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
    return {
        "std": std,
        "relative_std": rel,
        "correlation": corr.tolist(),
        "sigma": math.sqrt(s2),
        "hessian": (jtj / n).tolist(),
    }


# ---------------------------------------------------------------------------
# Results: typed pytrees <-> JSON
# ---------------------------------------------------------------------------


def _to_jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_to_jsonable(v) for v in x]
    if isinstance(x, (bool, str, type(None))):
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    arr = np.asarray(x)
    if arr.dtype == bool:
        return arr.tolist()
    if np.issubdtype(arr.dtype, np.number):
        arr = arr.astype(float)
        if arr.ndim == 0:
            v = float(arr)
            return v if math.isfinite(v) else None
        return [_to_jsonable(v) for v in arr]
    return str(x)


def _to_arrays(x: Any) -> Any:
    """JSON numbers and number lists back to arrays; strings and dicts as they are."""
    if isinstance(x, Mapping):
        return {k: _to_arrays(v) for k, v in x.items()}
    if isinstance(x, bool) or isinstance(x, str) or x is None:
        return x
    if isinstance(x, (int, float)):
        return jnp.asarray(float(x))
    if isinstance(x, list):
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            return [_to_arrays(v) for v in x]
        return jnp.asarray(arr)
    return x


class StudyResult(eqx.Module):
    """One study's outcome.

    Attributes:
      name: the study's name (static).
      values: seed name -> identified value [SI] (e.g. ``k_f``).
      std: seed name -> one-standard-deviation uncertainty [SI] (may be empty).
      metrics: name -> scalar or array diagnostics (R^2, residual RMS,
        closed-form values, ...).
      data: name -> the measurements and fitted curves (for plots).
      loss: (steps,) loss curve of the fit (empty when no fit ran).
      notes: free-text remarks (static): what was measured, caveats.
      converged: whether the fit met a tolerance (static).
      seconds: wall time [s] (static).
    """

    name: str = eqx.field(static=True)
    values: dict[str, Array]
    std: dict[str, Array]
    metrics: dict[str, Any]
    data: dict[str, Array]
    loss: Array
    notes: str = eqx.field(static=True, default="")
    converged: bool = eqx.field(static=True, default=True)
    seconds: float = eqx.field(static=True, default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return _to_jsonable(
            {
                "name": self.name,
                "values": self.values,
                "std": self.std,
                "metrics": self.metrics,
                "data": self.data,
                "loss": self.loss,
                "notes": self.notes,
                "converged": bool(self.converged),
                "seconds": float(self.seconds),
            }
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "StudyResult":
        for key in ("name", "values"):
            if key not in d:
                raise ConfigError(f"StudyResult: missing field {key!r}")
        loss = d.get("loss") or []
        return cls(
            name=str(d["name"]),
            values=_to_arrays(dict(d["values"])),
            std=_to_arrays(dict(d.get("std") or {})),
            metrics=_to_arrays(dict(d.get("metrics") or {})),
            data=_to_arrays(dict(d.get("data") or {})),
            loss=jnp.asarray(np.asarray(loss, dtype=float)),
            notes=str(d.get("notes", "")),
            converged=bool(d.get("converged", True)),
            seconds=float(d.get("seconds", 0.0)),
        )

    def save(self, path: str | Path) -> None:
        _write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> "StudyResult":
        return cls.from_dict(_read_json(path))


def _write_json(path: str | Path, obj: Any) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=1)
    tmp.replace(path)  # atomic: an interrupted run never leaves half a file


def _read_json(path: str | Path) -> Any:
    try:
        with open(path) as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from exc


def versions() -> dict[str, str]:
    """Versions of the packages a result depends on."""
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("flapjax", "jax", "jaxlib", "mujoco", "mujoco-mjx", "equinox", "optax", "numpy"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    out["jax_backend"] = jax.default_backend()
    out["float64"] = str(bool(jax.config.jax_enable_x64))
    return out


class IdentificationResult(eqx.Module):
    """Everything ``flapjax identify`` produced.

    Attributes:
      identified: seed name -> value [SI] (``k_f``, ``k_roll``, ``k_pitch``,
        ``D_w`` (3,), ``k_v``, and physical parameters of the per-wing model).
      std: seed name -> one-standard-deviation uncertainty where estimated.
      studies: study name -> :class:`StudyResult`.
      validation: name -> metrics of the flights that compare the models.
      settings: the configuration that was run (static, JSON-like).
      versions: package versions (static).
    """

    identified: dict[str, Array]
    std: dict[str, Array]
    studies: dict[str, StudyResult]
    validation: dict[str, Any]
    settings: dict = eqx.field(static=True)
    versions: dict = eqx.field(static=True)

    @classmethod
    def from_studies(
        cls,
        studies: Mapping[str, StudyResult],
        *,
        validation: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> "IdentificationResult":
        identified, std = {}, {}
        for s in studies.values():
            identified.update(s.values)
            std.update(s.std)
        return cls(
            identified=identified,
            std=std,
            studies=dict(studies),
            validation=dict(validation or {}),
            settings=dict(settings or {}),
            versions=versions(),
        )

    def to_cycle_averaged_params(self, base: CycleAveragedParams | None = None) -> CycleAveragedParams:
        """The cycle-averaged model with the identified values; fields not
        identified keep ``base``'s (default: the seed's values)."""
        base = CycleAveragedParams() if base is None else base
        values = base.to_dict()
        for seed, field in SEED_NAMES.items():
            if seed in self.identified:
                values[field] = np.asarray(self.identified[seed]).tolist()
        return CycleAveragedParams.from_dict(values)

    def to_dict(self) -> dict[str, Any]:
        units = {k: SEED_UNITS[k] for k in self.identified if k in SEED_UNITS}
        return _to_jsonable(
            {
                "identified": self.identified,
                "std": self.std,
                "units": units,
                "cycle_averaged": self.to_cycle_averaged_params().to_dict(),
                "residuals": {name: s.metrics for name, s in self.studies.items()},
                "validation": self.validation,
                "settings": self.settings,
                "versions": self.versions,
                "studies": {name: s.to_dict() for name, s in self.studies.items()},
            }
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "IdentificationResult":
        if "identified" not in d:
            raise ConfigError("IdentificationResult: missing field 'identified'")
        studies = {name: StudyResult.from_dict(s) for name, s in (d.get("studies") or {}).items()}
        return cls(
            identified=_to_arrays(dict(d["identified"])),
            std=_to_arrays(dict(d.get("std") or {})),
            studies=studies,
            validation=_to_arrays(dict(d.get("validation") or {})),
            settings=dict(d.get("settings") or {}),
            versions=dict(d.get("versions") or {}),
        )

    def save(self, path: str | Path) -> None:
        _write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> "IdentificationResult":
        return cls.from_dict(_read_json(path))
