"""The stand fit: L-BFGS in two passes (channels weighed by their RMS, then
by their residual noise), Gauss-Newton standard deviations, the closed-form
least squares as a check and the held-out rows' prediction error, and the
moment gains a table cannot identify held at the nominal robot's values
(:func:`held_gains`; docs/data_formats.md, "Thrust-stand tables").
:func:`~flapjax.identify.solve.holdout_rows` picks the held-out rows."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.data.tables import DataError
from flapjax.identify.flapper.far_from_nominal import far_from_nominal
from flapjax.identify.fit import (
    Convergence,
    Nominal,
    Trainable,
    combine,
    fit,
    make_fit_step,
    make_optimizer,
)
from flapjax.data.stand_table import StandData
from flapjax.identify.flapper.stand_prediction import (
    MIN_ROWS_FOR_OFFSETS,
    PARAMETERS,
    REFERENCE_FREQUENCY,
    StandInputs,
    check_identifiable,
    per_channel_counts,
    physical_values,
    predict_stand,
    regressors,
    stand_model_jit,
    stand_terms,
)
from flapjax.identify.losses import (
    Measurements,
    correlation_among,
    gauss_newton_uncertainty,
    least_squares,
    r_squared,
    residuals,
)
from flapjax.identify.solve import held_out_errors, holdout_rows, residual_sigma, reweighted_passes


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
      notes: what the reader should know about the fit.
      held_values: moment gain -> the value it is held at [N m/rad] (not
        fitted: :func:`held_gains`).
      not_identified: moment gain -> why the table cannot identify it.
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
    held_values: dict[str, float] = field(default_factory=dict)
    not_identified: dict[str, str] = field(default_factory=dict)

    def reported(self) -> dict[str, float]:
        """Every reported value [SI], fitted or held, in the order of
        :data:`~flapjax.identify.flapper.stand_prediction.PARAMETERS`."""
        held = self.held_values
        return {n: self.values.get(n, held.get(n)) for n in PARAMETERS if n in self.values or n in held}

    def predict(self, data: StandData) -> np.ndarray:
        """(n, C) predictions of the fitted channels for ``data``'s rows."""
        values = {k: jnp.asarray(v) for k, v in self.values.items()}
        return np.asarray(stand_model_jit(values, jnp.asarray(data.frequency), jnp.asarray(data.plate),
                                          self.channels, f_ref=self.f_ref))


#: Moment gain -> (the moment column it enters, the plate column whose angle it multiplies).
GAIN_PLATES = {"k_roll": ("mx_nm", "pitch_plate_rad"), "k_roll_cross": ("mx_nm", "roll_plate_rad"),
               "k_pitch": ("my_nm", "roll_plate_rad"), "k_pitch_cross": ("my_nm", "pitch_plate_rad")}


def nominal_gains() -> dict[str, float]:
    """The values a moment gain the table cannot identify is held at
    [N m/rad]: the averaged model's defaults for ``k_roll`` and ``k_pitch``
    (:class:`~flapjax.aero.cycle_averaged.CycleAveragedParams`, the nominal
    robot's, as declared rather than as stored in single precision), 0 for
    the cross terms (a symmetric robot)."""
    default = {f.name: f.default for f in fields(CycleAveragedParams)}
    return {"k_roll": float(default["roll_gain"]), "k_roll_cross": 0.0, "k_pitch": float(default["pitch_gain"]),
            "k_pitch_cross": 0.0}


def held_gains(train: StandData, names: list[str]) -> tuple[dict[str, float], dict[str, str], list[str]]:
    """The moment gains of the moment columns ``train`` holds that are not
    among the fitted ``names`` (their plate angle is 0 in every fitted
    row): ``(name -> held value, name -> why, notes)``."""
    nominal = nominal_gains()
    held = [n for n, (ch, _) in GAIN_PLATES.items() if ch in train.channels and n not in names]
    why = {n: f"column {GAIN_PLATES[n][1]!r} is 0 (or absent) in every fitted row: that plate never moves, so "
              f"column {GAIN_PLATES[n][0]!r} does not depend on {n}" for n in held}
    notes = []
    for plate in ("pitch_plate_rad", "roll_plate_rad"):
        terms = [n for n in held if GAIN_PLATES[n][1] == plate]
        them = "it" if len(terms) == 1 else "them"
        if terms:
            notes.append(f"{', '.join(terms)} not identified: column {plate!r} is 0 (or absent) in every fitted row "
                         f"(the plate never moves), so the moments do not depend on {them}; held at the nominal "
                         f"robot's value (std null); tilt that plate in some rows to identify {them}")
    return {n: nominal[n] for n in held}, why, notes


def _column(reg: dict[str, np.ndarray], name: str, ch: str, n: int) -> np.ndarray:
    """(n,) regressor of parameter ``name`` in channel ``ch`` (0 where it does not enter)."""
    if name == "k_f":
        return reg[f"k_f_{ch}"] if ch in ("fz_n", "fx_n", "fy_n") else np.zeros(n)
    if PARAMETERS[name][0] != ch:
        return np.zeros(n)
    return np.ones(n) if name.endswith("_offset") else reg[name]


def _closed_form(data: StandData, names: list[str], channels, weights, f_ref) -> dict[str, float]:
    """Weighted linear least squares of the (linear-in-parameters) model."""
    reg = regressors(data, f_ref)
    a = np.concatenate([np.stack([_column(reg, n, ch, data.n) for n in names], axis=1) / weights[j]
                        for j, ch in enumerate(channels)])
    y = np.concatenate([data.channels[ch] / weights[j] for j, ch in enumerate(channels)])
    scale = np.maximum(np.abs(a).max(axis=0), 1e-300)
    sol = np.linalg.lstsq(a / scale, y, rcond=None)[0] / scale
    return {n: float(v) for n, v in zip(names, sol)}


_predict_jit = jax.jit(predict_stand)


@jax.jit
def _scaled_residuals(trainable, nominal, data):
    return residuals(predict_stand, combine(trainable, nominal), data)


@functools.cache
def _fit_program():
    """(loss, optimizer, jitted step), built once so every table of the same
    shape reuses one compilation."""
    loss = jax.jit(least_squares(predict_stand))  # also the fit's final loss: one program
    optimizer = make_optimizer("lbfgs")
    return loss, optimizer, make_fit_step(loss, optimizer, grad_mode="reverse")


def _training_units(train: StandData, names: list[str], channels, rms: np.ndarray, f_ref: float) -> dict[str, float]:
    """The signed terms are trained in units of their data scale (well
    conditioned for L-BFGS): channel RMS over regressor RMS."""
    reg = regressors(train, f_ref)
    units = {}
    for name in (n for n in names if n != "k_f"):
        ch = PARAMETERS[name][0]
        x = _column(reg, name, ch, train.n)
        units[name] = float(rms[channels.index(ch)] / max(np.sqrt(np.mean(x**2)), 1e-300))
    return units


def _terms(data: StandData, train: StandData, offsets: bool | None, f_ref: float) -> tuple[list[str], np.ndarray, bool]:
    """``(names, per-channel parameter counts, one frequency)`` of the terms
    the fitted rows ``train`` can identify; :class:`DataError` when they cannot."""
    channels = train.channel_names
    one_frequency = np.unique(train.frequency).size < 2  # k_f f^2 is then a constant, as the fz offset is
    if offsets is None:
        offsets = train.n >= MIN_ROWS_FOR_OFFSETS and not one_frequency
    elif offsets and one_frequency:
        raise DataError(f"{data.source}: column 'frequency_hz': one frequency in the fitted rows, so k_f and the "
                        "fz offset cannot be told apart; measure at several frequencies or fit without offsets")
    names = stand_terms(train, offsets=offsets)
    check_identifiable(train, names, f_ref)
    counts = per_channel_counts(names, channels)
    short = [(ch, int(c)) for ch, c in zip(channels, counts) if train.n <= c]
    if short:
        ch, c = short[0]
        raise DataError(f"{data.source}: column {ch!r}: {train.n} fitted row(s) for {c} parameter(s); need at least "
                        f"{c + 1} rows to estimate the noise (row {train.n + 1} missing)")
    return names, counts, one_frequency


def _start(data: StandData, train: StandData, names: list[str], rms: np.ndarray, f_ref: float,
           start_factor: float) -> tuple[Trainable, Nominal, dict[str, float]]:
    """``(trainable, nominal, units)``: ``start_factor`` times the closed
    form, ``k_f`` in log space, the signed terms in units of their data scale."""
    channels = train.channel_names
    ls0 = _closed_form(train, names, channels, rms, f_ref)
    if not ls0["k_f"] > 0:
        raise DataError(f"{data.source}: column 'fz_n': the measured lift does not grow with frequency "
                        f"(least-squares k_f = {ls0['k_f']:.3e} N/Hz^2); check the sign of the force axis")
    units = _training_units(train, names, channels, rms, f_ref)
    log = {"k_f": jnp.log(jnp.asarray(ls0["k_f"] * start_factor))}
    linear = {n: jnp.asarray(ls0[n] * start_factor / units[n]) for n in names if n != "k_f"}
    nominal = Nominal(values={"f_ref": jnp.asarray(float(f_ref)),
                              **{f"unit_{n}": jnp.asarray(u) for n, u in units.items()}})
    return Trainable(log=log, linear=linear), nominal, units


def _two_passes(trainable: Trainable, nominal: Nominal, inputs: StandInputs, targets: np.ndarray, rms: np.ndarray,
                dof: np.ndarray, max_steps: int):
    """L-BFGS pass 1 weighs the channels by their RMS, pass 2 by the residual
    noise of pass 1 (``sqrt(SSR / dof)``, at least 1e-9 of the RMS). Returns
    ``(first, second, sigma)``: both passes' results and the weights of the second."""
    loss, optimizer, step = _fit_program()
    eps = float(jnp.finfo(jnp.result_type(float)).eps)  # the loss settles at this resolution
    conv = Convergence(max_steps=max_steps, grad_tol=1e-9, rtol=max(1e-11, 10.0 * eps), patience=3)

    def run_pass(state, scale):
        done = () if state is None else state
        start = trainable if state is None else done[-1].trainable
        return done + (fit(loss, start, nominal, Measurements(inputs, jnp.asarray(targets), jnp.asarray(scale)),
                           optimizer=optimizer, convergence=conv, step_fn=step),)

    def sigma_of(state, scale):
        resid = targets - np.asarray(_predict_jit(state[-1].params, inputs))
        return np.maximum(residual_sigma(resid, dof=dof), 1e-9 * rms)

    passes = reweighted_passes(run_pass, sigma_of, rms, max_passes=2)
    first, second = passes.state
    return first, second, passes.scale


def _add_notes(fitted: StandFit, data: StandData, train: StandData, held: np.ndarray, holdout_every: int,
               one_frequency: bool) -> None:
    """The notes on the lift's explanation, held gains, hold-out, values far
    from the nominal robot and offsets; the held-out errors."""
    r2_fz = fitted.r2["fz_n"]
    if not r2_fz >= 0.5 and not one_frequency:  # NaN: fz_n does not vary at all (at one frequency: only noise)
        explained = "fz_n does not vary" if math.isnan(r2_fz) else \
            f"the model explains only R^2 = {r2_fz:.3f} of fz_n's variation"
        fitted.notes.append(f"{explained} across the table: check that column's unit (N) and sign; the values "
                            "and uncertainties above are not to be trusted until the lift is explained")
    fitted.held_values, fitted.not_identified, held_notes = held_gains(train, fitted.names)
    fitted.notes += held_notes
    if held.any():
        val = data.rows(held)
        sigma = np.array([fitted.sigma[ch] for ch in fitted.channels])
        fitted.validation = held_out_errors(fitted.predict(val), val.targets(), sigma, fitted.channels)
    else:
        fitted.notes.append(f"no hold-out: {data.n} rows (a hold-out needs at least {2 * holdout_every})")
    nominal = {"k_f": float({f.name: f.default for f in fields(CycleAveragedParams)}["lift_coefficient"]),
               **nominal_gains()}
    fitted.notes += far_from_nominal(fitted.values, nominal, units="forces in N, not mN or gram-force; moments in "
                                     "N m, not N mm; frequency in Hz, not rad/s or rpm")
    if one_frequency:
        fitted.notes.append(f"one frequency ({train.frequency[0]:g} Hz) in the fitted rows: k_f assumes a tared "
                            "sensor (no fz offset fitted) and the lift's growth with frequency is not checked; "
                            "measure at several frequencies")
    elif not any(n.endswith("_offset") for n in fitted.names):
        fitted.notes.append(f"sensor offsets not fitted ({train.n} fitted rows; they are from "
                            f"{MIN_ROWS_FOR_OFFSETS} on)")


def fit_stand(data: StandData, *, holdout_every: int = 5, offsets: bool | None = None,
              f_ref: float = REFERENCE_FREQUENCY, start_factor: float = 1.3, max_steps: int = 200) -> StandFit:
    """Fit the stand model to ``data`` (:mod:`.stand_prediction`).

    Args:
      data: the table.
      holdout_every: hold out every k-th row for validation (0: none; no
        hold-out either below ``2 k`` rows).
      offsets: fit the sensor offsets (default: when the fitted rows number
        at least :data:`~flapjax.identify.flapper.stand_prediction.MIN_ROWS_FOR_OFFSETS`).
      f_ref: reference frequency of lambda_f [Hz].
      start_factor: the gradient fit starts from this times the closed form
        (1.0: from it), so the result is the optimizer's, not the closed form's.
      max_steps: L-BFGS steps per pass.
    """
    held = holdout_rows(data.n, holdout_every)
    train = data.rows(~held)
    channels = train.channel_names
    names, counts, one_frequency = _terms(data, train, offsets, f_ref)
    targets = train.targets()
    rms = np.sqrt(np.mean(targets**2, axis=0))
    rms = np.where(rms > 0, rms, 1.0)
    trainable, nominal, units = _start(data, train, names, rms, f_ref, start_factor)
    inputs = StandInputs((jnp.asarray(train.frequency), jnp.asarray(train.plate), channels))
    first, second, sigma = _two_passes(trainable, nominal, inputs, targets, rms, np.maximum(train.n - counts, 1),
                                       max_steps)
    data_w = Measurements(inputs, jnp.asarray(targets), jnp.asarray(sigma))
    unc = gauss_newton_uncertainty(lambda t: _scaled_residuals(t, nominal, data_w), second.trainable)
    phys = physical_values({k: v for k, v in second.params.items() if k != "f_ref"})
    values = {n: float(phys[n]) for n in names}
    std = {n: float(np.asarray(unc.std[n])) * (1.0 if n == "k_f" else units[n]) for n in names}
    ls = _closed_form(train, names, channels, sigma, f_ref)
    fitted = StandFit(values=values, std=std, least_squares=ls, channels=channels,
                      sigma={ch: float(s) for ch, s in zip(channels, sigma)},
                      correlation=correlation_among(unc, names).tolist(),
                      names=names, fit_rows=np.nonzero(~held)[0], validation_rows=np.nonzero(held)[0],
                      validation={}, r2={}, loss=np.asarray(second.loss), converged=bool(second.converged),
                      reason=second.reason, steps=first.steps + second.steps, f_ref=float(f_ref))
    pred_train = fitted.predict(train)
    fitted.r2 = {ch: r_squared(targets[:, j], pred_train[:, j]) for j, ch in enumerate(channels)}
    _add_notes(fitted, data, train, held, holdout_every, one_frequency)
    return fitted
