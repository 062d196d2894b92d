"""Hover gains designed on the linear model with the plate's motion.

The averaged model's plate-motion terms (docs/physics.md, Decomposition of
the plate-step response) add to each axis of the linear hover model
(:mod:`flapjax.control.design`) the stroke plane's plate ``z``, which
follows the plate ``u`` with the lag ``tau_s`` (half a wingbeat), and two
input-rate terms: the body's rate carries the plate's inertial reaction
``-kappa z'`` (so the controller's rate feedback sees it) and the stroke
plane's damping pushes with ``-D_s z'``. Per axis, with ``w_H`` the rate the
body's angular momentum sets and ``w = w_H - kappa z'`` the one it turns at:

    theta' = w
    w_H'   = (k_c u - D w - D_s z' + c v) / I
    z'     = (u - z) / tau_s

The plate ``u`` reaches the plant through the model's lags (estimate,
plate servo or command low-pass, first order in series). Rate feedback then
closes a fast loop (rate gain -> plate -> reaction -> rate) which the
rigid-body LQR of :func:`flapjax.control.design.design_feedback` does not
see: its gains can make that loop ring. :func:`design_feedback_with_plate_motion`
keeps the controller's form (``u = -K s`` on the measured position,
velocity, tilt and rate) and minimizes the LQR cost of the whole loop over
``K`` (static output feedback: the cost from the Lyapunov equation of the
closed loop, Nelder-Mead from the rigid-body LQR gains).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg
import scipy.optimize

from flapjax.aero.cycle_averaged import STROKE_PLANE_LAG_WINGBEATS, CycleAveragedParams
from flapjax.control.design import LinearHoverModel, LqrWeights, axis_matrices, design_gains, feedback_from_gains, \
    gains_from_feedback, notch_delay
from flapjax.control.hover import HoverGains
from flapjax.validation import ConfigError, check_positive


@dataclasses.dataclass(frozen=True)
class PlateMotionTerms:
    """The plate-motion terms per axis of the linear model (x, y).

    Attributes:
      plate_reaction: (kappa of roll_joint, kappa of pitch_joint): the
        joints that tilt the body toward +x and +y [-].
      stroke_plane_damping: (D_s of roll_joint, D_s of pitch_joint) [N m s/rad].
      stroke_plane_lag: tau_s, the stroke plane's plate lag [s] (> 0).
    """

    plate_reaction: tuple[float, float] = (0.0, 0.0)
    stroke_plane_damping: tuple[float, float] = (0.0, 0.0)
    stroke_plane_lag: float = 0.012

    def __post_init__(self):
        check_positive("PlateMotionTerms.stroke_plane_lag", self.stroke_plane_lag)

    @classmethod
    def from_averaged(cls, params: CycleAveragedParams, frequency: float) -> PlateMotionTerms:
        """From the averaged model's (pitch_joint, roll_joint) terms at the
        flapping ``frequency`` [Hz]."""
        kappa, d_s = np.asarray(params.plate_reaction, float), np.asarray(params.stroke_plane_damping, float)
        return cls(plate_reaction=(float(kappa[1]), float(kappa[0])),
                   stroke_plane_damping=(float(d_s[1]), float(d_s[0])),
                   stroke_plane_lag=STROKE_PLANE_LAG_WINGBEATS / float(frequency))


def _lags(model: LinearHoverModel) -> list[float]:
    return [t for t in (model.estimate_lag, model.plate_lag) if t > 0]


def closed_loop_with_plate_motion(model: LinearHoverModel, terms: PlateMotionTerms, k: np.ndarray,
                                  axis: int) -> tuple[np.ndarray, np.ndarray]:
    """One axis's closed loop under ``u = -k[axis] s_measured``.

    State ``[position, velocity, tilt, w_H, lags..., z]`` (the plate ``u`` is
    the last lag's output). Returns ``A`` (n, n) and ``C`` (5, n), the rows
    that give the measured position, velocity, tilt, rate and the plate."""
    if axis not in (0, 1):
        raise ConfigError(f"axis: must be 0 (x) or 1 (y), got {axis!r}")
    a, b = axis_matrices(model, axis)
    lags = _lags(model)
    if not lags:
        raise ConfigError("model: the plate-motion loop needs a plate or estimate lag (plate_lag, estimate_lag > 0)")
    n, iu, iz = 5 + len(lags), 3 + len(lags), 4 + len(lags)
    eye = np.eye(n)
    kappa, d_s, tau = terms.plate_reaction[axis], terms.stroke_plane_damping[axis], terms.stroke_plane_lag
    z_rate = (eye[iu] - eye[iz]) / tau
    rate = eye[3] - kappa * z_rate
    c = np.stack([eye[0], eye[1], eye[2], rate, eye[iu]])
    acl = np.zeros((n, n))
    acl[0], acl[1] = eye[1], a[1, 1] * eye[1] + a[1, 2] * eye[2] + b[1, 0] * eye[iu]
    acl[2] = rate
    inertia = model.inertia[axis]
    acl[3] = (a[3, 1] * inertia * eye[1] - model.rate_damping[axis] * rate - d_s * z_rate) / inertia \
        + b[3, 0] * eye[iu]
    for j, t in enumerate(lags):
        source = -np.asarray(k, float)[axis] @ c[:4] if j == 0 else eye[3 + j]
        acl[4 + j] = (source - eye[4 + j]) / t
    acl[iz] = z_rate
    return acl, c


def _cost(model, terms, weights: LqrWeights, axis: int, gains: np.ndarray) -> float:
    """LQR cost of the closed loop from the Bryson-sized start excursions (inf when not stable)."""
    k = np.zeros((2, 4))
    k[axis] = gains
    acl, c = closed_loop_with_plate_motion(model, terms, k, axis)
    if np.max(np.linalg.eigvals(acl).real) > -0.05:
        return np.inf
    q = c.T @ np.diag([1 / weights.position**2, 1 / weights.velocity**2, 1 / weights.tilt**2, 1 / weights.rate**2,
                       1 / weights.plate**2]) @ c
    start = np.zeros(acl.shape[0])
    start[:4] = [weights.position**2, weights.velocity**2, weights.tilt**2, weights.rate**2]
    p = scipy.linalg.solve_continuous_lyapunov(acl.T, -q)
    return float(np.trace(p @ np.diag(start + 1e-12)))


def design_feedback_with_plate_motion(model: LinearHoverModel, terms: PlateMotionTerms, start: np.ndarray,
                                      weights: LqrWeights = LqrWeights()) -> np.ndarray:
    """(2, 4) feedback on the measured ``[position, velocity, tilt, rate]``
    minimizing the LQR cost of :func:`closed_loop_with_plate_motion`, from
    ``start`` (2, 4) (which must stabilize that loop, or the rigid-body LQR
    start is refused by name)."""
    k = np.array(start, dtype=float)
    for axis in (0, 1):
        if not np.isfinite(_cost(model, terms, weights, axis, k[axis])):
            raise ConfigError(f"start: the gains of axis {axis} do not stabilize the loop with the plate's motion")
        fit = scipy.optimize.minimize(lambda g, i=axis: _cost(model, terms, weights, i, g), k[axis],
                                      method="Nelder-Mead", options={"maxiter": 4000, "xatol": 1e-6, "fatol": 1e-9})
        k[axis] = fit.x
    return k


def _stabilizing(model: LinearHoverModel, terms: PlateMotionTerms, axis: int, gains: np.ndarray) -> np.ndarray:
    """Gains (4,) near ``gains`` that stabilize the axis's loop with the plate's
    motion: the closed loop's spectral abscissa minimized (Nelder-Mead). A
    large plate reaction on an anti-damped axis (D < 0) needs a much smaller
    rate gain than the rigid-body LQR's; the start is returned unchanged when
    none is found (then :func:`design_feedback_with_plate_motion` refuses it)."""
    def abscissa(g):
        k = np.zeros((2, 4))
        k[axis] = g
        return float(np.max(np.linalg.eigvals(closed_loop_with_plate_motion(model, terms, k, axis)[0]).real))

    fit = scipy.optimize.minimize(abscissa, gains, method="Nelder-Mead", options={"maxiter": 4000})
    return fit.x if fit.fun < -0.1 and fit.x[2] > 0 else gains


def design_gains_with_plate_motion(params: CycleAveragedParams, hover_frequency: float, *,
                                   base: HoverGains | None = None) -> HoverGains:
    """The designed gains of ``params`` (:func:`flapjax.control.design.design_gains`
    on :meth:`LinearHoverModel.from_averaged`), refined on the loop with its
    plate-motion terms, the cycle filter's delay and the command low-pass;
    the designed gains themselves when the terms are zero."""
    gains = design_gains(LinearHoverModel.from_averaged(params, frequency=hover_frequency),
                         hover_frequency=hover_frequency, base=base)
    terms = PlateMotionTerms.from_averaged(params, hover_frequency)
    if not any(terms.plate_reaction) and not any(terms.stroke_plane_damping):
        return gains
    model = LinearHoverModel.from_averaged(params, frequency=hover_frequency,
                                           estimate_lag=notch_delay(hover_frequency), plate_lag=gains.command_lag)
    start = feedback_from_gains(gains, model.gravity)
    for axis in (0, 1):  # the rigid-body design may not hold the loop with the plate's motion: start from a gentler one
        if not np.isfinite(_cost(model, terms, LqrWeights(), axis, start[axis])):
            start[axis] = start[axis] * np.array([0.3, 0.3, 0.6, 0.6])
        if not np.isfinite(_cost(model, terms, LqrWeights(), axis, start[axis])):
            start[axis] = _stabilizing(model, terms, axis, start[axis])
    k = design_feedback_with_plate_motion(model, terms, start)
    return gains_from_feedback(k, model.gravity, gains)
