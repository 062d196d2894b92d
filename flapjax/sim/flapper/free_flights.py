"""Open-loop manoeuvres flown by the free per-wing robot and by the averaged model.

Each manoeuvre (a plate step or pulse, a flapping-frequency step, a gust) is
flown open loop (every feedback gain zero) as a +/- pair from the periodic
start, optionally at several stroke phases of its onset; the response is
half the pair's difference of cycle means (a moving average over one
wingbeat), aligned at the onset and averaged over the phases. The common
drift of the start cancels, the linear response stays.
:func:`fly_paired` gives the paired responses as JAX arrays (differentiable
in the parameters, :class:`PairedResponses`), :func:`fly_manoeuvres` as
NumPy arrays per manoeuvre (:class:`Flights`). Used by the fidelity check
and the plate-motion fit of ``flapjax.identify``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple, Sequence

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.control.hover import HoverGains
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.stand import calibrate
from flapjax.validation import ConfigError, check_choice, check_int, check_range

RECORD_EVERY = 5  # steps between recorded samples
#: Step of the free per-wing reference flights [s]. At the robot's default
#: 1e-4 s the stiff feathering stop (dt sqrt(k_s / J) = 0.66) makes the
#: open-loop +/- pairs depend on the step and on the input's size; at 5e-5 s
#: they are linear (docs/physics.md, Open-loop fidelity score).
FREE_FLIGHT_TIMESTEP = 5e-5


@dataclasses.dataclass(frozen=True)
class Manoeuvre:
    """One open-loop +/- pair.

    Attributes:
      name: label in reports.
      plate: (2,) plate-command offset of (pitch_joint, roll_joint) [rad]
        from the onset for ``length`` seconds; zero for none.
      length: how long the plate offset and the gust are held [s]
        (default: to the end, a step; finite: a pulse).
      frequency_step: flapping-frequency offset held from the onset [Hz].
      gust: (3,) wind velocity from the onset, world frame [m/s]: the
        body moves through the air as if pushed, which exercises the
        speed couplings (L_v, M_u) and the drag k_v.
    """

    name: str
    plate: tuple[float, float] = (0.0, 0.0)
    length: float = math.inf
    frequency_step: float = 0.0
    gust: tuple[float, float, float] = (0.0, 0.0, 0.0)


DEFAULT_MANOEUVRES: tuple[Manoeuvre, ...] = (
    Manoeuvre("pitch_joint step 0.02 rad", plate=(0.02, 0.0)),
    Manoeuvre("pitch_joint step 0.05 rad", plate=(0.05, 0.0)),
    Manoeuvre("roll_joint step 0.02 rad", plate=(0.0, 0.02)),
    Manoeuvre("roll_joint step 0.05 rad", plate=(0.0, 0.05)),
)


class PairedResponses(NamedTuple):
    """The paired responses of M manoeuvres (JAX arrays, differentiable in
    the robot's parameters): cycle means of half the +/- difference,
    aligned at the onset and averaged over the onset phases.

    Attributes:
      time: (T,) sample times, the centres of the one-wingbeat windows [s].
      tilt: (M, T, 2) body tilt (about world x, y) [rad].
      altitude: (M, T) body height [m].
      healthy: (M,) every world of the manoeuvre stayed healthy.
    """

    time: np.ndarray
    tilt: jax.Array
    altitude: jax.Array
    healthy: jax.Array


@dataclasses.dataclass(frozen=True)
class ManoeuvreResponse:
    """One manoeuvre's paired response (NumPy).

    Attributes:
      tilt: (T, 2) body tilt (about world x, y) [rad].
      tilt_rate: (T, 2) its time derivative [rad/s].
      altitude: (T,) body height [m].
      healthy: every world of the manoeuvre stayed healthy.
    """

    tilt: np.ndarray
    tilt_rate: np.ndarray
    altitude: np.ndarray
    healthy: bool


@dataclasses.dataclass(frozen=True)
class Flights:
    """The paired responses of a set of manoeuvres on common sample times.

    Attributes:
      time: (T,) sample times [s].
      wingbeat: one wingbeat at the hover frequency, 1 / f_h [s].
      onset: when the inputs start [s].
      responses: ``{manoeuvre name: response}``, in the manoeuvres' order.
    """

    time: np.ndarray
    wingbeat: float
    onset: float
    responses: dict[str, ManoeuvreResponse]


def open_loop_gains() -> HoverGains:
    """Every feedback gain zero: the command is the hover frequency (with
    its tilt feed-forward) plus the manoeuvre's offsets."""
    zero = 0.0
    return HoverGains(altitude_p=zero, altitude_i=zero, altitude_d=zero, position_p=zero, position_d=zero,
                      attitude_p=zero, attitude_d=zero)


def cycle_mean(x, width: int):
    """Centred moving average over ``width`` samples along axis 1 of
    ``x`` (worlds, T, ...); 'valid' part only, so (worlds, T - width + 1, ...)
    (JAX, differentiable)."""
    x = jnp.asarray(x)
    c = jnp.cumsum(jnp.concatenate([jnp.zeros_like(x[:, :1]), x], axis=1), axis=1)
    return (c[:, width:] - c[:, :-width]) / width


@eqx.filter_jit
def _fly_worlds(robot, params, gains, hover_frequency, gravity, target, plates, frequency_steps, gusts, onsets,
                lengths, n_steps):
    """Every world of a set of manoeuvres under ``gains`` (open loop when all
    are zero) from the periodic start (per world: plate offset, frequency
    offset, gust, onset, pulse length)."""
    times = jnp.arange(n_steps) * robot.dt
    # a cycle-mean estimate starts from the cycle means the start asks for (at rest, level)
    prior = fl.BasePose(position=target, velocity=jnp.zeros(3, target.dtype), rot_world_body=jnp.eye(3, dtype=target.dtype),
                        w_body=jnp.zeros(3, target.dtype)) if gains.cycle_filter else None

    def one(plate, df, gust, onset, length):
        state = fl.init_state(robot, params, position=target, periodic=True)
        step = fl.PlateStep(offset=plate, start=onset, length=length)
        wind = ((times >= onset) & (times < onset + length)).astype(gust.dtype)[:, None] * gust
        _, rec = fl.hover_rollout(robot, params, state, n_steps, gains=gains, target=target,
                                  record_every=RECORD_EVERY, checkpoint=False,
                                  hover_frequency=hover_frequency + df, gravity=gravity, plate_step=step,
                                  record="first", wind=wind, prior=prior)
        return rec
    return jax.vmap(one)(plates, frequency_steps, gusts, onsets, lengths)


def phase_shifts(hover_frequency: float, dt_record: float, phases: int) -> np.ndarray:
    """(phases,) record-sample offsets of the onsets, spread evenly over half
    a wingbeat ``1 / (2 hover_frequency)``: the stroke at hover is
    symmetric fore and aft (``psi(t + T/2) = -psi(t)``), so the robot's
    answer to an input repeats every half wingbeat (measured: onsets half a
    wingbeat apart give the same plate-step response to 2 %, a quarter
    apart a different one; docs/physics.md)."""
    if isinstance(phases, bool) or int(phases) != phases or int(phases) < 1:
        raise ConfigError(f"phases: must be a positive integer, got {phases!r}")
    return np.array([int(round(k / (2 * phases * hover_frequency * dt_record))) for k in range(int(phases))])


def paired_response(x, width: int, shifts: np.ndarray, n_manoeuvres: int):
    """Half the +/- difference of cycle means, aligned at each onset and
    averaged over the onset phases (NumPy or JAX, differentiable).

    Args:
      x: (W, T, ...) recorded signal of the worlds ordered (manoeuvre,
        phase, sign), W = n_manoeuvres * len(shifts) * 2.
      width: moving-average window, one wingbeat [samples].
      shifts: (P,) each phase's onset offset [samples].
    Returns: (n_manoeuvres, T - width + 1 - max(shifts), ...).
    """
    chex.assert_axis_dimension(x, 0, n_manoeuvres * len(shifts) * 2)
    mean = cycle_mean(x, width)
    mean = mean.reshape((n_manoeuvres, len(shifts), 2) + mean.shape[1:])
    n_keep = mean.shape[3] - int(max(shifts))
    aligned = jnp.stack([mean[:, k, :, int(sh):int(sh) + n_keep] for k, sh in enumerate(shifts)], axis=1)
    return 0.5 * (aligned[:, :, 0] - aligned[:, :, 1]).mean(axis=1)


def fly_paired(robot: fl.FlapperRobot, params: fl.FlapperParams, manoeuvres: Sequence[Manoeuvre], *,
               hover_frequency: float, gravity, height: float = 0.5, onset: float = 0.02, horizon: float = 0.15,
               phases: int = 1, gains: HoverGains | None = None) -> PairedResponses:
    """The paired responses of :func:`fly_manoeuvres` as JAX arrays
    (differentiable in ``params``). ``gains``: the hover controller both
    signs fly (default :func:`open_loop_gains`)."""
    dt_record = robot.dt * RECORD_EVERY
    shifts = phase_shifts(hover_frequency, dt_record, phases)
    width = max(1, int(round(1.0 / (hover_frequency * dt_record))))
    signs, n_phases = np.array([1.0, -1.0]), len(shifts)
    per_world = lambda v: np.repeat(np.asarray(v, dtype=float), 2 * n_phases, axis=0)  # noqa: E731
    sign = np.tile(signs, len(manoeuvres) * n_phases)
    plates = per_world([m.plate for m in manoeuvres]) * sign[:, None]
    dfs = per_world([m.frequency_step for m in manoeuvres]) * sign
    gusts = per_world([m.gust for m in manoeuvres]) * sign[:, None]
    lengths = per_world([min(m.length, 1e9) for m in manoeuvres])
    onsets = np.tile(np.repeat(onset + shifts * dt_record, 2), len(manoeuvres))
    n_steps = int(round((onset + shifts[-1] * dt_record + horizon) / robot.dt)) // RECORD_EVERY * RECORD_EVERY
    rec = _fly_worlds(robot, params, open_loop_gains() if gains is None else gains, jnp.asarray(hover_frequency), jnp.asarray(gravity),
                      jnp.array([0.0, 0.0, height]), jnp.asarray(plates), jnp.asarray(dfs), jnp.asarray(gusts),
                      jnp.asarray(onsets), jnp.asarray(lengths), n_steps)
    tilt = paired_response(rec.tilt, width, shifts, len(manoeuvres))
    return PairedResponses(time=(np.arange(tilt.shape[1]) + 0.5 * (width - 1)) * dt_record, tilt=tilt,
                           altitude=paired_response(rec.position[..., 2], width, shifts, len(manoeuvres)),
                           healthy=rec.healthy.reshape(len(manoeuvres), -1).all(axis=1))


def fly_manoeuvres(robot: fl.FlapperRobot, params: fl.FlapperParams, manoeuvres: Sequence[Manoeuvre], *,
                   hover_frequency: float, gravity: float, height: float = 0.5, onset: float = 0.02,
                   horizon: float = 0.15, phases: int = 1, gains: HoverGains | None = None) -> Flights:
    """Fly each manoeuvre as a +/- pair, open loop, starting at ``phases``
    stroke phases (:func:`phase_shifts`), and return the paired responses:
    cycle means of half the difference of the pair, aligned at the onset
    and averaged over the phases."""
    paired = jax.tree.map(np.asarray, fly_paired(robot, params, manoeuvres, hover_frequency=hover_frequency,
                                                 gravity=gravity, height=height, onset=onset, horizon=horizon,
                                                 phases=phases, gains=gains))
    dt_record = robot.dt * RECORD_EVERY
    responses = {m.name: ManoeuvreResponse(tilt=paired.tilt[i],
                                           tilt_rate=np.gradient(paired.tilt[i], dt_record, axis=0),
                                           altitude=paired.altitude[i], healthy=bool(paired.healthy[i]))
                 for i, m in enumerate(manoeuvres)}
    return Flights(time=paired.time, wingbeat=1.0 / hover_frequency, onset=onset, responses=responses)


def averaged_flights(averaged: CycleAveragedParams, manoeuvres: Sequence[Manoeuvre], *,
                     timestep: float = FREE_FLIGHT_TIMESTEP, **kwargs) -> Flights:
    """:func:`fly_manoeuvres` for the lumped robot flying ``averaged``, at
    ``timestep`` [s] (the reference's, so both share their sample times);
    it flies one stroke phase: the averaged model has none."""
    robot = fl.make_robot("lumped", "averaged", backend="rigid", timestep=timestep)
    f_h = float(averaged.hover_frequency)
    params = fl.default_params(robot, frequency=f_h, averaged=averaged)
    return fly_manoeuvres(robot, params, manoeuvres, hover_frequency=f_h, gravity=float(averaged.gravity), **kwargs)


def per_wing_flights(averaged: CycleAveragedParams, manoeuvres: Sequence[Manoeuvre], *, backend: str = "rigid",
                     timestep: float = FREE_FLIGHT_TIMESTEP, calibration=None, **kwargs) -> Flights:
    """:func:`fly_manoeuvres` for the free per-wing robot at ``timestep``
    [s], at the hover frequency of ``averaged`` (the model under test sets
    the operating point; the robot's own physics answers), with the
    ``calibration`` values (:func:`flapjax.sim.flapper.stand.calibrate`; None: nominal)."""
    robot = fl.make_robot("free", "wing", backend=backend, timestep=timestep)
    f_h = float(averaged.hover_frequency)
    robot, params = calibrate(robot, fl.default_params(robot, frequency=f_h, averaged=averaged), calibration)
    return fly_manoeuvres(robot, params, manoeuvres, hover_frequency=f_h, gravity=float(averaged.gravity), **kwargs)


def check_free_flights(section: str, s) -> None:
    """The step [s], stroke phases and backend of a section's free per-wing flights."""
    check_range(f"{section}.timestep", s["timestep"], 1e-6, 2e-4)
    check_int(f"{section}.phases", s["phases"], 1, 16)
    check_choice(f"{section}.backend", s["backend"], ("rigid", "mjx"))
