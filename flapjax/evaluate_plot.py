"""The PNG summary of a task evaluation (:func:`flapjax.evaluate.evaluate`):
traces, metric against scenario, metric and saturation histograms."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from flapjax.evaluate_report import Episodes, EvaluationReport
from flapjax.tasks.base import TaskEnv


def plot_report(env: TaskEnv, report: EvaluationReport, result: Episodes, ablations: Mapping[str, Episodes],
                path) -> None:
    """PNG summary: traces, metric vs scenario (success coloured), metric and
    saturation histograms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    t = (np.arange(env.config.episode_length) + 1) * env.dt
    tr = result.trace
    n_show = min(8, report.n_worlds)
    a = ax[0, 0]
    keys = list(tr)
    a.plot(t, tr[keys[0]][:, :n_show], lw=0.8, color="C0", alpha=0.8)
    a.plot(t, tr[keys[1]][:, 0], "k--", lw=1.2, label=keys[1])
    for effect, off in ablations.items():
        a.plot(t, off.trace[keys[0]][:, :n_show], lw=0.8, color="C3", alpha=0.6)
        a.plot([], [], color="C3", label=f"{keys[0]}, {effect} off")
    a.plot([], [], color="C0", label=keys[0])
    a.set_xlabel("time [s]")
    a.set_title(f"{report.task} / {report.robot}: traces ({n_show} worlds)")
    a.legend(fontsize=7)

    s = result.summary
    sc = result.scenario
    metric = s[env.primary_metric]
    a = ax[0, 1]
    xkey = env.scenario_key
    ok = s["success"].astype(bool)
    a.scatter(sc[xkey][ok], metric[ok], s=8, color="C2", label="success")
    a.scatter(sc[xkey][~ok], metric[~ok], s=8, color="C3", label="failure")
    a.set_xlabel(xkey)
    a.set_ylabel(env.primary_metric)
    lo, hi = report.success_rate_ci95
    a.set_title(f"success rate {report.success_rate:.3f} [{lo:.2f}, {hi:.2f}] "
                f"(randomization {'on' if report.randomization['enabled'] else 'off'})")
    a.legend(fontsize=7)

    a = ax[1, 0]
    a.hist(metric, bins=30, color="C0", alpha=0.8, label="on")
    for effect, off in ablations.items():
        a.hist(off.summary[env.primary_metric], bins=30, color="C3", alpha=0.5, label=f"{effect} off")
    a.set_xlabel(env.primary_metric)
    a.legend(fontsize=7)

    a = ax[1, 1]
    a.hist(s["saturation_fraction"], bins=30, color="C1")
    sat = report.saturation
    a.set_xlabel("fraction of rotor-steps at a limit")
    a.set_title(f"saturation: mean {sat['rotor_step_fraction_mean']:.4f}, "
                f"min margin {sat['min_control_margin']:.3f}", fontsize=9)
    n = report.noise
    fig.suptitle(f"noise: pos {n['sensor_position_std']} m, vel {n['sensor_velocity_std']} m/s, "
                 f"att {n['sensor_attitude_std']} rad, rate {n['sensor_rate_std']} rad/s, "
                 f"thrust {n['command_thrust_std']} N", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
