"""Multiple shooting over a flight log: the segments, their initial states
(seeded from the log, corrected by the fit) and the compiled residuals and
Jacobians of the segments' rollouts.

The residuals and Jacobians are module-level compiled functions, so every
log of a size shares one compilation.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.math import euler_to_quat, quat_mul, rotvec_to_quat
from flapjax.sim.flapper.averaged_body import fly, measure, with_values
from flapjax.identify.flapper.flight_parameters import FLIGHT_PARAMETERS, decode

# Scales of a segment's initial-state corrections: position, velocity, attitude, rates.
_STATE_SCALE = np.concatenate([np.full(3, 1e-3), np.full(3, 0.1), np.full(3, 1e-2), np.full(3, 1.0)])


def logged_segments(logged: np.ndarray, n: int, length: int, min_length: int) -> tuple[np.ndarray, np.ndarray]:
    """Shooting segments over samples [0, n) of a log with dropped samples:
    ``(starts (m,), counted (m, length) bool)``. Segments of ``length``
    follow each other inside every run of logged samples; a run's last,
    shorter piece is kept when it has ``min_length`` samples, its segment
    reaching past the run with those samples not counted. A segment never
    counts a sample after a dropped one: the commands of a dropped sample
    are unknown, and samples before it do not depend on them. ``logged``
    must extend ``length - 1`` samples past ``n`` (or the last run must end
    ``length - 1`` before the end of ``logged``)."""
    ok = np.asarray(logged, dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], ok[:n].astype(np.int8), [0]])))
    starts, counts = [], []
    for a, b in edges.reshape(-1, 2):  # [a, b): a run of logged samples
        for s in range(a, b, length):
            k = min(length, b - s)
            if k >= min_length and s + length <= ok.size:
                starts.append(s)
                counts.append(k)
    counted = np.arange(length)[None, :] < np.asarray(counts, dtype=np.int64)[:, None]
    return np.asarray(starts, dtype=np.int64), counted.reshape(len(starts), length)


def seed_states(log: dict, starts: np.ndarray, dt: float) -> np.ndarray:
    """(m, 13) initial states from the log: pose at the start, velocity and
    body rates from a 5-sample central difference (one-sided at the ends)."""
    pos = np.stack([log["x_m"], log["y_m"], log["z_m"]], axis=1)
    eul = np.unwrap(np.stack([log["roll_rad"], log["pitch_rad"], log["yaw_rad"]], axis=1), axis=0)
    n = pos.shape[0]
    out = []
    for k in starts:
        lo, hi = max(k - 2, 0), min(k + 2, n - 1)
        v = (pos[hi] - pos[lo]) / ((hi - lo) * dt)
        e_dot = (eul[hi] - eul[lo]) / ((hi - lo) * dt)
        r, p, _ = eul[k]
        # body rates from ZYX Euler rates
        w = np.array([
            e_dot[0] - math.sin(p) * e_dot[2],
            math.cos(r) * e_dot[1] + math.sin(r) * math.cos(p) * e_dot[2],
            -math.sin(r) * e_dot[1] + math.cos(r) * math.cos(p) * e_dot[2],
        ])
        q = np.asarray(euler_to_quat(*eul[k]))
        out.append(np.concatenate([pos[k], v, q, w]))
    return np.asarray(out)


def _apply_state(seed, dz):
    """Initial state ``seed`` (13,) corrected by the normalized ``dz`` (12,)."""
    d = dz * jnp.asarray(_STATE_SCALE)
    q = quat_mul(seed[6:10], rotvec_to_quat(d[6:9]))
    return jnp.concatenate([seed[:3] + d[:3], seed[3:6] + d[3:6], q, seed[10:13] + d[9:12]])


def _wrap(a):
    return jnp.arctan2(jnp.sin(a), jnp.cos(a))


class Segments(eqx.Module):
    """Shooting segments of a log and what their residuals need (no batch axis
    beyond the segments')."""

    base: CycleAveragedParams
    inertia: jax.Array
    start: dict
    seeds: jax.Array  # (m, 13) initial-state guesses
    freq: jax.Array  # (m, S) [Hz]
    plate: jax.Array  # (m, S, 2) [rad]
    meas: jax.Array  # (m, S, 6)
    weight: jax.Array  # (m, S, 1): 1 where a sample counts (0: before a fitted window's end, or dropped)
    dt: float = eqx.field(static=True)
    substeps: int = eqx.field(static=True)


def _model(prob: Segments, g):
    values = decode(g, prob.start)
    return with_values(prob.base, values), jnp.stack([values["roll_offset"], values["pitch_offset"]])


def _one(prob: Segments, params, offset, seed, dz, f, p, mm, sig):
    """``(residuals (S, 6), predicted pose (S, 6))`` of one segment from its corrected start."""
    states = fly(params, prob.inertia, _apply_state(seed, dz), f, p, prob.dt, prob.substeps)
    pred = measure(states, offset)
    diff = mm - pred
    diff = diff.at[:, 3:].set(_wrap(diff[:, 3:]))
    return diff / sig, pred


def _all(prob: Segments, params, offset, dz, sig):
    """:func:`_one` of every segment, ``dz`` (12 m,) their state corrections."""
    m = prob.seeds.shape[0]
    return jax.vmap(lambda s, d, f, p, mm: _one(prob, params, offset, s, d, f, p, mm, sig))(
        prob.seeds, dz.reshape(m, 12), prob.freq, prob.plate, prob.meas)


@eqx.filter_jit
def fit_residuals(x, sig, prob: Segments):
    """Weighted residuals (flat) of every segment: ``x`` = the normalized
    parameters, then each segment's 12 state corrections; ``sig`` (6,)."""
    n_par = len(FLIGHT_PARAMETERS)
    params, offset = _model(prob, x[:n_par])
    return (_all(prob, params, offset, x[n_par:], sig)[0] * prob.weight).ravel()


@eqx.filter_jit
def fit_jacobian(x, sig, prob: Segments):
    """Jacobian of :func:`fit_residuals` with respect to ``x``."""
    # Block structure: a segment's residuals depend on the model parameters
    # and its own start only (n_par + 12 tangents per segment).
    n_par, m = len(FLIGHT_PARAMETERS), prob.seeds.shape[0]
    rows = prob.meas.shape[1] * 6

    def one(gz, seed, f, p, mm, w):
        params, offset = _model(prob, gz[:n_par])
        return (_one(prob, params, offset, seed, gz[n_par:], f, p, mm, sig)[0] * w).ravel()

    g, dz = x[:n_par], x[n_par:].reshape(m, 12)
    jac = jax.vmap(lambda d, s_, f, p, mm, w: jax.jacfwd(one)(jnp.concatenate([g, d]), s_, f, p, mm, w))(
        dz, prob.seeds, prob.freq, prob.plate, prob.meas, prob.weight)  # (m, rows, n_par + 12)
    full = jnp.zeros((m, rows, n_par + 12 * m), dtype=jac.dtype)
    full = full.at[:, :, :n_par].set(jac[:, :, :n_par])
    idx = jnp.arange(m)
    cols = n_par + 12 * idx[:, None] + jnp.arange(12)[None, :]
    full = full.at[idx[:, None, None], jnp.arange(rows)[None, :, None], cols[:, None, :]].set(jac[:, :, n_par:])
    return full.reshape(m * rows, n_par + 12 * m)


def _start_residuals_raw(dz, sig, prob: Segments, params, offset):
    return (_all(prob, params, offset, dz, sig)[0] * prob.weight).ravel()


#: Residuals and Jacobian in the segments' state corrections only (model fixed).
start_residuals = eqx.filter_jit(_start_residuals_raw)
start_jacobian = eqx.filter_jit(jax.jacfwd(_start_residuals_raw))


@eqx.filter_jit
def predict_segments(dz, sig, prob: Segments, params, offset):
    """(m, S, 6) predicted pose of every segment from its corrected start."""
    return _all(prob, params, offset, dz, sig)[1]
