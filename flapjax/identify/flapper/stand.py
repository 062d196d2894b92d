"""Identification from a measured thrust-stand table.

A stand table (:mod:`flapjax.identify.data`) holds one row per measured
condition of the robot on a force/torque sensor: the flapping frequency
``frequency_hz``, the cycle-mean vertical force ``fz_n`` and optionally the
plate angles ``pitch_plate_rad`` (delta_p, pitch_joint) and
``roll_plate_rad`` (delta_r, roll_joint), the cycle-mean horizontal forces
``fx_n``, ``fy_n`` and the moments ``mx_nm``, ``my_nm`` about the robot's
centre of mass in body axes. The cycle-averaged model's stand part
(:mod:`flapjax.aero.cycle_averaged`, fixed base: body = world frame) is::

    L     = k_f f^2,  c = 1 / sqrt(1 + delta_r^2 + delta_p^2)
    fz_n  = L c                 + b_fz
    fx_n  = -L delta_r c        + b_fx
    fy_n  = -L delta_p c        + b_fy
    mx_nm = lambda_f (k_roll delta_p + k_roll_cross delta_r)   + b_mx
    my_nm = lambda_f (-k_pitch delta_r + k_pitch_cross delta_p) + b_my

with ``lambda_f = (f / f_ref)^2``, ``f_ref`` = 42 Hz, the crossed naming of
the averaged model (the pitch_joint angle rolls the robot) and the cross
terms ``k_roll_cross`` (roll moment per rad of roll_joint) and
``k_pitch_cross`` (pitch moment per rad of pitch_joint), 0 for a symmetric
robot. ``b_*`` (``fz_offset`` ...) are the sensor's zero offsets left after
taring, fitted when the table has enough rows (:data:`MIN_ROWS_FOR_OFFSETS`).
A term is fitted only when the table can identify it (its channel is there
and the plate angle it multiplies varies).

The fit is by gradient (:func:`flapjax.identify.fit.fit`, L-BFGS; k_f in log
space, the signed terms in units of their data scale) in two passes: the
first with each channel scaled by its RMS, the second by the residual
standard deviation of each channel estimated from the first pass, so the
channels weigh by their noise. Standard deviations come from the curvature
of the loss (:func:`flapjax.identify.losses.gauss_newton_uncertainty`, with
the residual variance estimated from the data). Every ``holdout_every``-th
row is held out of the fit and its prediction error reported.
:func:`run_stand_identification` writes ``results.json``, a partial
``cycle_averaged.json`` and residual plots.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.data import Column, DataError, read_table
from flapjax.identify.fit import Convergence, Nominal, Trainable, combine, fit, make_fit_step, make_optimizer
from flapjax.identify.losses import Measurements, gauss_newton_uncertainty, least_squares, r_squared, residuals
from flapjax.identify.results import lock_output_dir, versions, write_json

__all__ = [
    "CHANNELS",
    "MIN_ROWS_FOR_OFFSETS",
    "REFERENCE_FREQUENCY",
    "STAND_COLUMNS",
    "StandData",
    "StandFit",
    "fit_stand",
    "load_stand_table",
    "predict_stand",
    "run_stand_identification",
]

#: f_ref of lambda_f = (f / f_ref)^2 [Hz] (the averaged model's).
REFERENCE_FREQUENCY = 42.0

#: Sensor offsets are fitted only when the fitted rows number at least this.
MIN_ROWS_FOR_OFFSETS = 8

STAND_COLUMNS = (
    Column("frequency_hz", True, "flapping frequency [Hz]"),
    Column("fz_n", True, "cycle-mean vertical force [N]"),
    Column("pitch_plate_rad", False, "plate angle delta_p (pitch_joint) [rad]"),
    Column("roll_plate_rad", False, "plate angle delta_r (roll_joint) [rad]"),
    Column("fx_n", False, "cycle-mean force along body x [N]"),
    Column("fy_n", False, "cycle-mean force along body y [N]"),
    Column("mx_nm", False, "cycle-mean moment about body x at the centre of mass [N m]"),
    Column("my_nm", False, "cycle-mean moment about body y at the centre of mass [N m]"),
)

#: Measured channels in the order of :func:`predict_stand`'s columns.
CHANNELS = ("fz_n", "fx_n", "fy_n", "mx_nm", "my_nm")

#: Parameter -> (channel it enters, unit).
PARAMETERS = {
    "k_f": ("fz_n", "N/Hz^2"),
    "k_roll": ("mx_nm", "N m/rad"),
    "k_roll_cross": ("mx_nm", "N m/rad"),
    "k_pitch": ("my_nm", "N m/rad"),
    "k_pitch_cross": ("my_nm", "N m/rad"),
    "fz_offset": ("fz_n", "N"),
    "fx_offset": ("fx_n", "N"),
    "fy_offset": ("fy_n", "N"),
    "mx_offset": ("mx_nm", "N m"),
    "my_offset": ("my_nm", "N m"),
}


@dataclass(frozen=True)
class StandData:
    """A checked stand table.

    Attributes:
      frequency: (n,) [Hz].
      plate: (n, 2) plate angles (delta_p, delta_r) [rad] (0 where the file
        has no plate column).
      channels: measured channel name -> (n,) cycle means [N or N m]
        (``fz_n`` always; the others when the file holds them).
      source: where the table came from.
    """

    frequency: np.ndarray
    plate: np.ndarray
    channels: dict[str, np.ndarray]
    source: str = ""

    @property
    def n(self) -> int:
        return int(self.frequency.shape[0])

    @property
    def channel_names(self) -> tuple[str, ...]:
        return tuple(c for c in CHANNELS if c in self.channels)

    def targets(self) -> np.ndarray:
        """(n, C) measured channels in :attr:`channel_names` order."""
        return np.stack([self.channels[c] for c in self.channel_names], axis=1)

    def rows(self, index) -> "StandData":
        """The table restricted to ``index`` (bool mask or integer rows)."""
        return StandData(self.frequency[index], self.plate[index],
                         {k: v[index] for k, v in self.channels.items()}, self.source)


def stand_data(frequency, fz, *, pitch_plate=None, roll_plate=None, source: str = "", **channels) -> StandData:
    """A :class:`StandData` from arrays (same checks as a file: finite,
    positive frequencies, equal lengths); ``channels`` are ``fx_n``,
    ``fy_n``, ``mx_nm``, ``my_nm``."""
    unknown = sorted(set(channels) - set(CHANNELS))
    if unknown:
        raise DataError(f"{source or 'stand data'}: unknown channel(s) {unknown}; known: {list(CHANNELS)}")
    f = np.asarray(frequency, dtype=float).reshape(-1)
    n = f.shape[0]
    cols = {"fz_n": np.asarray(fz, dtype=float).reshape(-1)}
    cols.update({k: np.asarray(v, dtype=float).reshape(-1) for k, v in channels.items() if v is not None})
    plates = [np.zeros(n) if a is None else np.asarray(a, dtype=float).reshape(-1) for a in (pitch_plate, roll_plate)]
    where = source or "stand data"
    named = [("frequency_hz", f), ("pitch_plate_rad", plates[0]), ("roll_plate_rad", plates[1]), *cols.items()]
    for name, arr in named:
        if arr.shape[0] != n:
            raise DataError(f"{where}: column {name!r} has {arr.shape[0]} rows, column 'frequency_hz' has {n}")
        bad = np.nonzero(~np.isfinite(arr))[0]
        if bad.size:
            raise DataError(f"{where}: column {name!r}, row {bad[0] + 1}: NaN or inf")
    if n == 0:
        raise DataError(f"{where}: empty table: column 'frequency_hz', row 1 missing")
    bad = np.nonzero(f <= 0)[0]
    if bad.size:
        raise DataError(f"{where}: column 'frequency_hz', row {bad[0] + 1}: frequency must be > 0 Hz, "
                        f"got {f[bad[0]]!r}")
    return StandData(f, np.stack(plates, axis=1), cols, source)


def load_stand_table(path: str | Path) -> StandData:
    """Read and check a stand table (CSV or NPZ; columns :data:`STAND_COLUMNS`)."""
    t = read_table(path, STAND_COLUMNS)
    extra = {k: t[k] for k in CHANNELS[1:] if k in t}
    return stand_data(t["frequency_hz"], t["fz_n"], pitch_plate=t.get("pitch_plate_rad"),
                      roll_plate=t.get("roll_plate_rad"), source=str(path), **extra)


# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------


def stand_model(values: Mapping[str, Any], frequency, plate, channels=CHANNELS, *,
                f_ref: float = REFERENCE_FREQUENCY) -> jax.Array:
    """(n, C) predicted cycle means of ``channels`` (module docstring) from
    physical ``values`` (missing terms are 0); frequency (n,) [Hz], plate
    (n, 2) (delta_p, delta_r) [rad]."""
    v = lambda k: values.get(k, 0.0)  # noqa: E731
    f = jnp.asarray(frequency)
    dp, dr = plate[:, 0], plate[:, 1]
    lift = v("k_f") * f**2
    c = 1.0 / jnp.sqrt(1.0 + dp**2 + dr**2)
    lam = (f / f_ref) ** 2
    out = {
        "fz_n": lift * c + v("fz_offset"),
        "fx_n": -lift * dr * c + v("fx_offset"),
        "fy_n": -lift * dp * c + v("fy_offset"),
        "mx_nm": lam * (v("k_roll") * dp + v("k_roll_cross") * dr) + v("mx_offset"),
        "my_nm": lam * (-v("k_pitch") * dr + v("k_pitch_cross") * dp) + v("my_offset"),
    }
    return jnp.stack([out[ch] for ch in channels], axis=-1)


_model_jit = jax.jit(stand_model, static_argnums=(3,))


def _physical(p: Mapping[str, Any]) -> dict[str, Any]:
    """Physical values from a fit's parameter dict: signed terms are trained
    in units of ``unit_<name>``."""
    out = {}
    for k, val in p.items():
        if k.startswith("unit_"):
            continue
        unit = p.get(f"unit_{k}")
        out[k] = val if unit is None else val * unit
    return out


def predict_stand(p: Mapping[str, Any], inputs) -> jax.Array:
    """The fit's model: ``inputs = (frequency (n,), plate (n, 2), channels)``
    with ``channels`` a static tuple; ``p`` holds trained values (signed ones
    in units of ``unit_<name>``) and ``f_ref``."""
    f, plate, channels = inputs
    return stand_model(_physical({k: v for k, v in p.items() if k != "f_ref"}), f, plate, channels,
                       f_ref=p["f_ref"])


class _Inputs(tuple):
    """(frequency, plate, channels) with the channel names static under jit."""


jax.tree_util.register_pytree_node(
    _Inputs, lambda x: ((x[0], x[1]), x[2]), lambda aux, ch: _Inputs((ch[0], ch[1], aux))
)


def _regressors(data: StandData, f_ref: float) -> dict[str, np.ndarray]:
    """Each parameter's regressor (its column of the linearized model)."""
    f, dp, dr = data.frequency, data.plate[:, 0], data.plate[:, 1]
    c = 1.0 / np.sqrt(1.0 + dp**2 + dr**2)
    lam = (f / f_ref) ** 2
    return {"k_roll": lam * dp, "k_roll_cross": lam * dr, "k_pitch": -lam * dr, "k_pitch_cross": lam * dp,
            "k_f_fz_n": f**2 * c, "k_f_fx_n": -(f**2) * dr * c, "k_f_fy_n": -(f**2) * dp * c}


def stand_terms(data: StandData, *, offsets: bool | None = None) -> list[str]:
    """The parameters ``data`` can identify (module docstring), in a fixed order."""
    ch = data.channels
    varies = lambda a: bool(np.ptp(a) > 0 or np.any(a != 0))  # noqa: E731
    dp, dr = varies(data.plate[:, 0]), varies(data.plate[:, 1])
    names = ["k_f"]
    if "mx_nm" in ch:
        names += ["k_roll"] * dp + ["k_roll_cross"] * dr
    if "my_nm" in ch:
        names += ["k_pitch"] * dr + ["k_pitch_cross"] * dp
    if offsets is None:
        offsets = data.n >= MIN_ROWS_FOR_OFFSETS
    if offsets:
        names += [f"{c.split('_')[0]}_offset" for c in data.channel_names]
    return names


def _check_identifiable(data: StandData, names: list[str], f_ref: float) -> None:
    """Each moment channel's regressors must be independent (the plate angles
    and the offset must not move together)."""
    reg = _regressors(data, f_ref)
    for ch, terms in (("mx_nm", ("k_roll", "k_roll_cross")), ("my_nm", ("k_pitch", "k_pitch_cross"))):
        cols = [reg[t] for t in terms if t in names]
        if f"{ch.split('_')[0]}_offset" in names:
            cols.append(np.ones(data.n))
        if len(cols) > 1:
            a = np.stack(cols, axis=1)
            if np.linalg.matrix_rank(a / np.maximum(np.abs(a).max(axis=0), 1e-300), tol=1e-9) < a.shape[1]:
                raise DataError(f"{data.source}: columns 'pitch_plate_rad' and 'roll_plate_rad': the plate angles "
                                f"do not vary independently, so the moment terms {[t for t in terms if t in names]} "
                                f"of column {ch!r} cannot be told apart; measure each plate angle on its own too")


def _per_channel_counts(names: list[str], channels: tuple[str, ...]) -> np.ndarray:
    counts = []
    for ch in channels:
        own = [n for n in names if PARAMETERS[n][0] == ch and n != "k_f"]
        counts.append(len(own) + (1 if ch == "fz_n" else 0))
    return np.asarray(counts)


# ---------------------------------------------------------------------------
# Fit
# ---------------------------------------------------------------------------


@dataclass
class StandFit:
    """Outcome of :func:`fit_stand`.

    Attributes:
      values: parameter -> fitted value [SI].
      std: parameter -> one standard deviation [SI].
      least_squares: parameter -> closed-form weighted least-squares value (a check).
      channels: the fitted channels.
      sigma: channel -> residual standard deviation of the fitted rows [N or N m].
      correlation: (p, p) parameter correlation (order of ``names``).
      names: fitted parameters.
      fit_rows, validation_rows: row indices of the table (0-based).
      validation: held-out prediction error per channel (rms [SI],
        rms / sigma, rms / rms of the measured values), or {} without a hold-out.
      r2: channel -> R^2 on the fitted rows.
      loss: (steps,) loss of the second pass.
      converged, reason, steps: how the second pass stopped.
      f_ref: reference frequency [Hz].
    """

    values: dict[str, float]
    std: dict[str, float]
    least_squares: dict[str, float]
    channels: tuple[str, ...]
    sigma: dict[str, float]
    correlation: list
    names: list[str]
    fit_rows: np.ndarray
    validation_rows: np.ndarray
    validation: dict[str, dict[str, float]]
    r2: dict[str, float]
    loss: np.ndarray
    converged: bool
    reason: str
    steps: int
    f_ref: float = REFERENCE_FREQUENCY
    notes: list[str] = field(default_factory=list)

    def predict(self, data: StandData) -> np.ndarray:
        """(n, C) predictions of the fitted channels for ``data``'s rows."""
        values = {k: jnp.asarray(v) for k, v in self.values.items()}
        return np.asarray(_model_jit(values, jnp.asarray(data.frequency), jnp.asarray(data.plate), self.channels,
                                     f_ref=self.f_ref))


def holdout_rows(n: int, every: int) -> np.ndarray:
    """(n,) bool: the rows held out for validation, every ``every``-th (the
    ``every``-th, ``2 every``-th, ...); none when ``every`` is 0 or the table
    has fewer than ``2 every`` rows."""
    mask = np.zeros(n, dtype=bool)
    if every and every > 1 and n >= 2 * every:
        mask[every - 1::every] = True
    return mask


def _closed_form(data: StandData, names: list[str], channels, weights, f_ref) -> dict[str, float]:
    """Weighted linear least squares of the (linear-in-parameters) model."""
    reg = _regressors(data, f_ref)
    blocks_a, blocks_y = [], []
    for j, ch in enumerate(channels):
        cols = []
        for name in names:
            if name == "k_f":
                cols.append(reg[f"k_f_{ch}"] if ch in ("fz_n", "fx_n", "fy_n") else np.zeros(data.n))
            elif PARAMETERS[name][0] != ch:
                cols.append(np.zeros(data.n))
            elif name.endswith("_offset"):
                cols.append(np.ones(data.n))
            else:
                cols.append(reg[name])
        blocks_a.append(np.stack(cols, axis=1) / weights[j])
        blocks_y.append(data.channels[ch] / weights[j])
    a, y = np.concatenate(blocks_a), np.concatenate(blocks_y)
    scale = np.maximum(np.abs(a).max(axis=0), 1e-300)
    sol = np.linalg.lstsq(a / scale, y, rcond=None)[0] / scale
    return {n: float(v) for n, v in zip(names, sol)}


_PROGRAM: list = []


_predict_jit = jax.jit(predict_stand)


@jax.jit
def _scaled_residuals(trainable, nominal, data):
    return residuals(predict_stand, combine(trainable, nominal), data)


def _residual_fn(nominal, data):
    return lambda t: _scaled_residuals(t, nominal, data)


def _fit_program():
    """(loss, optimizer, jitted step), built once so every table of the same
    shape reuses one compilation."""
    if not _PROGRAM:
        loss = jax.jit(least_squares(predict_stand))  # also the fit's final loss: one program
        optimizer = make_optimizer("lbfgs")
        _PROGRAM.append((loss, optimizer, make_fit_step(loss, optimizer, grad_mode="reverse")))
    return _PROGRAM[0]


def fit_stand(data: StandData, *, holdout_every: int = 5, offsets: bool | None = None,
              f_ref: float = REFERENCE_FREQUENCY, start_factor: float = 1.3, max_steps: int = 200) -> StandFit:
    """Fit the stand model to ``data`` (module docstring).

    Args:
      data: the table.
      holdout_every: hold out every k-th row for validation (0: none; no
        hold-out either below ``2 k`` rows).
      offsets: fit the sensor offsets (default: when the fitted rows number
        at least :data:`MIN_ROWS_FOR_OFFSETS`).
      f_ref: reference frequency of lambda_f [Hz].
      start_factor: the gradient fit starts from this times the closed form
        (1.0: from it), so the result is the optimizer's, not the closed form's.
      max_steps: L-BFGS steps per pass.
    """
    held = holdout_rows(data.n, holdout_every)
    train = data.rows(~held)
    channels = train.channel_names
    names = stand_terms(train, offsets=offsets if offsets is not None else train.n >= MIN_ROWS_FOR_OFFSETS)
    _check_identifiable(train, names, f_ref)
    counts = _per_channel_counts(names, channels)
    short = [(ch, int(c)) for ch, c in zip(channels, counts) if train.n <= c]
    if short:
        ch, c = short[0]
        raise DataError(f"{data.source}: column {ch!r}: {train.n} fitted row(s) for {c} parameter(s); need at least "
                        f"{c + 1} rows to estimate the noise (row {train.n + 1} missing)")
    targets = train.targets()
    rms = np.sqrt(np.mean(targets**2, axis=0))
    rms = np.where(rms > 0, rms, 1.0)
    ls0 = _closed_form(train, names, channels, rms, f_ref)
    if not ls0["k_f"] > 0:
        raise DataError(f"{data.source}: column 'fz_n': the measured lift does not grow with frequency "
                        f"(least-squares k_f = {ls0['k_f']:.3e} N/Hz^2); check the sign of the force axis")
    # signed terms trained in units of their data scale (well conditioned for L-BFGS)
    reg = _regressors(train, f_ref)
    units = {}
    for name in names:
        if name == "k_f":
            continue
        ch = PARAMETERS[name][0]
        j = channels.index(ch)
        x = np.ones(train.n) if name.endswith("_offset") else reg[name]
        units[name] = float(rms[j] / max(np.sqrt(np.mean(x**2)), 1e-300))
    log = {"k_f": jnp.log(jnp.asarray(ls0["k_f"] * start_factor))}
    linear = {n: jnp.asarray(ls0[n] * start_factor / units[n]) for n in names if n != "k_f"}
    trainable = Trainable(log=log, linear=linear)
    nominal = Nominal(values={"f_ref": jnp.asarray(float(f_ref)),
                              **{f"unit_{n}": jnp.asarray(u) for n, u in units.items()}})
    inputs = _Inputs((jnp.asarray(train.frequency), jnp.asarray(train.plate), channels))
    loss, optimizer, step = _fit_program()
    eps = float(jnp.finfo(jnp.result_type(float)).eps)  # the loss settles at this resolution
    conv = Convergence(max_steps=max_steps, grad_tol=1e-9, rtol=max(1e-11, 10.0 * eps), patience=3)
    first = fit(loss, trainable, nominal, Measurements(inputs, jnp.asarray(targets), jnp.asarray(rms)),
                optimizer=optimizer, convergence=conv, step_fn=step)
    resid = targets - np.asarray(_predict_jit(first.params, inputs))
    dof = np.maximum(train.n - counts, 1)
    sigma = np.sqrt(np.sum(resid**2, axis=0) / dof)
    sigma = np.maximum(sigma, 1e-9 * rms)
    data_w = Measurements(inputs, jnp.asarray(targets), jnp.asarray(sigma))
    second = fit(loss, first.trainable, nominal, data_w, optimizer=optimizer, convergence=conv, step_fn=step)
    unc = gauss_newton_uncertainty(_residual_fn(nominal, data_w), second.trainable)
    phys = _physical({k: v for k, v in second.params.items() if k != "f_ref"})
    values = {n: float(phys[n]) for n in names}
    std = {}
    for n in names:
        s = float(np.asarray(unc["std"][n]))
        std[n] = s if n == "k_f" else s * units[n]
    ls = _closed_form(train, names, channels, sigma, f_ref)
    fitted = StandFit(values=values, std=std, least_squares=ls, channels=channels,
                      sigma={ch: float(s) for ch, s in zip(channels, sigma)}, correlation=unc["correlation"],
                      names=names, fit_rows=np.nonzero(~held)[0], validation_rows=np.nonzero(held)[0],
                      validation={}, r2={}, loss=np.asarray(second.loss), converged=bool(second.converged),
                      reason=second.reason, steps=first.steps + second.steps, f_ref=float(f_ref))
    pred_train = fitted.predict(train)
    fitted.r2 = {ch: r_squared(targets[:, j], pred_train[:, j]) for j, ch in enumerate(channels)}
    if held.any():
        val = data.rows(held)
        err = val.targets() - fitted.predict(val)
        meas_rms = np.sqrt(np.mean(val.targets() ** 2, axis=0))
        for j, ch in enumerate(channels):
            e = float(np.sqrt(np.mean(err[:, j] ** 2)))
            fitted.validation[ch] = {"rms": e, "rms_over_sigma": e / float(sigma[j]),
                                     "relative_rms": e / float(meas_rms[j]) if meas_rms[j] > 0 else math.nan}
    else:
        fitted.notes.append(f"no hold-out: {data.n} rows (a hold-out needs at least {2 * holdout_every})")
    if not any(n.endswith("_offset") for n in names):
        fitted.notes.append(f"sensor offsets not fitted ({train.n} fitted rows; they are from "
                            f"{MIN_ROWS_FOR_OFFSETS} on)")
    return fitted


# ---------------------------------------------------------------------------
# Plots and the driver
# ---------------------------------------------------------------------------

_LABELS = {"fz_n": "F_z [N]", "fx_n": "F_x [N]", "fy_n": "F_y [N]", "mx_nm": "M_x [N m]", "my_nm": "M_y [N m]"}


def write_stand_plots(data: StandData, result: StandFit, out_dir: str | Path) -> list[Path]:
    """``stand_residuals.png`` (residual of every channel against frequency,
    fitted and held-out rows, +-2 sigma band) and ``stand_fit.png`` (measured
    against predicted, and F_z against f^2 with the fitted curve)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    files = []
    pred = result.predict(data)
    meas = np.stack([data.channels[ch] for ch in result.channels], axis=1)
    held = np.zeros(data.n, dtype=bool)
    held[result.validation_rows] = True
    nc = len(result.channels)
    fig, axes = plt.subplots(nc, 1, figsize=(6.5, 2.2 * nc + 0.4), squeeze=False, sharex=True)
    for j, ch in enumerate(result.channels):
        ax = axes[j, 0]
        r = meas[:, j] - pred[:, j]
        s = result.sigma[ch]
        ax.axhspan(-2 * s, 2 * s, color="0.9", label="+-2 sigma (fitted rows)")
        ax.axhline(0.0, color="0.5", lw=0.8)
        ax.plot(data.frequency[~held], r[~held], "o", ms=3.5, label="fitted rows")
        if held.any():
            ax.plot(data.frequency[held], r[held], "x", ms=6, color="C3", label="held-out rows")
        ax.set_ylabel(f"residual {_LABELS[ch]}", fontsize=8)
        if j == 0:
            ax.legend(fontsize=7, loc="best")
    axes[-1, 0].set_xlabel("frequency [Hz]")
    fig.suptitle("stand fit: measured minus model", fontsize=10)
    fig.tight_layout()
    path = out / "stand_residuals.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    files.append(path)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    zero = np.all(data.plate == 0, axis=1)
    f2 = data.frequency**2
    axes[0].plot(f2[zero], data.channels["fz_n"][zero], "o", label="measured, plate level")
    if (~zero).any():
        axes[0].plot(f2[~zero], data.channels["fz_n"][~zero], ".", color="0.6", label="measured, plate tilted")
    ff = np.linspace(0.0, data.frequency.max() * 1.05, 100)
    k_f = result.values["k_f"]
    axes[0].plot(ff**2, k_f * ff**2 + result.values.get("fz_offset", 0.0), "-",
                 label=f"k_f = {k_f:.5e} +- {result.std['k_f']:.1e} N/Hz^2")
    axes[0].set_xlabel("f^2 [Hz^2]")
    axes[0].set_ylabel("F_z [N]")
    axes[0].legend(fontsize=8)
    for j, ch in enumerate(result.channels):
        scale = np.sqrt(np.mean(meas[:, j] ** 2)) or 1.0
        axes[1].plot(meas[:, j] / scale, pred[:, j] / scale, "o", ms=3, label=ch)
    lim = axes[1].get_xlim()
    axes[1].plot(lim, lim, "k--", lw=0.8)
    axes[1].set_xlabel("measured / channel RMS")
    axes[1].set_ylabel("model / channel RMS")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    path = out / "stand_fit.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    files.append(path)
    return files


def stand_summary(result: StandFit) -> str:
    """Plain-text table of the fitted values."""
    lines = [f"{'parameter':<16}{'value':>14}{'std':>12}  unit"]
    for n in result.names:
        lines.append(f"{n:<16}{result.values[n]:>14.5e}{result.std[n]:>12.2e}  {PARAMETERS[n][1]}")
    for ch, v in result.validation.items():
        lines.append(f"held-out {ch:<7} rms {v['rms']:.3e} ({v['rms_over_sigma']:.2f} sigma, "
                     f"{100 * v['relative_rms']:.2f} % of the measured RMS)")
    return "\n".join(lines)


def run_stand_identification(path: str | Path, out_dir: str | Path, *, echo: Callable[[str], None] = print,
                             physical: bool = False, holdout_every: int = 5,
                             physical_options: Mapping[str, Any] | None = None) -> dict:
    """Identify the stand model from the table at ``path``.

    Writes into ``out_dir``: ``results.json`` (every fitted value ``name``
    and its standard deviation ``name_std``, the held-out rows' prediction
    error, the residual standard deviations, diagnostics),
    ``cycle_averaged.json`` (the fitted k_f, and k_roll / k_pitch when the
    table identifies them, loadable by
    :meth:`flapjax.aero.cycle_averaged.CycleAveragedParams.from_json`) and
    the plots of :func:`write_stand_plots`; returns the results dict.

    ``physical=True`` also fits per-wing physical parameters through the
    fixed-base per-wing rollout to the table (slow: minutes;
    :func:`flapjax.identify.flapper.physical.fit_physical_to_stand`, options
    in ``physical_options``) and adds them under ``"physical"``.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    with lock_output_dir(out, name="out"):
        data = load_stand_table(path)
        echo(f"stand table {path}: {data.n} rows, channels {list(data.channel_names)}")
        res = fit_stand(data, holdout_every=holdout_every)
        echo(stand_summary(res))
        plots = write_stand_plots(data, res, out)
        results: dict[str, Any] = {"study": "stand", "source": str(path), "rows": data.n,
                                   "rows_fitted": int(res.fit_rows.size),
                                   "rows_held_out": [int(i) + 1 for i in res.validation_rows]}
        for n in res.names:
            results[n] = res.values[n]
            results[f"{n}_std"] = res.std[n]
        results.update({
            "units": {n: PARAMETERS[n][1] for n in res.names},
            "reference_frequency": res.f_ref,
            "least_squares": res.least_squares,
            "residual_std": res.sigma,
            "r2": res.r2,
            "validation": res.validation,
            "correlation": {"names": res.names, "matrix": res.correlation},
            "converged": res.converged,
            "fit_reason": res.reason,
            "fit_steps": res.steps,
            "notes": res.notes,
            "plots": [p.name for p in plots],
        })
        averaged = {"lift_coefficient": res.values["k_f"], "reference_frequency": res.f_ref}
        if res.values.get("k_roll", 0.0) > 0:
            averaged["roll_gain"] = res.values["k_roll"]
        if res.values.get("k_pitch", 0.0) > 0:
            averaged["pitch_gain"] = res.values["k_pitch"]
        write_json(out / "cycle_averaged.json", averaged)
        if physical:
            from flapjax.identify.flapper.physical import fit_physical_to_stand

            echo("per-wing physical parameters through the fixed-base rollout (slow) ...")
            opts = {"sigma": res.sigma,  # the channels' noise and the sensor offsets of the averaged fit
                    "offsets": {k: v for k, v in res.values.items() if k.endswith("_offset")}}
            opts.update(physical_options or {})
            phys = fit_physical_to_stand(data, **opts)
            results["physical"] = phys
            for n, v in phys["values"].items():
                echo(f"  {n:<16} {v:.5e} +- {phys['std'][n]:.2e}")
        results["seconds"] = time.perf_counter() - t0
        results["versions"] = versions()
        write_json(out / "results.json", results)
    echo(f"results: {out / 'results.json'}")
    return results
