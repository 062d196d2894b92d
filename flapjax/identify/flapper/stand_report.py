"""What a stand identification shows: the residual and fit plots and the
plain-text table of the fitted values."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flapjax.identify.outputs import held_out_lines, parameter_table, pyplot, save_figure
from flapjax.identify.flapper.stand_fit import StandFit
from flapjax.data.stand_table import CHANNEL_LABELS, CHANNEL_UNITS, StandData
from flapjax.identify.flapper.stand_prediction import PARAMETERS



def write_stand_plots(data: StandData, result: StandFit, out_dir: str | Path) -> list[Path]:
    """``stand_residuals.png`` (residual of every channel against frequency,
    fitted and held-out rows, +-2 sigma band) and ``stand_fit.png`` (measured
    against predicted, and F_z against f^2 with the fitted curve)."""
    plt = pyplot()
    out = Path(out_dir)
    files = []
    pred = result.predict(data)
    meas = np.stack([data.channels[ch] for ch in result.channels], axis=1)
    held = np.zeros(data.n, dtype=bool)
    held[result.validation_rows] = True
    nc = len(result.channels)
    fig, axes = plt.subplots(nc, 1, figsize=(6.5, 2.2 * nc + 0.4), squeeze=False, sharex=True)
    for j, ch in enumerate(result.channels):
        ax = axes[j, 0]
        r = meas[:, j] - pred[:, j]
        s = result.sigma[ch]
        ax.axhspan(-2 * s, 2 * s, color="0.9", label="+-2 sigma (fitted rows)")
        ax.axhline(0.0, color="0.5", lw=0.8)
        ax.plot(data.frequency[~held], r[~held], "o", ms=3.5, label="fitted rows")
        if held.any():
            ax.plot(data.frequency[held], r[held], "x", ms=6, color="C3", label="held-out rows")
        ax.set_ylabel(f"residual {CHANNEL_LABELS[ch]}", fontsize=8)
        if j == 0:
            ax.legend(fontsize=7, loc="best")
    axes[-1, 0].set_xlabel("frequency [Hz]")
    fig.suptitle("stand fit: measured minus model", fontsize=10)
    files.append(save_figure(fig, out / "stand_residuals.png", dpi=110))

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    zero = np.all(data.plate == 0, axis=1)
    f2 = data.frequency**2
    axes[0].plot(f2[zero], data.channels["fz_n"][zero], "o", label="measured, plate level")
    if (~zero).any():
        axes[0].plot(f2[~zero], data.channels["fz_n"][~zero], ".", color="0.6", label="measured, plate tilted")
    ff = np.linspace(0.0, data.frequency.max() * 1.05, 100)
    k_f = result.values["k_f"]
    axes[0].plot(ff**2, k_f * ff**2 + result.values.get("fz_offset", 0.0), "-",
                 label=f"k_f = {k_f:.5e} +- {result.std['k_f']:.1e} N/Hz^2")
    axes[0].set_xlabel("f^2 [Hz^2]")
    axes[0].set_ylabel("F_z [N]")
    axes[0].legend(fontsize=8)
    for j, ch in enumerate(result.channels):
        scale = np.sqrt(np.mean(meas[:, j] ** 2)) or 1.0
        axes[1].plot(meas[:, j] / scale, pred[:, j] / scale, "o", ms=3, label=ch)
    lim = axes[1].get_xlim()
    axes[1].plot(lim, lim, "k--", lw=0.8)
    axes[1].set_xlabel("measured / channel RMS")
    axes[1].set_ylabel("model / channel RMS")
    axes[1].legend(fontsize=8)
    files.append(save_figure(fig, out / "stand_fit.png", dpi=110))
    return files


def stand_summary(result: StandFit) -> str:
    """Plain-text table of the fitted values and of the moment gains held
    (``held`` in the std column; the notes say why)."""
    reported = result.reported()
    table = parameter_table(reported, result.std, {n: PARAMETERS[n][1] for n in reported})
    lines = [table]
    if result.validation:
        lines.append(held_out_lines(result.validation, CHANNEL_UNITS))
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)
