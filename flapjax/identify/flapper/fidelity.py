"""Does the cycle-averaged model predict the free-flying per-wing robot?

A validation with power: short open-loop manoeuvres flown by both models
from the same start, compared on what a controller designer relies on.

Each manoeuvre is flown as a +/- pair (the input and its negative) and the
response is half their difference: the common drift of the start (the
per-wing robot's periodic start is not a cycle-mean equilibrium) cancels,
the linear response stays. Both models fly with every feedback gain at zero
(open loop) at the hover frequency ``f_h = sqrt(m g / k_f)``; the compared
signals are cycle means (a moving average over one wingbeat, both models
alike) of the body tilt [rad] and of its rate [rad/s].

Per manoeuvre, on the axis the per-wing robot moves most:

- NRMSE = RMS(per-wing - averaged) / RMS(per-wing) after the onset;
- peak ratio = averaged extreme / per-wing extreme (signed: a response of
  the wrong sign has a negative ratio);
- the sign of the first extreme after ``settle`` seconds;
- the peak time difference, against one wingbeat.

The per-wing robot's answer to a turning plate depends on the stroke
phase at which it turns; the averaged model stands for the mean over the
wingbeat, so each manoeuvre is flown at ``phases`` onsets spread over half a
wingbeat (the period of that dependence) and the responses are averaged
(:mod:`flapjax.sim.flapper.free_flights`).

A model passes a manoeuvre when NRMSE <= 0.3, 0.8 <= peak ratio <= 1.25,
the first extremes agree in sign and the peaks lie within one wingbeat. A
model that predicts nothing scores NRMSE 1 and peak ratio 0: it fails by
construction, and the score of that null model is reported beside each
model's.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.identify.flapper.calibration import calibration_values
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.free_flights import (
    DEFAULT_MANOEUVRES,
    Flights,
    Manoeuvre,
    ManoeuvreResponse,
    averaged_flights,
    check_free_flights,
    per_wing_flights,
)
from flapjax.validation import ConfigError, as_float_array, check_range


@dataclasses.dataclass(frozen=True)
class ResponseThresholds:
    """When a predicted response counts as the robot's.

    Attributes:
      max_nrmse: largest RMS error over the reference's RMS [-].
      peak_ratio: (low, high) admissible predicted / reference extreme [-].
      settle: time after the onset from which the first extreme is read [s].
      significance: a local extreme smaller than this fraction of the peak
        magnitude is a wiggle, not the first extreme [-].
    """

    max_nrmse: float = 0.3
    peak_ratio: tuple[float, float] = (0.8, 1.25)
    settle: float = 0.05
    significance: float = 0.1


@dataclasses.dataclass(frozen=True)
class ResponseScore:
    """A predicted response scored against the reference (:func:`response_score`).

    Attributes:
      nrmse: RMS(reference - prediction) / RMS(reference) after the onset [-]
        (inf for a reference of zero).
      peak_ratio: predicted extreme / reference extreme, signed [-].
      reference_peak, predicted_peak: the extremes, in the signal's unit.
      peak_time_error: |predicted - reference| time of the extreme [s].
      sign_agrees: the first extremes after ``settle`` have the same sign.
      passed: every threshold of :class:`ResponseThresholds` is met.
    """

    nrmse: float
    peak_ratio: float
    reference_peak: float
    predicted_peak: float
    peak_time_error: float
    sign_agrees: bool
    passed: bool


@dataclasses.dataclass(frozen=True)
class ManoeuvreScore:
    """One manoeuvre's scores (:func:`score_flights`).

    Attributes:
      signals: ``{signal name: score}`` of the compared signals
        (``tilt`` and ``tilt_rate`` on one axis, or ``altitude``).
      null_model: the same for a prediction of zero.
      healthy: both robots' flights stayed healthy.
      passed: healthy and every signal passed.
    """

    signals: dict[str, ResponseScore]
    null_model: dict[str, ResponseScore]
    healthy: bool
    passed: bool


@dataclasses.dataclass(frozen=True)
class FlightsScore:
    """A prediction's scores over a set of manoeuvres (:func:`score_flights`).

    Attributes:
      manoeuvres: ``{manoeuvre name: score}``, in the manoeuvres' order.
      passed: every manoeuvre passed.
      thresholds: the thresholds applied.
    """

    manoeuvres: dict[str, ManoeuvreScore]
    passed: bool
    thresholds: ResponseThresholds


def first_extreme(x: np.ndarray, *, significance: float = 0.1) -> float:
    """The first extreme of ``x`` (T,) that stands out: a running maximum
    (minimum) of magnitude at least ``significance`` times the largest
    magnitude, from which the signal then retreats by at least that much (a
    prominence, so the ripple of a cycle mean is not an extreme); the first
    sample counts as one when the signal falls (rises) away from it. The
    sample of largest magnitude when no extreme stands out (a signal that
    only grows). Returns the signed value."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        raise ConfigError("response: empty signal")
    floor = significance * float(np.max(np.abs(x)))
    hi = lo = 0
    for j in range(1, x.size):
        hi = j if x[j] > x[hi] else hi
        lo = j if x[j] < x[lo] else lo
        if x[hi] - x[j] >= floor and abs(x[hi]) >= floor and floor > 0:
            return float(x[hi])
        if x[j] - x[lo] >= floor and abs(x[lo]) >= floor and floor > 0:
            return float(x[lo])
    return float(x[int(np.argmax(np.abs(x)))])


def response_score(time: np.ndarray, reference: np.ndarray, prediction: np.ndarray, *, onset: float,
                   wingbeat: float, thresholds: ResponseThresholds = ResponseThresholds()) -> ResponseScore:
    """Score a predicted response against the reference one.

    Args:
      time: (T,) sample times [s].
      reference: (T,) the per-wing robot's cycle-mean response (any unit).
      prediction: (T,) the model's response on the same samples.
      onset: when the input starts [s]; only later samples count.
      wingbeat: one wingbeat period 1 / f_h [s], the peak-time tolerance.
    """
    time, reference, prediction = (np.asarray(a, dtype=float) for a in (time, reference, prediction))
    if not (time.shape == reference.shape == prediction.shape) or time.ndim != 1:
        raise ConfigError(f"response: time, reference and prediction must be equal-length vectors, got shapes "
                          f"{time.shape}, {reference.shape}, {prediction.shape}")
    after = time >= onset
    if after.sum() < 3:
        raise ConfigError(f"response: fewer than 3 samples after the onset {onset} s")
    t, r, p = time[after] - onset, reference[after], prediction[after]
    rms_ref = float(np.sqrt(np.mean(r**2)))
    nrmse = float(np.sqrt(np.mean((r - p) ** 2))) / rms_ref if rms_ref > 0 else math.inf
    i_r, i_p = int(np.argmax(np.abs(r))), int(np.argmax(np.abs(p)))
    ratio = float(p[i_p] / r[i_r]) if r[i_r] != 0 else math.inf
    late = t >= thresholds.settle
    if late.sum() < 3:
        late = np.ones_like(t, dtype=bool)
    s_r = np.sign(first_extreme(r[late], significance=thresholds.significance))
    s_p = np.sign(first_extreme(p[late], significance=thresholds.significance))
    peak_time_error = abs(float(t[i_p] - t[i_r]))
    lo, hi = thresholds.peak_ratio
    sign_agrees = bool(s_r != 0 and s_r == s_p)
    return ResponseScore(nrmse=nrmse, peak_ratio=ratio, reference_peak=float(r[i_r]), predicted_peak=float(p[i_p]),
                         peak_time_error=peak_time_error, sign_agrees=sign_agrees,
                         passed=bool(nrmse <= thresholds.max_nrmse and lo <= ratio <= hi and sign_agrees
                                     and peak_time_error <= wingbeat))


def _on_times(flights: Flights, name: str, time: np.ndarray) -> ManoeuvreResponse:
    """One manoeuvre's signals of ``flights`` on the sample times ``time``
    (linear interpolation when the two robots took different steps)."""
    row, own = flights.responses[name], np.asarray(flights.time)
    if own.shape == time.shape and np.allclose(own, time):
        return row
    interp = lambda x: np.stack([np.interp(time, own, c) for c in np.asarray(x).reshape(len(own), -1).T], -1  # noqa: E731
                                ).reshape((len(time),) + np.shape(x)[1:])
    return dataclasses.replace(row, tilt=interp(row.tilt), tilt_rate=interp(row.tilt_rate),
                               altitude=interp(row.altitude))


def score_flights(reference: Flights, prediction: Flights, manoeuvres: Sequence[Manoeuvre], *,
                  thresholds: ResponseThresholds = ResponseThresholds()) -> FlightsScore:
    """Score ``prediction`` against ``reference`` (both from
    :func:`fly_manoeuvres`) per manoeuvre, on the tilt axis (or altitude,
    for a frequency step) the reference moves most: the tilt and its rate.
    Each row carries the null model's score (a prediction of zero)."""
    rows = {}
    t, kw = reference.time, {"onset": reference.onset, "wingbeat": reference.wingbeat, "thresholds": thresholds}
    for m in manoeuvres:
        ref, pred = reference.responses[m.name], _on_times(prediction, m.name, t)
        if m.frequency_step and not any(m.plate):
            signals = {"altitude": (ref.altitude, pred.altitude)}
        else:
            axis = int(np.argmax(np.sqrt(np.mean(ref.tilt ** 2, axis=0))))
            signals = {"tilt": (ref.tilt[:, axis], pred.tilt[:, axis]),
                       "tilt_rate": (ref.tilt_rate[:, axis], pred.tilt_rate[:, axis])}
        row = {name: response_score(t, r, p, **kw) for name, (r, p) in signals.items()}
        null = {name: response_score(t, r, np.zeros_like(r), **kw) for name, (r, _) in signals.items()}
        healthy = bool(ref.healthy and pred.healthy)
        rows[m.name] = ManoeuvreScore(signals=row, null_model=null, healthy=healthy,
                                      passed=healthy and all(s.passed for s in row.values()))
    return FlightsScore(manoeuvres=rows, passed=all(r.passed for r in rows.values()), thresholds=thresholds)


def wrong_models(identified: CycleAveragedParams) -> dict[str, CycleAveragedParams]:
    """Deliberately wrong variants of ``identified`` a fidelity check must
    reject: speed couplings flipped, control moments halved and doubled,
    no rate damping, the seed's values at the identified ``k_f``, and no
    plate-motion terms (the seed's model structure)."""
    p = identified
    seed = CycleAveragedParams.flapsim()
    return {
        "L_v flipped": eqx.tree_at(lambda q: q.roll_speed_coupling, p, -p.roll_speed_coupling),
        "L_v and M_u flipped": eqx.tree_at(lambda q: (q.roll_speed_coupling, q.pitch_speed_coupling), p,
                                           (-p.roll_speed_coupling, -p.pitch_speed_coupling)),
        "control moments x0.5": eqx.tree_at(lambda q: (q.roll_gain, q.pitch_gain), p,
                                            (0.5 * p.roll_gain, 0.5 * p.pitch_gain)),
        "control moments x2": eqx.tree_at(lambda q: (q.roll_gain, q.pitch_gain), p, (2 * p.roll_gain, 2 * p.pitch_gain)),
        "D_w zero": eqx.tree_at(lambda q: q.rate_damping, p, jnp.zeros_like(p.rate_damping)),
        "seed values": eqx.tree_at(lambda q: q.lift_coefficient, seed, p.lift_coefficient),
        "plate motion off": eqx.tree_at(lambda q: (q.plate_reaction, q.stroke_plane_damping), p,
                                        (jnp.zeros(2), jnp.zeros(2))),
    }


def fidelity_table(identified: CycleAveragedParams, manoeuvres: Sequence[Manoeuvre] = DEFAULT_MANOEUVRES, *,
                   backend: str = "rigid", phases: int = 2) -> dict[str, FlightsScore]:
    """Score the identified model and each of :func:`wrong_models` against
    the per-wing free robot's open-loop responses (at ``phases`` onset
    phases); ``{model name: score}`` (see :func:`score_flights`)."""
    reference = per_wing_flights(identified, manoeuvres, backend=backend, phases=phases)
    models = {"identified": identified, **wrong_models(identified)}
    return {name: score_flights(reference, averaged_flights(m, manoeuvres), manoeuvres) for name, m in models.items()}


def check_fidelity_settings(s) -> None:
    """Check the ``[fidelity]`` settings (each error names the setting)."""
    amplitudes = as_float_array("fidelity.amplitudes", s["amplitudes"])
    if amplitudes.ndim != 1 or amplitudes.size == 0:
        raise ConfigError(f"fidelity.amplitudes: expected a non-empty list of plate steps [rad], got {s['amplitudes']!r}")
    for a in amplitudes:
        check_range("fidelity.amplitudes", a, 1e-6, 0.3)
    check_range("fidelity.frequency_step", s["frequency_step"], 0.0, 10.0)
    check_range("fidelity.gust", s["gust"], 0.0, 5.0)
    check_range("fidelity.height", s["height"], 0.0, 100.0)
    check_range("fidelity.onset", s["onset"], 0.0, 1.0)
    check_range("fidelity.horizon", s["horizon"], 0.06, 2.0)
    check_free_flights("fidelity", s)


def manoeuvres_for(s) -> tuple[Manoeuvre, ...]:
    """The manoeuvres of a ``[fidelity]`` config section: a plate step on
    each plate joint at each of ``amplitudes`` [rad], a frequency step of
    ``frequency_step`` [Hz] and a forward and a lateral gust of ``gust``
    [m/s] (none when 0)."""
    out = [Manoeuvre(f"{joint} step {a:g} rad", plate=(a, 0.0) if joint == "pitch_joint" else (0.0, a))
           for joint in ("pitch_joint", "roll_joint") for a in s["amplitudes"]]
    if float(s["frequency_step"]):
        out.append(Manoeuvre(f"frequency step {float(s['frequency_step']):g} Hz",
                             frequency_step=float(s["frequency_step"])))
    if float(s.get("gust", 0.0)):
        v = float(s["gust"])
        out += [Manoeuvre(f"forward gust {v:g} m/s", gust=(v, 0.0, 0.0)),
                Manoeuvre(f"lateral gust {v:g} m/s", gust=(0.0, v, 0.0))]
    return tuple(out)


def study_fidelity(cfg, identified: CycleAveragedParams, *, bar=None):
    """The open-loop fidelity score of ``identified`` against the free
    per-wing robot (``cfg["fidelity"]``: ``amplitudes``, ``frequency_step``,
    ``height``, ``onset``, ``horizon``, ``backend``), as a study result:
    metrics ``fidelity_passed`` and, per manoeuvre, each signal's score
    beside the null model's; data: the paired cycle-mean responses."""
    s, t0 = cfg["fidelity"], time.perf_counter()
    mass, g = fl.robot_weight()
    model = eqx.tree_at(lambda p: (p.mass, p.gravity), identified, (jnp.asarray(mass), jnp.asarray(g)))
    manoeuvres = manoeuvres_for(s)
    kw = dict(height=float(s["height"]), onset=float(s["onset"]), horizon=float(s["horizon"]))
    if bar is not None:
        bar.set_postfix_str("per-wing open-loop pairs")
    reference = per_wing_flights(model, manoeuvres, backend=s["backend"], timestep=float(s["timestep"]),
                                 phases=int(s["phases"]), calibration=calibration_values(cfg), **kw)
    prediction = averaged_flights(model, manoeuvres, timestep=float(s["timestep"]), **kw)
    score = dataclasses.asdict(score_flights(reference, prediction, manoeuvres))  # as results.json records it
    data = {"time": reference.time}
    for k, m in enumerate(manoeuvres):
        for signal in ("tilt", "altitude"):
            data[f"per_wing_{signal}_{k}"] = getattr(reference.responses[m.name], signal)
            data[f"averaged_{signal}_{k}"] = getattr(prediction.responses[m.name], signal)
    return StudyResult(
        name="fidelity", values={}, std={}, loss=jnp.zeros((0,)), data=data,
        metrics={"fidelity_passed": score["passed"], "thresholds": score["thresholds"],
                 "manoeuvres": score["manoeuvres"], "labels": [m.name for m in manoeuvres]},
        notes=f"the per-wing robot on the {s['backend']} backend; "
        "open loop (every gain zero) at f_h = sqrt(m g / k_f) of the identified model; each manoeuvre a "
        "+/- pair, half the difference compared as cycle means from the onset; pass when NRMSE <= "
        f"{score['thresholds']['max_nrmse']}, peak ratio in {tuple(score['thresholds']['peak_ratio'])}, the same "
        "sign and the peak within one wingbeat; the null model (a prediction of zero) is scored beside each",
        converged=all(r["healthy"] for r in score["manoeuvres"].values()),
        seconds=time.perf_counter() - t0,
    )
