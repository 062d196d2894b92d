"""Identify the averaged model's plate-motion terms from free flight
(docs/physics.md, Decomposition of the plate-step response and of the
lateral-gust response).

The per-wing free robot flies open-loop plate *pulses* (``amplitude`` [rad]
for ``pulse_wingbeats`` wingbeats on each plate joint, +/- pairs, each
started at ``phases`` stroke phases) and, with ``gust`` > 0, a lateral and a
forward gust pulse (``gust`` [m/s] for ``gust_wingbeats``); the averaged
model, the values identified upstream held, flies the same pulses, and
Levenberg-Marquardt (forward-mode Jacobian through its rollout) fits the
plate reaction ``kappa`` (2,) [-], the flapping damping about body x and y
[N m s/rad] on the stroke plane's rate (both ``D_w`` (x, y) and ``D_s``)
and, with gusts, ``L_v``, ``M_u`` and the airspeed-rate coupling ``A_v``
(2,) [N m s^2/m], with Gauss-Newton standard deviations; these replace the
damping study's. The fidelity check's steps stay held out.
"""

from __future__ import annotations

import time
from typing import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.control.design import LinearHoverModel, design_gains
from flapjax.identify.flapper.calibration import calibration_values
from flapjax.identify.levenberg_marquardt import levenberg_marquardt
from flapjax.identify.results import StudyResult
from flapjax.identify.solve import gauss_newton_covariance, std_and_correlation
from flapjax.sim import flapper as fl
from flapjax.sim.flapper import free_flights as ff
from flapjax.validation import ConfigError, check_range

#: Scale of D_s in the solver's unknowns [N m s/rad] (so all are O(1)).
D_S_SCALE = 1e-5
#: Scale of L_v and M_u in the solver's unknowns [N m s/m].
COUPLING_SCALE = 1e-4
#: Scale of the airspeed-rate coupling A in the solver's unknowns [N m s^2/m].
RATE_SCALE = 1e-6


def pulses(s: Mapping, hover_frequency: float) -> tuple[ff.Manoeuvre, ...]:
    """One plate pulse per plate joint: ``amplitude`` [rad] for
    ``pulse_wingbeats`` wingbeats at ``hover_frequency`` [Hz] (a whole
    number of half wingbeats, so that it ends at the stroke phase it
    started at and the phase average treats both ends alike); with
    ``gust`` > 0 also a lateral and a forward gust pulse of ``gust`` [m/s]
    for ``gust_wingbeats`` wingbeats."""
    a, length = float(s["amplitude"]), float(s["pulse_wingbeats"]) / hover_frequency
    out = (ff.Manoeuvre(f"pitch_joint pulse {a:g} rad", plate=(a, 0.0), length=length),
           ff.Manoeuvre(f"roll_joint pulse {a:g} rad", plate=(0.0, a), length=length))
    v = float(s.get("gust", 0.0))
    if v:
        gust_length = float(s["gust_wingbeats"]) / hover_frequency
        out += (ff.Manoeuvre(f"lateral gust pulse {v:g} m/s", gust=(0.0, v, 0.0), length=gust_length),
                ff.Manoeuvre(f"forward gust pulse {v:g} m/s", gust=(v, 0.0, 0.0), length=gust_length))
    return out


def _with(model: CycleAveragedParams, x) -> CycleAveragedParams:
    """``model`` with ``kappa = x[:2]`` and the flapping damping about x and y
    ``x[2:4] * D_S_SCALE`` acting on the stroke plane's rate: on the body's
    rate (``D_w``) and on the plate joints' (``D_s``) alike; with six
    unknowns also ``L_v, M_u = x[4:6] * COUPLING_SCALE`` and the airspeed-rate
    coupling ``A = x[6:8] * RATE_SCALE`` (:mod:`flapjax.sim.flapper.airspeed_rate`)."""
    d = x[2:4] * D_S_SCALE
    rate_damping = jnp.concatenate([d, jnp.asarray(model.rate_damping)[2:]])
    model = eqx.tree_at(lambda p: (p.plate_reaction, p.stroke_plane_damping, p.rate_damping), model,
                        (x[:2], d, rate_damping))
    if x.shape[0] == 4:
        return model
    return eqx.tree_at(lambda p: (p.roll_speed_coupling, p.pitch_speed_coupling, p.airspeed_rate_coupling), model,
                       (x[4] * COUPLING_SCALE, x[5] * COUPLING_SCALE, x[6:8] * RATE_SCALE))


def check_plate_motion_settings(s: Mapping) -> None:
    """Check the ``[plate_motion]`` settings (each error names the setting)."""
    check_range("plate_motion.amplitude", s["amplitude"], 1e-6, 0.3)
    check_range("plate_motion.horizon", s["horizon"], 0.06, 2.0)
    check_range("plate_motion.pulse_wingbeats", s["pulse_wingbeats"], 0.5, 20.0)
    if float(2 * s["pulse_wingbeats"]) != round(2 * float(s["pulse_wingbeats"])):
        raise ConfigError(f"plate_motion.pulse_wingbeats: must be a whole number of half wingbeats, got "
                          f"{s['pulse_wingbeats']!r}")
    check_range("plate_motion.height", s["height"], 0.0, 100.0)
    check_range("plate_motion.onset", s["onset"], 0.0, 1.0)
    check_range("plate_motion.gust", s.get("gust", 0.0), 0.0, 5.0)
    if float(s.get("closed_loop_horizon", 0.0)):
        check_range("plate_motion.closed_loop_horizon", s["closed_loop_horizon"], 0.06, 2.0)
        check_range("plate_motion.closed_loop_onset", s["closed_loop_onset"], 0.06, 1.0)  # after the filter settles
    if float(s.get("gust", 0.0)):
        check_range("plate_motion.gust_wingbeats", s["gust_wingbeats"], 0.5, 20.0)
    ff.check_free_flights("plate_motion", s)


def _measured(model: CycleAveragedParams, s: Mapping, f_h: float, kw: dict, gains=None):
    """The pulses, the per-wing robot's paired flights under ``gains`` (None:
    open loop) and their tilts (M, T, 2) [rad]."""
    manoeuvres = pulses(s, f_h)
    ref = ff.per_wing_flights(model, manoeuvres, backend=s["backend"], timestep=float(s["timestep"]),
                              phases=int(s["phases"]), gains=gains, calibration=s.get("calibration"), **kw)
    return manoeuvres, ref, np.stack([ref.responses[m.name].tilt for m in manoeuvres])


def closed_loop_gains(model: CycleAveragedParams, hover_frequency: float):
    """The controller of the closed-loop pulses: the gains designed on the
    upstream model (no plate-motion terms; :func:`flapjax.control.design.design_gains`),
    which the per-wing robot flies well."""
    return design_gains(LinearHoverModel.from_averaged(model, frequency=hover_frequency),
                        hover_frequency=hover_frequency)


def _data_sets(model: CycleAveragedParams, s: Mapping, f_h: float) -> list[dict]:
    """The open-loop set and (with ``closed_loop_horizon`` > 0) the
    closed-loop one: manoeuvres, flight settings, gains (None: open loop),
    the measured tilts, the samples after the onset and each manoeuvre's scale."""
    kw = dict(height=float(s["height"]), onset=float(s["onset"]), horizon=float(s["horizon"]))
    sets = [(None, kw, *_measured(model, s, f_h, kw))]
    if float(s.get("closed_loop_horizon", 0.0)):
        gains = closed_loop_gains(model, f_h)
        kw_cl = dict(kw, onset=float(s["closed_loop_onset"]), horizon=float(s["closed_loop_horizon"]))
        sets.append((gains, kw_cl, *_measured(model, {**s, "gust": 0.0}, f_h, kw_cl, gains)))
    out = []
    for gains, k, manoeuvres, ref, measured in sets:
        after = ref.time >= k["onset"]
        # each manoeuvre weighs alike: a gust tilts the robot far less than a plate pulse
        scale = np.sqrt(np.mean(measured[:, after] ** 2, axis=(1, 2)))[:, None, None]
        out.append(dict(gains=gains, kw=k, manoeuvres=manoeuvres, time=ref.time, measured=measured, after=after,
                        scale=scale))
    return out


def study_plate_motion(cfg: Mapping, identified: CycleAveragedParams, *, bar=None,
                       rate_damping_std=None) -> StudyResult:
    """Fit ``kappa``, the damping and (with gusts) ``L_v``, ``M_u`` (see the
    module docstring) with the settings ``cfg["plate_motion"]``:
    ``amplitude`` [rad], ``pulse_wingbeats``, ``gust`` [m/s],
    ``gust_wingbeats``, ``onset``, ``horizon`` [s], ``closed_loop_onset``,
    ``closed_loop_horizon`` [s], ``height`` [m], ``timestep`` [s],
    ``phases``, ``backend``."""
    s, t0 = cfg["plate_motion"], time.perf_counter()
    mass, g = fl.robot_weight()
    model = eqx.tree_at(lambda p: (p.mass, p.gravity), identified, (jnp.asarray(mass), jnp.asarray(g)))
    f_h = float(jnp.sqrt(model.mass * model.gravity / model.lift_coefficient))
    if bar is not None:
        bar.set_postfix_str("per-wing plate pulses")
    sets = _data_sets(model, {**s, "calibration": calibration_values(cfg)}, f_h)  # the per-wing robot's
    robot = fl.make_robot("lumped", "averaged", backend="rigid", timestep=float(s["timestep"]))
    params = fl.default_params(robot, frequency=f_h, averaged=model)

    def fly(m: CycleAveragedParams, d: dict):
        p = eqx.tree_at(lambda q: q.averaged, params, m)
        return ff.fly_paired(robot, p, d["manoeuvres"], hover_frequency=f_h, gravity=float(g),
                             phases=int(s["phases"]), gains=d["gains"], **d["kw"]).tilt

    @jax.jit
    def residual(x):
        m = _with(model, x)
        return jnp.concatenate([((fly(m, d) - d["measured"])[:, d["after"]] / d["scale"]).reshape(-1) for d in sets])

    jacobian = jax.jit(jax.jacfwd(residual))
    if bar is not None:
        bar.set_postfix_str("Gauss-Newton through the averaged model")
    start = jnp.concatenate([jnp.zeros(2), jnp.asarray(model.rate_damping)[:2] / D_S_SCALE])
    if float(s.get("gust", 0.0)):
        start = jnp.concatenate([start, jnp.stack([model.roll_speed_coupling, model.pitch_speed_coupling])
                                 / COUPLING_SCALE, jnp.asarray(model.airspeed_rate_coupling) / RATE_SCALE])
    fit = levenberg_marquardt(residual, jacobian, start, max_iterations=20, cost_tol=1e-8)
    upstream = eqx.tree_at(lambda p: (p.plate_reaction, p.stroke_plane_damping), model, (jnp.zeros(2), jnp.zeros(2)))
    null_rms = float(np.sqrt(np.mean(np.concatenate([(((np.asarray(fly(upstream, d)) - d["measured"]) / d["scale"])
                                                       [:, d["after"]]).reshape(-1) for d in sets]) ** 2)))
    fitted, data = _with(model, fit.x), {}
    for d, prefix in zip(sets, ("", "closed_loop_")):
        data[f"{prefix}time"], predicted = d["time"], np.asarray(fly(fitted, d))
        for k in range(len(d["manoeuvres"])):
            data[f"{prefix}per_wing_tilt_{k}"], data[f"{prefix}model_tilt_{k}"] = d["measured"][k], predicted[k]
    labels = [("closed loop: " if d["gains"] is not None else "") + m.name for d in sets for m in d["manoeuvres"]]
    return _result(s, model, fit, labels, data, null_rms, rate_damping_std, time.perf_counter() - t0)


def _result(s: Mapping, model: CycleAveragedParams, fit, labels: list[str], data: dict, null_rms: float,
            rate_damping_std, seconds: float) -> StudyResult:
    """The study's result: the values with their Gauss-Newton standard deviations."""
    x, r = np.asarray(fit.x), np.asarray(fit.residual)
    cov, _ = gauss_newton_covariance(r, np.asarray(fit.jacobian))
    std, corr = std_and_correlation(cov)
    z_std = np.full(1, np.nan) if rate_damping_std is None else np.asarray(rate_damping_std)[2:]
    values = {"kappa": jnp.asarray(x[:2]), "D_s": jnp.asarray(x[2:4] * D_S_SCALE),
              "D_w": jnp.concatenate([jnp.asarray(x[2:4] * D_S_SCALE), jnp.asarray(model.rate_damping)[2:]])}
    stds = {"kappa": jnp.asarray(std[:2]), "D_s": jnp.asarray(std[2:4] * D_S_SCALE),
            "D_w": jnp.concatenate([jnp.asarray(std[2:4] * D_S_SCALE), jnp.asarray(z_std)])}
    gusts = ""
    if x.shape[0] == 8:
        values.update(L_v=jnp.asarray(x[4] * COUPLING_SCALE), M_u=jnp.asarray(x[5] * COUPLING_SCALE),
                      A_v=jnp.asarray(x[6:8] * RATE_SCALE))
        stds.update(L_v=jnp.asarray(std[4] * COUPLING_SCALE), M_u=jnp.asarray(std[5] * COUPLING_SCALE),
                    A_v=jnp.asarray(std[6:8] * RATE_SCALE))
        gusts = (f" and a lateral and a forward gust pulse of {float(s['gust']):g} m/s for "
                 f"{float(s['gust_wingbeats']):g} wingbeats (L_v, M_u and the airspeed-rate coupling A_v fitted from them)")
    return StudyResult(
        name="plate_motion", values=values, std=stds, loss=jnp.asarray(fit.history), data=data,
        metrics={"rms_relative": float(np.sqrt(np.mean(r**2))), "rms_relative_without_terms": null_rms,
                 "correlation": corr, "iterations": fit.iterations, "stopped": fit.reason,
                 "labels": labels},
        notes=f"open-loop plate pulses of {float(s['amplitude']):g} rad for {float(s['pulse_wingbeats']):g} "
        f"wingbeats on each plate joint{gusts} at {int(s['phases'])} stroke phases, +/- pairs, per-wing free robot "
        f"at dt {float(s['timestep']):g} s; cycle-mean tilt (per manoeuvre relative to its RMS) fitted by the "
        "averaged model with the upstream values held; kappa and D_s are (x, y): pitch_joint, roll_joint"
        + (f"; the plate pulses also flown closed loop (gains designed on the upstream model) from "
           f"{float(s['closed_loop_onset']):g} s for {float(s['closed_loop_horizon']):g} s"
           if float(s.get("closed_loop_horizon", 0.0)) else ""),
        converged=not fit.reason.startswith("max_iterations"),
        seconds=seconds,
    )
