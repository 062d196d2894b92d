"""Evaluation: run N worlds of a task with a controller; success, task
metrics, saturation use, ablations; JSON and PNG reports.

    report = evaluate("near_ground", robot="quad_x", n_worlds=256, out_dir="out/")

Every report states the full noise and randomization settings and the
saturation use (fraction of rotor-steps at a limit, smallest control margin),
so a success rate is always read together with the control margin it took.

Keys: world ``i`` uses ``split(key(seed), N)[i]`` (randomization, noise and
turbulence streams); with ``noise_seed`` the noise and turbulence streams come
from ``split(key(noise_seed), N)[i]`` instead, leaving the worlds unchanged.
The same seeds give identical results.

Before anything runs, ``out_dir`` is checked and held for the run
(:func:`flapjax.files.lock_output_dir`) and the batch's memory is
estimated from the shapes of its state and traces (:func:`batch_memory`);
a batch that would not fit is refused with the estimate and the number of
worlds that would.

Health: a world that turned unhealthy (non-finite state, command, thrust or
margin; speed or body rate beyond the profile's bounds; see
:mod:`flapjax.sim.multirotor.step`) is frozen and counted in
``unhealthy_worlds``; the control margins are reported over the healthy
worlds, with ``non_finite_margins`` counting the others. An airframe that
cannot hold a hover on its own (:class:`~flapjax.rotor.flyable.UnflyableWarning`:
one rotor, all spins alike, a rotor thrusting down) still runs, and the
report keeps the reasons under ``airframe_warnings`` (empty when none).

Uncertainty: the success rate comes with its Wilson 95 % interval
(``success_rate_ci95``), each task metric with its standard error and a
95 % interval of its mean (``sem``, ``mean_ci95``) and its sample standard
deviation: compare two controllers or simulators by these, not by the
means alone.

Ablation: ``ablate=("ground_effect",)`` reruns the same worlds (same keys,
same controller) with that effect switched off in the simulated physics and
reports both and their difference. For ``near_ground`` the ground-effect
ablation is always run: it gives the end-effector height RMSE with the
ground-effect model on vs off, and the RMS difference between the two height
trajectories, i.e. the sim-to-sim gap a model without ground effect leaves
for this trajectory and controller. The comparison is over the worlds
healthy in both runs (``worlds_compared``).
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import time
import warnings
from typing import Callable, Sequence

import jax
import numpy as np

from flapjax.rotor.flyable import UnflyableWarning
from flapjax.tasks import registry
from flapjax.tasks.actions import resolve_controller, world_keys
from flapjax.tasks.adapters import require
from flapjax.tasks.base import TaskEnv
from flapjax.tasks.config import EFFECTS, NoiseConfig, config_to_dict, replace_config
from flapjax.evaluate_plot import plot_report
from flapjax.evaluate_report import Episodes, EvaluationReport
from flapjax.files import lock_output_dir, to_jsonable, write_json
from flapjax.programs import ProgramCache
from flapjax.safe_io import atomic_write, available_memory, check_output_file
from flapjax.validation import ConfigError, check_bool, check_choice, check_int

#: Working memory of a step relative to the batch's state (XLA temporaries).
STATE_WORKING_FACTOR = 4
#: Share of the available memory a batch may plan to use.
MEMORY_SHARE = 0.8

_COMPILED = ProgramCache()


def _segment_length(n: int, target: int = 25) -> int:
    for k in range(min(target, n), 0, -1):
        if n % k == 0:
            return k
    return 1


def _functions(env: TaskEnv, segment: int, controller: Callable | None):
    """``(reset, run_segment, finish)`` jitted and cached per (task, config,
    segment, controller)."""
    return _COMPILED.get((env.program_key, segment, controller),
                         lambda: _build_functions(env, segment, controller))


def _build_functions(env: TaskEnv, segment: int, controller: Callable | None):
    policy = resolve_controller(env, controller)

    def reset(keys, noise_keys):
        return jax.vmap(env.reset)(keys, noise_keys)

    def run(state):
        def body(s, _):
            s = jax.vmap(env.step)(s, jax.vmap(policy)(s))
            return s, jax.vmap(env.trace)(s)

        return jax.lax.scan(body, state, None, length=segment)

    def finish(state):
        return jax.vmap(env.summarize)(state), jax.vmap(env.scenario)(state)

    return jax.jit(reset), jax.jit(run), jax.jit(finish)


def _nbytes(tree) -> int:
    return int(sum(math.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(tree) if hasattr(x, "shape")))


def batch_memory(env: TaskEnv, n_worlds: int, controller: Callable | None = None) -> int:
    """Estimated bytes of an episode of ``n_worlds`` worlds: the batch's
    state times :data:`STATE_WORKING_FACTOR`, plus its traces on the device
    and their host copies. Computed from shapes alone (``jax.eval_shape``,
    nothing is allocated or compiled)."""
    seg = _segment_length(env.config.episode_length)
    reset, run, _ = _functions(env, seg, controller)
    key = jax.random.key(0)
    keys = jax.ShapeDtypeStruct((n_worlds,) + key.shape, key.dtype)
    state = jax.eval_shape(reset, keys, keys)
    _, trace = jax.eval_shape(run, state)
    n_segments = env.config.episode_length // seg
    return STATE_WORKING_FACTOR * _nbytes(state) + 2 * n_segments * _nbytes(trace)


def check_batch_memory(env: TaskEnv, n_worlds: int, controller: Callable | None = None) -> None:
    """Refuse a batch whose :func:`batch_memory` exceeds :data:`MEMORY_SHARE`
    of :func:`available_memory`, with the estimate and a batch that fits."""
    free = available_memory()
    if free is None:
        return
    need = batch_memory(env, n_worlds, controller)
    budget = MEMORY_SHARE * free
    if need > budget:
        per_world = need / n_worlds
        fits = max(int(budget // per_world), 0)
        raise ConfigError(
            f"n_worlds: {n_worlds} worlds need about {need / 2**30:.3g} GiB ({per_world / 1024:.3g} KiB per world), "
            f"more than the {free / 2**30:.3g} GiB available; run at most {fits} worlds at a time "
            f"(several runs with different seeds)")


def run_episodes(env: TaskEnv, *, n_worlds: int, seed: int = 0, noise_seed: int | None = None,
                 controller: Callable | None = None, progress: bool = False, desc: str | None = None) -> Episodes:
    """Run one episode in each of ``n_worlds`` worlds.

    Args:
      env: the task environment.
      n_worlds: number of worlds (one batch).
      seed, noise_seed: see the module docstring.
      controller: ``controller(state) -> action`` (default: the task's
        reference controller in its action mode; a controller that does
        not fit the action mode raises, see
        :func:`flapjax.tasks.actions.resolve_controller`).
      progress: show a tqdm progress bar over the episode.

    Returns:
      The :class:`~flapjax.evaluate_report.Episodes`: ``summary`` and
      ``scenario`` {name: (N,)}, ``trace`` {name: (T, N)} as NumPy arrays,
      ``seconds`` the wall time [s].
    """
    check_int("n_worlds", n_worlds, 1)
    check_batch_memory(env, n_worlds, controller)
    length = env.config.episode_length
    seg = _segment_length(length)
    reset, run, finish = _functions(env, seg, controller)
    keys, noise_keys = world_keys(n_worlds, seed, noise_seed)
    t0 = time.perf_counter()
    state = reset(keys, noise_keys)
    traces = []
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=length, desc=desc or f"{env.name}/{env.config.robot}", unit="step")
    for _ in range(length // seg):
        state, tr = run(state)
        traces.append(tr)
        if bar is not None:
            jax.block_until_ready(state.reward)
            bar.update(seg)
    if bar is not None:
        bar.close()
    summary, scenario = finish(state)
    trace = {k: np.concatenate([np.asarray(t[k]) for t in traces], axis=0) for k in traces[0]}
    return Episodes(summary={k: np.asarray(v) for k, v in summary.items()},
                    scenario={k: np.asarray(v) for k, v in scenario.items()}, trace=trace,
                    seconds=time.perf_counter() - t0)


def evaluate(task: str, *, robot: str = "quad_x", n_worlds: int = 256, out_dir: str | pathlib.Path | None = None,
             seed: int = 0, noise_seed: int | None = None, randomize: bool = False,
             noise: NoiseConfig | None = None, disabled_effects: Sequence[str] = (),
             ablate: Sequence[str] | None = None, overrides: dict | None = None, progress: bool = True,
             controller: Callable | None = None, video: int = 0) -> EvaluationReport:
    """Evaluate task ``task`` with robot ``robot`` over ``n_worlds`` worlds.

    Args:
      task: registered task name.
      robot: preset name, or the path of a profile file (``.toml`` / ``.json``).
      n_worlds: number of worlds.
      out_dir: where ``report.json`` and ``report.png`` go (None: no files).
      seed, noise_seed: world keys (see the module docstring).
      randomize: domain randomization on (with the task's default ranges).
      noise: sensor and command noise (default: the task's default).
      disabled_effects: effects switched off in every run.
      ablate: effects to rerun switched off (default: ``ground_effect`` for
        ``near_ground``, none otherwise).
      overrides: further config overrides (dotted keys allowed).
      progress: tqdm progress bars.
      controller: ``controller(state) -> action`` (default: the reference
        controller).
      video: render the first ``video`` worlds into ``out_dir`` as MP4
        (:func:`flapjax.render.task_videos`; needs the ``render`` extra).

    Returns:
      The :class:`~flapjax.evaluate_report.EvaluationReport` (its
      :meth:`~flapjax.evaluate_report.EvaluationReport.to_json` is what
      ``out_dir/report.json`` holds).

    Raises:
      ConfigError: before anything runs, for a bad setting, an ``out_dir``
        that is a file, not writable or held by another run, or a batch too
        large for the available memory.
    """
    check_int("n_worlds", n_worlds, 1)
    check_int("video", video, 0)
    check_bool("randomize", randomize)  # "no" would be truthy
    check_int("seed", seed, -(2**63), 2**63 - 1)  # a larger seed overflows the key
    if noise_seed is not None:
        check_int("noise_seed", noise_seed, -(2**63), 2**63 - 1)
    if video and out_dir is None:
        raise ConfigError("video: needs an output directory (out_dir)")
    if video:
        require("render", "imageio", "imageio_ffmpeg")  # before the run, not after it
    lock = None if out_dir is None else lock_output_dir(out_dir, name="out_dir")
    for name in () if out_dir is None else ("report.json", "report.png"):
        check_output_file(pathlib.Path(out_dir) / name)  # a link there is refused before the run, not followed after
    try:
        return _evaluate(task, robot, n_worlds, out_dir, seed=seed, noise_seed=noise_seed, randomize=randomize,
                         noise=noise, disabled_effects=disabled_effects, ablate=ablate, overrides=overrides,
                         progress=progress, controller=controller, video=video)
    finally:
        if lock is not None:
            lock.release()


def _make_noting_airframe(task: str, overrides: dict) -> tuple[TaskEnv, list[str]]:
    """The task's environment and what :class:`~flapjax.rotor.flyable.UnflyableWarning`
    said about its airframe (shown as usual, and kept for the report)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = registry.make(task, overrides=overrides)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return env, sorted({str(w.message) for w in caught if issubclass(w.category, UnflyableWarning)})


def _evaluate(task, robot, n_worlds, out_dir, *, seed, noise_seed, randomize, noise, disabled_effects, ablate,
              overrides, progress, controller, video=0) -> EvaluationReport:
    ov = dict(overrides or {})
    ov["robot"] = robot
    ov["randomization.enabled"] = bool(randomize)
    if noise is not None:
        ov["noise"] = noise
    ov["disabled_effects"] = tuple(disabled_effects)
    env, airframe = _make_noting_airframe(task, ov)
    if ablate is None:
        ablate = tuple(e for e in (("ground_effect",) if task == "near_ground" else ())
                       if e not in env.config.disabled_effects)
    for e in ablate:
        check_choice("ablate", e, EFFECTS)
        if e in env.config.disabled_effects:
            raise ConfigError(f"ablate: {e!r} is also disabled; an ablation would compare it off with itself "
                              "(drop one of --ablate and --disable)")
    result = run_episodes(env, n_worlds=n_worlds, seed=seed, noise_seed=noise_seed, controller=controller,
                          progress=progress)
    cfg = config_to_dict(env.config)
    settings = dict(
        task=task, robot=robot, n_worlds=int(n_worlds), seed=int(seed), noise_seed=noise_seed,
        noise=cfg["noise"], randomization=cfg["randomization"], disabled_effects=list(env.config.disabled_effects),
        config=cfg, primary_metric=env.primary_metric,
        controller="reference" if controller is None else getattr(controller, "__name__", "custom"),
        airframe_warnings=airframe,
        jax=dict(version=jax.__version__, backend=jax.default_backend(),
                 x64=bool(jax.config.read("jax_enable_x64"))),
    )
    ablations = {}
    ablation_results = {}
    for effect in ablate:
        if effect in env.config.disabled_effects:
            continue
        off_env = registry.get_class(task)(replace_config(
            env.config, disabled_effects=tuple(env.config.disabled_effects) + (effect,)))
        off = run_episodes(off_env, n_worlds=n_worlds, seed=seed, noise_seed=noise_seed, controller=controller,
                           progress=progress, desc=f"{task}/{robot} {effect} off")
        ablation_results[effect] = off
        ablations[effect] = _ablation_entry(env, result, off, off.statistics().to_json())
    report = EvaluationReport.of(settings, result.statistics(), ablations)
    if out_dir is None:
        return report
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "report.png") as png:  # the figure first: report.json is never left without it
        plot_report(env, report, result, ablation_results, png)
    write_json(out / "report.json", to_jsonable(report.to_json()), indent=2)
    files = [str(out / "report.json"), str(out / "report.png")]
    if video:
        from flapjax import render

        videos = render.task_videos(env, min(int(video), int(n_worlds)), out, n_worlds=n_worlds, seed=seed,
                                    noise_seed=noise_seed, controller=controller)
        files += [str(v) for v in videos]
    return dataclasses.replace(report, files=tuple(files))


def _ablation_entry(env: TaskEnv, on: Episodes, off: Episodes, off_agg: dict) -> dict:
    """The same worlds with the effect on and off: the primary metric's means
    over the worlds healthy in both runs (``worlds_compared``), success rates,
    and the difference of the first traced signal."""
    name = env.primary_metric
    healthy = ~(np.asarray(on.summary["diverged"], bool) | np.asarray(off.summary["diverged"], bool))
    compared = int(np.sum(healthy))
    sel = healthy if compared else np.ones_like(healthy)  # none healthy: over all worlds, worlds_compared = 0
    m_on = on.summary[name].astype(np.float64)[sel]
    m_off = off.summary[name].astype(np.float64)[sel]
    entry = dict(
        off=off_agg,
        worlds_compared=compared,
        primary_metric=name,
        primary_on_mean=float(np.mean(m_on)),
        primary_off_mean=float(np.mean(m_off)),
        primary_difference_mean=float(np.mean(m_on - m_off)),
        primary_ratio_on_off=float(np.mean(m_on) / max(np.mean(m_off), 1e-12)),
        success_rate_on=float(np.mean(on.summary["success"])),
        success_rate_off=float(np.mean(off.summary["success"])),
    )
    first = next(iter(on.trace))
    gap = (on.trace[first].astype(np.float64) - off.trace[first].astype(np.float64))[:, sel]
    entry["trace"] = first
    entry["trace_rms_difference"] = float(np.sqrt(np.mean(gap**2)))
    entry["trace_max_abs_difference"] = float(np.max(np.abs(gap)))
    return entry
