"""What a run shows: PNG plots of every study and the plain-text summary."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flapjax.identify.flapper.results import SEED_VALUES, VALUE_UNITS, IdentificationResult
from flapjax.runs.outputs import pyplot, save_figure


def write_plots(result: IdentificationResult, out_dir: str | Path) -> list[Path]:
    """PNG plots of every study present in ``result`` (matplotlib, Agg), in the order of :data:`PLOTS`."""
    plt, st, files = pyplot(), result.studies, []
    curves = {k: np.asarray(s.loss) for k, s in st.items() if np.asarray(s.loss).size}
    for study, (name, plot) in _PLOTS.items():
        what = (curves or None) if study == "loss" else st.get(study)
        if what is not None:
            files.append(save_figure(plot(plt, what), Path(out_dir) / name, dpi=110))
    return files


def _label(ax, xlabel: str, ylabel: str, title: str | None = None, *, legend: int = 8, **title_kw) -> None:
    """Axis labels, an optional title and the legend (font size ``legend``)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title, **title_kw)
    ax.legend(fontsize=legend)


def _points_and_fit(ax, x, y, fitted, sel, label: str, fit_label: str | None = None) -> None:
    """The measured points ``y[sel]`` against ``x[sel]`` and the fitted line through them, one colour."""
    if np.any(sel):
        o = np.argsort(x[sel])
        (line,) = ax.plot(x[sel], y[sel], "o", label=label)
        ax.plot(x[sel][o], fitted[sel][o], "-", color=line.get_color(), label=fit_label)


def _plot_lift(plt, study):
    """The lift study's figure (lift_fz_vs_f2.png)."""
    d, m = study.data, study.metrics
    f = np.asarray(d["frequency"])
    k_f, k_ls = float(study.values["k_f"]), float(m["k_f_least_squares"])
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(f**2, np.asarray(d["force_z"]), "o", label="per-wing MJX sweep (cycle mean)")
    ff = np.linspace(0, f.max() * 1.05, 100)
    ax.plot(ff**2, k_f * ff**2, "-", label=f"gradient fit k_f = {k_f:.5e}")
    ax.plot(ff**2, k_ls * ff**2, "--", label=f"least squares {k_ls:.5e}")
    _label(ax, "f^2 [Hz^2]", "world F_z [N]", f"lift: R^2 = {float(m['r2']):.5f}")
    return fig


def _plot_moments(plt, study):
    """The moments study's figure (moments_fit.png)."""
    if "B" in study.values:  # a robot steered by other channels: its control matrix
        return _plot_channel_moments(plt, study)
    d, v, m = study.data, study.values, study.metrics
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, key, k, r2, lab in (
        (axes[0], "roll", float(v["k_roll"]), float(m["r2_roll"]), "tau_x (pitch_joint delta_p)"),
        (axes[1], "pitch", float(v["k_pitch"]), float(m["r2_pitch"]), "-tau_y (roll_joint delta_r)"),
    ):
        x, y = np.asarray(d[f"{key}_x"]), np.asarray(d[f"{key}_y"])
        ax.plot(x, y, "o", label="per-wing MJX (cycle mean)")
        xx = np.linspace(x.min(), x.max(), 50)
        ax.plot(xx, k * xx, "-", label=f"k_{key} = {k:.4e} N m/rad")
        _label(ax, "lambda_f delta [rad]", f"{lab} [N m]", f"k_{key}: R^2 = {r2:.5f}")
    return fig


def _plot_channel_moments(plt, study):
    """moments_fit.png of a control-matrix fit: body x and y moment against
    lambda_f u of each swept channel, with the fitted lines."""
    d, b = study.data, np.asarray(study.values["B"])
    u, moment = np.asarray(d["channels"]), np.asarray(d["moment"])
    lam = (np.asarray(d["frequency"]) / float(study.metrics["reference_frequency"])) ** 2
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for i, (ax, name) in enumerate(zip(axes, ("tau_x (roll)", "tau_y (pitch)"))):
        for j in range(u.shape[1]):
            x = lam * u[:, j]
            _points_and_fit(ax, x, moment[:, i], b[i, j] * x, u[:, j] != 0, f"channel {j}", f"B[{i},{j}] = {b[i, j]:.3e}")
        _label(ax, "lambda_f u [channel units]", f"{name} [N m]", legend=7)
    return fig


def _plot_damping(plt, study):
    """The damping study's figure (damping_fit.png)."""
    d, v = study.data, study.values
    kind = np.asarray(d["kind"]).astype(int)
    x, y, yf = np.asarray(d["drive"]), np.asarray(d["load"]), np.asarray(d["fitted"])
    has_cross = "cross_load" in d and ("L_v" in v or "M_u" in v)
    fig, axes = plt.subplots(1, 3 if has_cross else 2, figsize=(13.5 if has_cross else 9, 4))
    for j, lab in zip(range(2, 5), ("x", "y", "z")):
        _points_and_fit(axes[0], x, y, yf, kind == j, f"tau_{lab}",
                        f"-D_w,{lab} w, D = {float(np.asarray(v['D_w'])[j - 2]):.3e}")
    _label(axes[0], "imposed body rate [rad/s]", "cycle-mean body moment [N m]", legend=7)
    for j, lab in ((0, "x"), (1, "y")):
        _points_and_fit(axes[1], x, y, yf, kind == j, f"F_{lab}")
    _label(axes[1], "imposed body speed [m/s]", "cycle-mean body force [N]",
           f"k_v = {float(v['k_v']):.4e} N s/m" if "k_v" in v else None, legend=7)
    if has_cross:
        c, cf = np.asarray(d["cross_load"]), np.asarray(d["cross_fitted"])
        for j, lab, name in ((1, "tau_x vs v_y", "L_v"), (0, "tau_y vs v_x", "M_u")):
            if name in v:
                _points_and_fit(axes[2], x, c, cf, kind == j, lab, f"{name} = {float(v[name]):+.3e} N m s/m")
        axes[2].axhline(0.0, color="0.7", lw=0.6)
        _label(axes[2], "imposed body speed [m/s]", "cycle-mean cross moment [N m]",
               "speed-to-moment coupling (about the CoM)", legend=7)
    return fig


def _plot_physical(plt, study):
    """The physical study's figure (physical_fit.png)."""
    d = study.data
    f = np.asarray(d["frequency"])
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(f, np.asarray(d["target"]) / f**2, "ks", label="measurement")
    ax.plot(f, np.asarray(d["start_force_z"]) / f**2, "x--", label="start")
    ax.plot(f, np.asarray(d["fitted_force_z"]) / f**2, "o-", label="identified")
    vals = ", ".join(f"{k} = {float(x):.4g}" for k, x in study.values.items())
    _label(ax, "f [Hz]", "F_z / f^2 [N/Hz^2]", vals, fontsize=8)
    return fig


def _plot_validation(plt, study):
    """The validation study's figure (validation_flights.png)."""
    d, m = study.data, study.metrics
    t, tm = np.asarray(d["time"]), np.asarray(d.get("cycle_mean_time", d["time"]))
    labels = list(m["flights"])
    fig, axes = plt.subplots(len(labels), 2, figsize=(10, 2.7 * len(labels)), sharex=True, squeeze=False)
    for i, lab in enumerate(labels):
        r = m["flights"][lab]
        verdict = "PASS" if r.get("passed") else "FAIL"
        axes[i, 0].plot(t, np.asarray(d["per_wing_z"])[i], lw=0.6, alpha=0.5, label="per-wing")
        axes[i, 0].plot(t, np.asarray(d["averaged_z"])[i], "--", label="averaged (identified)")
        if "per_wing_cycle_mean_position" in d:
            axes[i, 0].plot(tm, np.asarray(d["per_wing_cycle_mean_position"])[i, :, 2], "k-", lw=1.2,
                            label="per-wing cycle mean")
        axes[i, 0].set_ylabel(f"{lab}\nz [m]", fontsize=8)
        for j, c in enumerate("xy"):
            (line,) = axes[i, 1].plot(t, np.degrees(np.asarray(d["per_wing_tilt"])[i, :, j]), lw=0.6, alpha=0.5,
                                      label=f"per-wing tilt {c}")
            if "per_wing_cycle_mean_tilt" in d:
                axes[i, 1].plot(tm, np.degrees(np.asarray(d["per_wing_cycle_mean_tilt"])[i, :, j]), "-", lw=1.4,
                                color=line.get_color(), label=f"per-wing cycle mean {c}")
            axes[i, 1].plot(t, np.degrees(np.asarray(d["averaged_tilt"])[i, :, j]), "--", color=line.get_color(),
                            label=f"averaged tilt {c}")
        axes[i, 1].set_ylabel("tilt [deg]")
        if "cycle_mean_attitude_rms_difference_deg" in r:
            axes[i, 1].set_title(
                f"{lab}: {verdict}: cycle-mean attitude RMS {float(r['cycle_mean_attitude_rms_difference_deg']):.2f} deg, "
                f"position RMS {100 * float(r['cycle_mean_position_rms_difference']):.2f} cm", fontsize=8)
        if lab != "hover" and "step_start" in d:
            for ax in axes[i]:
                ax.axvspan(float(d["step_start"]), float(d["step_end"]), color="0.85", zorder=0)
                ax.axvline(float(d["step_start"]), color="r", lw=0.8, ls=":")
        if "thresholds" in m:
            for ax in axes[i]:
                ax.axvline(float(t[-1]) - float(m["thresholds"]["window"]), color="0.4", lw=0.8, ls="-.")
    axes[0, 0].legend(fontsize=6)
    axes[0, 1].legend(fontsize=6, ncol=2)
    axes[-1, 0].set_xlabel("t [s] (shaded: plate step; dash-dot: start of the compared window)")
    axes[-1, 1].set_xlabel("t [s]")
    return fig


def _plot_loss(plt, curves: dict):
    """The loss curves of every study that has one (loss_curves.png)."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for k, c in curves.items():
        ax.semilogy(np.arange(c.size), np.maximum(c, 1e-300), ".-", label=k)
    _label(ax, "optimizer step", "loss")
    return fig


def _fmt(x) -> str:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        return f"{float(arr):.5g}"
    return "[" + ", ".join(_fmt(v) if np.ndim(v) else f"{v:.4g}" for v in arr) + "]"  # a matrix row by row


def _damping_lines(study) -> list[str]:
    """Summary lines of the damping study."""
    lines = []
    m = study.metrics
    r2 = ", ".join(f"{k[3:]} {float(v):.4f}" for k, v in m.items() if k.startswith("r2_"))
    lines.append(f"  damping  at {float(m['frequency']):.3f} Hz; R^2 {r2}")
    if "drag_height_x" in m or "drag_height_y" in m:
        v, sd = study.values, study.std
        parts = [f"{k} = {float(v[k]):+.3e}" + (f" +/- {float(sd[k]):.1e}" if k in sd else "") + " N m s/m"
                 for k in ("L_v", "M_u") if k in v]
        heights = ", ".join(f"{k[-1]} {1000 * float(m[k]):.1f} mm" for k in ("drag_height_x", "drag_height_y")
                            if k in m)
        lines.append(f"           coupling {', '.join(parts)}; equivalent drag height above the CoM {heights}")
    if "no damping" in study.notes:
        lines.append("           " + study.notes.split("; ")[-1])
    return lines


def _fidelity_lines(m) -> list[str]:
    """Summary lines of the fidelity study (its metrics ``m``)."""
    th = m["thresholds"]
    lines = [f"  fidelity (open loop, +/- pairs): {'PASSED' if m['fidelity_passed'] else 'FAILED'}: pass when "
             f"NRMSE <= {float(th['max_nrmse']):g}, peak ratio in [{th['peak_ratio'][0]:g}, {th['peak_ratio'][1]:g}], "
             "same sign, peak within a wingbeat",
             f"    {'manoeuvre':<28} {'signal':<9} {'NRMSE':>6} {'null':>6} {'peak ratio':>10} {'sign':>7} {'result':>7}"]
    for name, row in m["manoeuvres"].items():
        signal, s = next(iter(row["signals"].items()))
        null = row["null_model"][signal]
        lines.append(f"    {name:<28} {signal:<9} {float(s['nrmse']):6.2f} {float(null['nrmse']):6.2f} "
                     f"{float(s['peak_ratio']):+10.2f} {'same' if s['sign_agrees'] else 'differs':>7} "
                     f"{'pass' if row['passed'] else 'FAIL':>7}")
    return lines


def _plot_fidelity(plt, study):
    """The fidelity study's figure (fidelity_responses.png): per manoeuvre, the
    paired cycle-mean tilt response of the per-wing robot and of the model."""
    d, labels = study.data, study.metrics["labels"]
    t = 1e3 * np.asarray(d["time"])
    fig, axes = plt.subplots(1, len(labels), figsize=(3.2 * len(labels), 3.2), squeeze=False)
    for k, (ax, label) in enumerate(zip(axes[0], labels)):
        row = study.metrics["manoeuvres"][label]
        if "altitude" in row["signals"]:  # a frequency step: the altitude is what it moves
            ax.plot(t, 1e3 * np.asarray(d[f"per_wing_altitude_{k}"]), "C2-", label="per-wing altitude [mm]")
            ax.plot(t, 1e3 * np.asarray(d[f"averaged_altitude_{k}"]), "C2--", label="model altitude [mm]")
        else:
            for i, axis in enumerate(("roll", "pitch")):
                ax.plot(t, np.degrees(np.asarray(d[f"per_wing_tilt_{k}"])[:, i]), f"C{i}-", label=f"per-wing {axis} [deg]")
                ax.plot(t, np.degrees(np.asarray(d[f"averaged_tilt_{k}"])[:, i]), f"C{i}--", label=f"model {axis} [deg]")
        _label(ax, "time [ms]", "half-difference of the +/- pair, cycle mean" if k == 0 else "",
               f"{label}: {'pass' if row['passed'] else 'FAIL'}", legend=6, fontsize=8)
    return fig


#: Study -> the file its plot goes to and what draws it, in the order they are drawn ("loss": every fit's curve).
_PLOTS = {"lift": ("lift_fz_vs_f2.png", _plot_lift), "moments": ("moments_fit.png", _plot_moments),
          "damping": ("damping_fit.png", _plot_damping), "physical": ("physical_fit.png", _plot_physical),
          "loss": ("loss_curves.png", _plot_loss), "validation": ("validation_flights.png", _plot_validation),
          "fidelity": ("fidelity_responses.png", _plot_fidelity)}
#: File names of the plots :func:`write_plots` may draw.
PLOTS = tuple(name for name, _ in _PLOTS.values())


def _validation_lines(m) -> list[str]:
    """Summary lines of the validation study (its metrics ``m``)."""
    lines = []
    lines.append(
        f"  validation: hover frequency {float(m['hover_frequency']):.3f} Hz; fixed-base per-wing lift there / weight = "
        f"{float(m['fixed_base_lift_at_hover_over_weight']):.4f}; per-wing hover mean f / f_h = "
        f"{float(m['per_wing_hover_frequency_over_identified']):.4f}"
    )
    th = m.get("thresholds")
    if th is not None:
        passed = m.get("validation_passed")
        lines.append(
            f"    {'PASSED' if passed else 'FAILED'}: pass when the cycle-mean attitude RMS difference <= "
            f"{float(th['attitude_rms_deg']):g} deg and position RMS difference <= {float(th['position_rms']):g} m "
            f"over the last {float(th['window']):g} s"
        )
    lines.append(f"    {'flight':<18} {'att RMS [deg]':>14} {'pos RMS [m]':>12} {'result':>7} "
                 f"{'alt RMS diff [m]':>17} {'alt err wing/avg [m]':>22}")
    for lab, r in m["flights"].items():
        att = r.get("cycle_mean_attitude_rms_difference_deg")
        pos = r.get("cycle_mean_position_rms_difference")
        verdict = "" if "passed" not in r else ("pass" if r["passed"] else "FAIL")
        lines.append(
            f"    {lab:<18} {_fmt(att) if att is not None else '':>14} {_fmt(pos) if pos is not None else '':>12} "
            f"{verdict:>7} {float(r['altitude_rms_difference']):17.4f} "
            f"{float(r['per_wing_altitude_error_tail']):+10.4f}/{float(r['averaged_altitude_error_tail']):+.4f}"
        )
    return lines


def summary_table(result: IdentificationResult, *, skipped=()) -> str:
    """A plain-text summary: identified values, fit quality, validation; ``skipped``: the reused studies."""
    lines = ["", "flapjax identify: results"]
    head = f"  {'name':<16} {'identified':>30} {'std':>12} {'unit':>10} {'seed':>30}"
    lines += [head, "  " + "-" * (len(head) - 2)]
    for k, v in result.identified.items():
        unit = VALUE_UNITS.get(k, "")
        std = _fmt(result.std[k]) if k in result.std else ""
        seed = _fmt(SEED_VALUES[k]) if k in SEED_VALUES and "robot" not in result.settings else ""  # another robot
        lines.append(f"  {k:<16} {_fmt(v):>30} {std:>12} {unit:>10} {seed:>30}")
    st = result.studies
    lines.append("")
    if "lift" in st:
        m = st["lift"].metrics
        lines.append(
            f"  lift     k_f gradient vs least squares: {100 * float(m['k_f_relative_difference']):+.2e} %, "
            f"R^2 {float(m['r2']):.5f}, F_z/f^2 spread {100 * float(m['lift_per_f2_spread']):.2f} %, "
            f"hover frequency sqrt(m g / k_f) = {float(m['hover_frequency']):.3f} Hz"
        )
    if "moments" in st:
        m = st["moments"].metrics
        lines.append(
            f"  moments  R^2 roll {float(m['r2_roll']):.5f}, pitch {float(m['r2_pitch']):.5f}; "
            f"cross moments <= {float(m['cross_moment_max']):.2e} N m (primary <= {float(m['primary_moment_max']):.2e})"
        )
    if "damping" in st:
        lines += _damping_lines(st["damping"])
    if "physical" in st:
        m = st["physical"].metrics
        lines.append(
            f"  physical relative F_z residual RMS {100 * float(m['relative_residual_rms']):.2f} % "
            f"({m['target_source']})"
        )
    if "validation" in st:
        lines += _validation_lines(st["validation"].metrics)
    if "fidelity" in st:
        lines += _fidelity_lines(st["fidelity"].metrics)
    if skipped:
        lines.append(f"  reused from a previous run: {', '.join(skipped)} (use --fresh to recompute)")
    return "\n".join(lines)
