"""``flapjax identify --data WAVEFORM.csv``: fit a phase-resolved stand
record (:func:`~flapjax.identify.flapper.waveform.fit_waveform`) and write
``results.json`` and ``waveform_fit.png``."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from flapjax.identify.flapper.outputs import pyplot, save_figure, with_std
from flapjax.identify.flapper.waveform import UNITS, fit_waveform
from flapjax.identify.flapper.waveform_format import StandWaveform, load_stand_waveform
from flapjax.identify.results import lock_output_dir, versions, write_json

_LABELS = {"fz_n": "F_z [N]", "fx_n": "F_x [N]", "fy_n": "F_y [N]", "mx_nm": "M_x [N m]", "my_nm": "M_y [N m]"}


def _unit(channel: str) -> str:
    """``"N"`` or ``"N m"`` from a channel or offset name (``fz_n``, ``mx_offset``)."""
    return "N m" if channel.startswith("m") else "N"


def write_waveform_plot(data: StandWaveform, result: Mapping[str, Any], out_dir: str | Path) -> Path:
    """``waveform_fit.png``: per channel (rows) and condition (columns) the
    measured bin means, the fitted model and the residual with its +-2 sigma
    band; held-out conditions titled as such."""
    plt = pyplot()
    meas, fitted = np.asarray(result["measured"]), np.asarray(result["fitted"])
    channels, conds = result["channels"], result["conditions"]
    nc, m = len(channels), len(conds)
    fig, axes = plt.subplots(2 * nc, m, figsize=(2.6 * m + 0.8, 2.6 * nc + 0.6), squeeze=False, sharex=True)
    for c, cond in enumerate(conds):
        rows = np.nonzero(data.condition == c)[0]
        order = rows[np.argsort(data.phase[rows])]
        th = data.phase[order]
        title = f"{cond['frequency_hz']:g} Hz, plates ({cond['pitch_plate_rad']:g}, {cond['roll_plate_rad']:g})"
        if cond["held_out"]:
            title += "\nheld out (predicted)"
        for j, ch in enumerate(channels):
            ax, axr = axes[2 * j, c], axes[2 * j + 1, c]
            ax.plot(th, meas[order, j], "o", ms=2.5, label="measured")
            ax.plot(th, fitted[order, j], "-", lw=1.0, color="C3" if cond["held_out"] else "C1", label="model")
            s = result["residual_std"][ch]
            axr.axhspan(-2 * s, 2 * s, color="0.9")
            axr.axhline(0.0, color="0.5", lw=0.8)
            axr.plot(th, meas[order, j] - fitted[order, j], ".", ms=3, color="C3" if cond["held_out"] else "C0")
            if c == 0:
                ax.set_ylabel(_LABELS[ch], fontsize=8)
                axr.set_ylabel("residual", fontsize=8)
            if j == 0:
                ax.set_title(title, fontsize=8)
            if j == 0 and c == 0:
                ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("stroke phase [rad]")
    values = ", ".join(f"{k} {result['values'][k]:.4g} +- {result['std'][k]:.1g}" for k in result["parameters"])
    fig.suptitle(f"phase-resolved stand fit: {values}", fontsize=9)
    return save_figure(fig, Path(out_dir) / "waveform_fit.png", dpi=100)


def run_waveform_identification(path: str | Path, out_dir: str | Path, *, echo: Callable[[str], None] = print,
                                **options) -> dict:
    """Fit the per-wing physical parameters to the phase-resolved stand
    record at ``path`` (options: :func:`fit_waveform`) and write
    ``out_dir/results.json`` (every value ``name`` with ``name_std``, the
    sensor offsets, the held-out conditions' prediction error, residual
    standard deviations, correlations), ``per_wing.json`` (the fitted values
    alone, for :func:`flapjax.identify.flapper.physical.apply_physical`) and
    ``waveform_fit.png``."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    with lock_output_dir(out, name="out"):
        data = load_stand_waveform(path)
        freqs, _ = data.conditions()
        echo(f"stand waveform {path}: {data.n} rows, {data.n_conditions} conditions "
             f"({', '.join(f'{f:g}' for f in freqs)} Hz), channels {list(data.channel_names)}")
        echo("per-wing physical parameters through the fixed-base rollout ...")
        res = fit_waveform(data, echo=echo, **options)
        echo(f"{'parameter':<20}{'value':>14}{'std':>12}  unit")
        for k in res["parameters"]:
            echo(f"{k:<20}{res['values'][k]:>14.5e}{res['std'][k]:>12.2e}  {UNITS[k]}")
        for k, v in res["offsets"].items():
            echo(f"{k:<20}{v:>14.5e}{res['offsets_std'][k]:>12.2e}  {_unit(k)}")
        for ch, v in res["validation"].items():
            echo(f"held-out {ch:<7} rms {v['rms']:.3e} {_unit(ch)} ({v['relative_to_sigma']:.2f} sigma, "
                 f"{100 * v['relative_to_measured']:.2f} % of the measured RMS)")
        plot = write_waveform_plot(data, res, out)
        results: dict[str, Any] = {"study": "stand_waveform", "source": str(path), "rows": data.n}
        results.update(with_std(res["values"], res["std"]))
        results.update(with_std(res["offsets"], res["offsets_std"]))
        results["units"] = {**{k: UNITS[k] for k in res["parameters"]}, **{k: _unit(k) for k in res["offsets"]}}
        results.update({k: res[k] for k in ("relative_std", "residual_std", "validation", "correlation",
                                            "conditions", "channels", "iterations", "reason", "duration",
                                            "discard", "start")})
        write_json(out / "per_wing.json", res["values"])
        results["plots"] = [plot.name]
        results["seconds"] = time.perf_counter() - t0
        results["versions"] = versions()
        write_json(out / "results.json", results)
    echo(f"results: {out / 'results.json'}")
    return results
