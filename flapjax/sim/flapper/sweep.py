"""Cycle means and fixed-base sweeps of the flapping-wing robot.

:func:`cycle_mean` runs one world open-loop and averages whole stroke cycles
(:func:`cycle_window`); :func:`sweep` runs many worlds (frequencies,
amplitudes, plate angles) through one compiled scan of the vmapped step
(:func:`batched_cycle_mean`, :func:`sweep_program`) in chunks
(:func:`flapjax.sim.flapper.chunks.map_in_chunks`), so any number of rows
reuses the same compilation.
The window and the seed's reference sweep: docs/physics.md, Cycle means.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from flapjax.programs import ProgramCache, tree_key
from flapjax.sim.flapper.channels import SEED_KINDS, check_values
from flapjax.sim.flapper.chunks import map_in_chunks, program_key
from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot, default_params, make_robot
from flapjax.sim.flapper.state import init_state
from flapjax.sim.flapper.step import rollout, step
from flapjax.sim import tree
from flapjax.sim.rollout import remat, window_mean
from flapjax.validation import ConfigError, as_float_array, check_positive, check_range

Scalar = Float[Array, ""]

SEED_SWEEP = {20.0: 0.0661819985, 30.0: 0.1486352297, 40.0: 0.2639114107}
"""Seed table 11.2: mean world F_z [N] of the fixed-base robot, 0.6 s runs, first 0.3 s discarded."""


def cycle_window(frequency: Scalar, n_steps: int, discard_steps: int, dt: float) -> Float[Array, "T"]:
    """(n_steps,) weights in [0, 1] of the whole cycles inside steps ``[discard_steps, n_steps)``.

    The window ends with the last step and spans ``floor((T - T0) dt f)``
    complete cycles (the whole span when that is 0, e.g. at f = 0). Step k
    stands for ``[t_k - dt/2, t_k + dt/2]`` and weighs the fraction of it
    inside the window, so the window is an exact number of cycles long at
    any frequency: cycle means carry no partial-cycle bias, and a 0/1 window
    (off by up to a step, about 1e-4 of a cycle mean at 15-45 Hz) is not
    needed.
    """
    # in units of steps, where the step edges k +- 1/2 are exact in float32:
    # the steps inside weigh exactly 1, only the first one is fractional
    k = jnp.arange(n_steps, dtype=jnp.result_type(float))
    end = n_steps - 0.5
    span = n_steps - discard_steps
    f = jnp.asarray(frequency)
    n_cycles = jnp.floor(span * dt * f + 1e-9)
    safe_f = jnp.where(n_cycles > 0, f, 1.0)
    start = jnp.where(n_cycles > 0, end - n_cycles / (safe_f * dt), end - span)
    return jnp.clip(jnp.minimum(k + 0.5, end) - jnp.maximum(k - 0.5, start), 0.0, 1.0)


class CycleMean(eqx.Module):
    """Cycle-mean loads of one world.

    Attributes:
      force: (3,) mean applied aerodynamic force, world frame [N].
      moment: (3,) mean moment about the base origin, world frame [N m].
      lift_total: () mean |F_N,L| + |F_N,R| [N].
      stroke_error_rms: () RMS stroke tracking error over both wings [rad].
      stroke_error_max: () max |psi - psi_ref| over the window [rad].
      clip_fraction: () fraction of wing-steps with the force clip active [-].
      plate_angle: (2,) mean plate joint angles (pitch_joint, roll_joint) [rad].
      plate_range: (2,) peak-to-peak swing (max - min) of the plate joint
        angles (pitch_joint, roll_joint) over the window: how far the stroke
        plane nods about its set point [rad].
      healthy: () the world stayed healthy (:mod:`flapjax.sim.flapper.health`).
      health: () int32 reasons it did not (0: healthy; None: not recorded).
    """

    force: Float[Array, "3"]
    moment: Float[Array, "3"]
    lift_total: Scalar
    stroke_error_rms: Scalar
    stroke_error_max: Scalar
    clip_fraction: Scalar
    plate_angle: Float[Array, "2"]
    plate_range: Float[Array, "2"]
    healthy: Bool[Array, ""]
    health: Int[Array, ""] | None = None


def cycle_mean(
    robot: FlapperRobot, params: FlapperParams, n_steps: int, discard_steps: int, *, checkpoint: bool = True
) -> CycleMean:
    """Run one world open-loop from :func:`init_state` and average whole cycles
    after ``discard_steps``. Differentiable in ``params``. Many worlds at
    once: :func:`batched_cycle_mean`."""
    _check_discard(n_steps, discard_steps)
    state = init_state(robot, params)
    final, trace = rollout(robot, params, state, n_steps, observe=_observe, checkpoint=checkpoint)
    return summarize(robot, params.stroke.frequency, trace, final.healthy, n_steps, discard_steps, final.health)


def _check_discard(n_steps: int, discard_steps: int) -> None:
    if not 0 <= discard_steps < n_steps:
        raise ConfigError(f"discard_steps: must lie in [0, n_steps), got {discard_steps} with n_steps={n_steps}")


def _observe(_, dg) -> tuple:
    """The per-step record of a cycle mean: force (3,), moment (3,), lift (),
    stroke error (2,), force clip (2,), plate angles (2,)."""
    return (dg.force_world, dg.moment_world, dg.lift_total, dg.stroke_error, dg.force_clipped, dg.plate)


def summarize(robot: FlapperRobot, frequency: Scalar, trace: tuple, healthy: Bool[Array, ""], n_steps: int,
              discard_steps: int, health: Int[Array, ""] | None = None) -> CycleMean:
    """Whole-cycle means of one world's per-step record (:func:`_observe`,
    leaves with a leading time axis of ``n_steps``) at ``frequency`` [Hz];
    ``healthy`` and ``health`` of its final state."""
    force, moment, lift, err, clip, plate = trace
    w = cycle_window(frequency, n_steps, discard_steps, robot.dt).astype(force.dtype)
    square_error, clipped = jnp.mean(err**2, axis=-1), jnp.mean(clip.astype(force.dtype), axis=-1)
    force, moment, lift, square_error, clipped, plate_angle = window_mean(
        (force, moment, lift, square_error, clipped, plate), w)
    inside = w[:, None] > 0
    plate_range = jnp.max(jnp.where(inside, plate, -jnp.inf), axis=0) - jnp.min(jnp.where(inside, plate, jnp.inf), axis=0)
    return CycleMean(
        force=force,
        moment=moment,
        lift_total=lift,
        stroke_error_rms=jnp.sqrt(square_error),
        stroke_error_max=jnp.max(jnp.where(w[:, None] > 0, jnp.abs(err), 0.0)),
        clip_fraction=clipped,
        plate_angle=plate_angle,
        plate_range=plate_range, healthy=healthy, health=health,
    )


def batched_cycle_mean(robot: FlapperRobot, params: FlapperParams, n_steps: int, discard_steps: int, *,
                       checkpoint: bool = True) -> CycleMean:
    """:func:`cycle_mean` of every world of ``params`` (leading world axis
    of n), the worlds stepped together: one ``lax.scan`` over time whose
    step is vmapped over the worlds, so the step is traced once (a vmapped
    scan traces it, then batches its body twice to find which carries vary
    per world). The numbers of ``vmap(cycle_mean)`` up to round-off;
    ``checkpoint`` as in :func:`flapjax.sim.rollout.rollout`. Returns a
    :class:`CycleMean` whose leaves have a leading axis of n."""
    _check_discard(n_steps, discard_steps)
    state = jax.vmap(lambda p: init_state(robot, p))(params)
    one_step = jax.vmap(lambda p, s: step(robot, p, s))

    def body(s, _):
        new, dg = one_step(params, s)
        return new, _observe(new, dg)

    if checkpoint:
        body = remat(body)
    final, trace = jax.lax.scan(body, state, None, length=int(n_steps))
    per_world = lambda f, tr, ok, code: summarize(robot, f, tr, ok, n_steps, discard_steps, code)  # noqa: E731
    return jax.vmap(per_world, in_axes=(0, 1, 0, 0))(params.stroke.frequency, trace, final.healthy, final.health)


#: XLA options of the sweep program on CPU (:data:`flapjax.sim.tree.CPU_COMPILER_OPTIONS`).
#: Its step is a few hundred small kernels (MJX) or a few dozen (the pure-JAX
#: tree of the rigid backend): XLA's classic CPU emitters build them in about
#: half the time of the MLIR fusion emitters (the compilation dominates a
#: sweep started in a fresh process: 64 worlds x 6000 steps on MJX spend ~5 s
#: of CPU time compiling instead of ~10 s; the tree 1.8 s instead of 2.7 s) at
#: about the same speed, and no reductions go to the YNNPACK library, whose
#: per-call cost made the tree's step 2.5x slower.
CPU_COMPILER_OPTIONS = tree.CPU_COMPILER_OPTIONS


def compiler_options(backend: str) -> dict[str, Any] | None:
    """XLA options the sweep program is compiled with on ``backend``
    ("cpu", "gpu", ...): :data:`CPU_COMPILER_OPTIONS` on CPU, else none."""
    return tree.compiler_options(backend)


def _sweep_chunk(robot: FlapperRobot, params: FlapperParams, n_steps: int, discard_steps: int) -> CycleMean:
    return batched_cycle_mean(robot, params, n_steps, discard_steps, checkpoint=False)


#: At most this many jitted sweep chunks are kept.
SWEEP_PROGRAM_LIMIT = 8
#: Jitted sweep chunks, one per (robot key, n_steps, discard_steps, backend),
#: the least recently used dropped beyond :data:`SWEEP_PROGRAM_LIMIT`: a
#: script sweeping many different robots does not accumulate programs.
_SWEEP_PROGRAMS = ProgramCache(limit=SWEEP_PROGRAM_LIMIT)


def sweep_program(robot: FlapperRobot, n_steps: int, discard_steps: int) -> Callable[[FlapperParams], CycleMean]:
    """``params -> CycleMean`` of a chunk of worlds (leading axis n) of this
    robot, jitted with the robot's arrays as compile-time constants (XLA
    folds what depends on the model alone instead of computing it in the
    program) and :func:`compiler_options` of the default backend; one
    program per robot values, step counts and chunk shape."""
    backend = jax.default_backend()
    key = (tree_key(robot), int(n_steps), int(discard_steps), backend)

    def build() -> Callable[[FlapperParams], CycleMean]:
        def sweep_chunk(params: FlapperParams) -> CycleMean:
            return _sweep_chunk(robot, params, n_steps, discard_steps)

        return jax.jit(sweep_chunk, compiler_options=compiler_options(backend))

    return _SWEEP_PROGRAMS.get(key, build)


class SweepResult(eqx.Module):
    """Cycle-mean loads of a fixed-base sweep, one row per world.

    Attributes:
      force: (n, 3) cycle-mean aerodynamic force, world frame [N].
      moment: (n, 3) cycle-mean moment about the base origin, world frame [N m].
      lift_total: (n,) cycle-mean |F_N,L| + |F_N,R| [N].
      frequency: (n,) flapping frequency [Hz].
      amplitude: (n,) stroke amplitude [rad].
      plate: (n, nc) control-channel values (the seed's plate angles) [rad].
      stroke_error_rms: (n,) RMS stroke tracking error [rad].
      stroke_error_max: (n,) max stroke tracking error [rad].
      clip_fraction: (n,) fraction of wing-steps at the force clip [-].
      plate_angle: (n, nj) cycle-mean joint-channel angles [rad].
      plate_range: (n, nj) peak-to-peak swing of the joint-channel angles over
        the window [rad].
      healthy: (n,) the world stayed healthy; health: (n,) int32 reasons it
        did not (:func:`flapjax.sim.flapper.health.count_reasons`; None: not recorded).
      duration: run length [s]; discard: discarded transient [s]; dt: timestep [s].
    """

    force: Float[Array, "n 3"]
    moment: Float[Array, "n 3"]
    lift_total: Float[Array, "n"]
    frequency: Float[Array, "n"]
    amplitude: Float[Array, "n"]
    plate: Float[Array, "n 2"]
    stroke_error_rms: Float[Array, "n"]
    stroke_error_max: Float[Array, "n"]
    clip_fraction: Float[Array, "n"]
    plate_angle: Float[Array, "n 2"]
    plate_range: Float[Array, "n 2"]
    healthy: Bool[Array, "n"]
    duration: float = eqx.field(static=True)
    discard: float = eqx.field(static=True)
    dt: float = eqx.field(static=True)
    health: Int[Array, "n"] | None = None

    @property
    def lift_per_f2(self) -> Float[Array, "n"]:
        """F_z / f^2 [N/Hz^2]."""
        return self.force[:, 2] / self.frequency**2


def sweep_params(
    frequencies,
    *,
    amplitude=None,
    plate=None,
    params: FlapperParams | None = None,
    robot: FlapperRobot | None = None,
) -> FlapperParams:
    """Per-world parameters with a leading world axis: frequency (n,),
    amplitude () or (n,), plate (the channel values: (nc,) or (n, nc),
    default zeros); the rest of ``params`` (default :func:`default_params`)
    shared by every world."""
    freqs = as_float_array("frequencies", np.atleast_1d(np.asarray(frequencies, dtype=float)), (None,))
    if freqs.size == 0:
        raise ConfigError("frequencies: need at least one frequency [Hz], got an empty list")
    n = freqs.shape[0]
    amp = None if amplitude is None else np.asarray(amplitude, dtype=float)
    kinds = SEED_KINDS if robot is None else robot.channel_kinds
    plate_a = np.zeros(len(kinds)) if plate is None else np.asarray(plate, dtype=float)
    if amp is not None and amp.ndim == 1:
        n = max(n, amp.shape[0])
    if plate_a.ndim == 2:
        n = max(n, plate_a.shape[0])

    def fit(name, x, tail):
        x = np.asarray(x, dtype=float)
        if x.shape == tail:
            return np.broadcast_to(x, (n,) + tail).copy()
        if x.shape == (1,) + tail or x.shape == (n,) + tail:
            return np.broadcast_to(x, (n,) + tail).copy()
        raise ConfigError(f"{name}: expected shape {tail} or ({n},{' ' if tail else ''}{', '.join(map(str, tail))}), got {x.shape}")

    freqs = fit("frequencies", freqs, ())
    check_positive("frequencies", freqs)
    base = params if params is not None else default_params(robot)
    amps = fit("amplitude", base.stroke.amplitude if amp is None else amp, ())
    check_positive("amplitude", amps, allow_zero=True)
    plates = check_values("plate", fit("plate", plate_a, (len(kinds),)), kinds, amplitude=amps)
    batched = jax.tree.map(lambda x: to_device(np.broadcast_to(np.asarray(x), (n,) + np.shape(x))), base)
    return eqx.tree_at(
        lambda p: (p.stroke.frequency, p.stroke.amplitude, p.plate),
        batched,
        (to_device(freqs), to_device(amps), to_device(plates)),
    )


def to_device(x) -> Array:
    """A host array on the default device in JAX's default dtype for its kind
    (float64 -> float32 without x64), copied there by ``device_put``: no
    program is compiled, unlike ``jnp.asarray`` / ``jnp.broadcast_to``."""
    x = np.asarray(x)
    return jax.device_put(x.astype(jax.dtypes.canonicalize_dtype(x.dtype), copy=False))


def window_steps(robot: FlapperRobot, duration: float, discard: float) -> tuple[int, int]:
    """(n_steps, discard_steps) of a run of ``duration`` [s] whose first
    ``discard`` [s] are dropped; refuses a window with nothing left."""
    check_positive("duration", duration)
    check_range("discard", discard, 0.0, duration)
    n_steps = int(round(duration / robot.dt))
    discard_steps = int(round(discard / robot.dt))
    if n_steps < 2:
        raise ConfigError(f"duration: {duration:g} s is shorter than two steps of {robot.dt:g} s; "
                          f"must be >= {2 * robot.dt:g} s")
    if discard_steps >= n_steps:
        raise ConfigError(f"discard: must be shorter than duration ({duration} s), got {discard}")
    return n_steps, discard_steps


def _warn_partial_cycles(frequencies: np.ndarray, window: float) -> None:
    """Warn when the averaging window holds no whole cycle at some frequency
    (:func:`cycle_window` then averages a biased partial cycle)."""
    short = frequencies[(frequencies > 0) & (frequencies * window < 1.0)]
    if short.size:
        warnings.warn(f"sweep: the averaging window (duration - discard = {window:.4g} s) holds no whole cycle at "
                      f"{np.unique(short).tolist()} Hz; those means cover a partial cycle and are biased "
                      f"(make duration - discard at least {1.0 / float(short.min()):.4g} s)", stacklevel=3)


def sweep(
    frequencies,
    *,
    duration: float = 0.6,
    discard: float = 0.3,
    plate=None,
    amplitude=None,
    params: FlapperParams | None = None,
    robot: FlapperRobot | None = None,
    batch_size: int = 4,
) -> SweepResult:
    """Fixed-base sweep: one world per row, cycle-mean force and moment.

    Frequencies, amplitudes and channel values broadcast against each other
    (scalars / (nc,) values shared, or one value per world). Worlds run in
    chunks of ``batch_size`` through one compiled program (:func:`sweep_program`), so any
    number of rows reuses the same compilation (the last chunk is padded).

    Args:
      frequencies: (n,) flapping frequencies [Hz].
      duration: run length [s]; discard: transient dropped before averaging [s].
      plate: (nc,) or (n, nc) control-channel values (the seed's plate
        angles (pitch_joint, roll_joint) [rad]); default zeros.
      amplitude: () or (n,) stroke amplitude [rad]; default from the params.
      params: shared parameters (hinge, aero options, ...).
      robot: a fixed-base robot; default ``make_robot("fixed", "wing",
        backend="rigid")``: the pure-JAX joint tree, which agrees with the
        MJX robot to float32 round-off and compiles and runs several times
        faster (:mod:`flapjax.sim.tree`).
      batch_size: worlds per compiled chunk.
    """
    robot = make_robot("fixed", "wing", backend="rigid") if robot is None else robot
    if robot.root != "fixed":
        raise ConfigError(f"robot: sweep needs a fixed-base robot, got root={robot.root!r}")
    n_steps, discard_steps = window_steps(robot, duration, discard)
    batched = sweep_params(frequencies, amplitude=amplitude, plate=plate, params=params, robot=robot)
    _warn_partial_cycles(np.asarray(batched.stroke.frequency), (n_steps - discard_steps) * robot.dt)
    program = sweep_program(robot, n_steps, discard_steps)
    out = map_in_chunks(program, batched, batch_size,
                        key=program_key("cycle_mean", robot, n_steps, discard_steps, per_world=batched))
    return SweepResult(
        force=out.force, moment=out.moment, lift_total=out.lift_total,
        frequency=batched.stroke.frequency, amplitude=batched.stroke.amplitude, plate=batched.plate,
        stroke_error_rms=out.stroke_error_rms, stroke_error_max=out.stroke_error_max,
        clip_fraction=out.clip_fraction, plate_angle=out.plate_angle, plate_range=out.plate_range,
        healthy=out.healthy, health=out.health, duration=float(duration), discard=float(discard), dt=robot.dt,
    )
