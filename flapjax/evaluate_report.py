"""What an evaluation reports, typed: :class:`RunStatistics` of one batch of
episodes and the whole :class:`EvaluationReport` of
:func:`flapjax.evaluate.evaluate`.

:meth:`EvaluationReport.to_json` gives the ``report.json`` body (its keys in
their order), :meth:`EvaluationReport.summary` the lines the command line
prints. :class:`Episodes` holds the raw arrays of a batch of episodes. The
statistics: the success rate with its Wilson 95 % interval
(:func:`wilson_interval`), each task metric with its standard error and a
95 % interval of its mean, the saturation use and the control margins over
the healthy worlds only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Episodes", "EvaluationReport", "RunStatistics", "aggregate", "wilson_interval"]

#: Summary entries that are not task metrics.
_NOT_METRICS = frozenset({"success", "diverged", "saturation_fraction", "min_control_margin"})


def _stats(x: np.ndarray) -> dict:
    """Mean with its standard error and 95 % interval (normal approximation,
    ``mean +- 1.96 sem``), sample standard deviation (ddof 1), quantiles."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    std = float(np.std(x, ddof=1)) if n > 1 else math.nan
    sem = std / math.sqrt(n) if n > 1 else math.nan
    mean = float(np.mean(x))
    return dict(mean=mean, sem=sem, mean_ci95=[mean - 1.96 * sem, mean + 1.96 * sem], std=std,
                median=float(np.median(x)), p10=float(np.percentile(x, 10)), p90=float(np.percentile(x, 90)),
                min=float(np.min(x)), max=float(np.max(x)))


def wilson_interval(successes: int, n: int, z: float = 1.96) -> list[float]:
    """Wilson score interval ``[lo, hi]`` of a success rate (95 % for
    ``z = 1.96``): unlike ``p +- z sqrt(p (1 - p) / n)`` it stays inside
    [0, 1] and is not empty at 0 or n successes."""
    if n <= 0:
        return [math.nan, math.nan]
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


@dataclass(frozen=True)
class Episodes:
    """One episode in each of N worlds, as NumPy arrays
    (:func:`flapjax.evaluate.run_episodes`).

    Attributes:
      summary: name -> (N,) per-world result (``success``, ``diverged``,
        ``saturation_fraction``, ``min_control_margin``, the task metrics).
      scenario: name -> (N,) what each world drew (randomization).
      trace: name -> (T, N) signals per step.
      seconds: wall time of the episodes [s].
    """

    summary: Mapping[str, np.ndarray]
    scenario: Mapping[str, np.ndarray]
    trace: Mapping[str, np.ndarray]
    seconds: float

    def statistics(self) -> "RunStatistics":
        """Their :class:`RunStatistics` (:func:`aggregate`)."""
        return aggregate(self.summary, self.seconds)


@dataclass(frozen=True)
class RunStatistics:
    """The statistics of one batch of episodes (N worlds).

    Attributes:
      success_rate: share of worlds that met the task [-].
      success_rate_ci95: its Wilson 95 % interval ``[lo, hi]`` [-].
      n_success: worlds that met the task.
      diverged: worlds frozen as unhealthy by the simulator.
      unhealthy_worlds: worlds diverged or with a non-finite control margin.
      non_finite_margins: worlds whose control margin is not finite.
      metrics: task metric -> ``mean``, ``sem``, ``mean_ci95``, ``std``,
        ``median``, ``p10``, ``p90``, ``min``, ``max`` (the metric's unit).
      saturation: ``rotor_step_fraction_mean`` / ``_max`` (share of
        rotor-steps at a limit), ``worlds_with_saturation`` [-],
        ``min_control_margin`` and its median over the healthy worlds [-].
      seconds: wall time of the batch [s].
    """

    success_rate: float
    success_rate_ci95: list[float]
    n_success: int
    diverged: int
    unhealthy_worlds: int
    non_finite_margins: int
    metrics: Mapping[str, Mapping[str, Any]]
    saturation: Mapping[str, float]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        """The report entries, in their order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def aggregate(summary: Mapping[str, np.ndarray], seconds: float) -> RunStatistics:
    """The :class:`RunStatistics` of a batch from its per-world summary
    (name -> (N,) array: ``success``, ``diverged``, ``saturation_fraction``,
    ``min_control_margin`` and the task metrics); control margins over the
    healthy worlds only (not diverged, finite margin)."""
    s = summary
    sat = s["saturation_fraction"]
    margin = np.asarray(s["min_control_margin"], dtype=np.float64)
    finite = np.isfinite(margin)
    healthy = finite & ~np.asarray(s["diverged"], dtype=bool)
    margin_ok = margin[healthy] if healthy.any() else np.array([np.nan])
    n_success = int(np.sum(s["success"]))
    return RunStatistics(
        success_rate=float(np.mean(s["success"])),
        success_rate_ci95=wilson_interval(n_success, int(np.size(s["success"]))),
        n_success=n_success,
        diverged=int(np.sum(s["diverged"])),
        unhealthy_worlds=int(np.sum(~healthy)),
        non_finite_margins=int(np.sum(~finite)),
        metrics={k: _stats(v) for k, v in s.items() if k not in _NOT_METRICS},
        saturation=dict(
            rotor_step_fraction_mean=float(np.mean(sat)),
            rotor_step_fraction_max=float(np.max(sat)),
            worlds_with_saturation=float(np.mean(sat > 0)),
            min_control_margin=float(np.min(margin_ok)),
            min_control_margin_median=float(np.median(margin_ok)),
        ),
        seconds=seconds,
    )


@dataclass(frozen=True)
class EvaluationReport:
    """The report of :func:`flapjax.evaluate.evaluate`: the settings, the
    statistics of the run (the fields of :class:`RunStatistics`), the
    ablations and the files written.

    Attributes:
      task, robot: what ran (``robot``: preset name or profile path).
      n_worlds, seed, noise_seed: the batch and its world keys.
      noise, randomization: the full noise and randomization settings.
      disabled_effects: effects switched off in every run.
      config: the task's whole configuration.
      primary_metric: the task metric a run is judged by.
      controller: ``reference`` or the controller's name.
      airframe_warnings: why the airframe cannot hover on its own (empty when it can).
      jax: ``version``, ``backend``, ``x64``.
      success_rate ... seconds: as in :class:`RunStatistics`.
      ablations: effect -> the same worlds with it off (``off``: that run's
        statistics; the primary metric's means over the worlds healthy in
        both, success rates, the gap of the first traced signal).
      files: what was written (``report.json``, ``report.png``, videos;
        empty without an output folder); not part of ``report.json``.
    """

    task: str
    robot: str
    n_worlds: int
    seed: int
    noise_seed: int | None
    noise: Mapping[str, Any]
    randomization: Mapping[str, Any]
    disabled_effects: list[str]
    config: Mapping[str, Any]
    primary_metric: str
    controller: str
    airframe_warnings: list[str]
    jax: Mapping[str, Any]
    success_rate: float
    success_rate_ci95: list[float]
    n_success: int
    diverged: int
    unhealthy_worlds: int
    non_finite_margins: int
    metrics: Mapping[str, Mapping[str, Any]]
    saturation: Mapping[str, float]
    seconds: float
    ablations: Mapping[str, Mapping[str, Any]]
    files: tuple[str, ...] = ()

    @classmethod
    def of(cls, settings: Mapping[str, Any], statistics: RunStatistics,
           ablations: Mapping[str, Mapping[str, Any]]) -> "EvaluationReport":
        """A report from the settings (``task`` ... ``jax``), the run's
        statistics and the ablations (no files yet)."""
        return cls(**settings, **statistics.to_json(), ablations=dict(ablations))

    def to_json(self) -> dict[str, Any]:
        """The ``report.json`` body: every field but ``files``, in order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "files"}

    def summary(self) -> str:
        """The success rate with its interval, the primary metric's mean with
        its 95 % half-width, the saturation use and each ablation, one per line."""
        lo, hi = self.success_rate_ci95
        primary = self.metrics[self.primary_metric]
        lines = [f"{self.task}/{self.robot}: success rate {self.success_rate:.3f} (95 % interval "
                 f"{lo:.3f}-{hi:.3f}) over {self.n_worlds} worlds; {self.primary_metric} mean "
                 f"{primary['mean']:.4g} +- {1.96 * primary['sem']:.2g}; saturated rotor-steps "
                 f"{self.saturation['rotor_step_fraction_mean']:.4f}, min control margin "
                 f"{self.saturation['min_control_margin']:.3f}"]
        lines += [f"  {effect} off: {a['primary_metric']} {a['primary_off_mean']:.4g} "
                  f"(on {a['primary_on_mean']:.4g}); trace RMS difference {a['trace_rms_difference']:.4g}"
                  for effect, a in self.ablations.items()]
        return "\n".join(lines)
