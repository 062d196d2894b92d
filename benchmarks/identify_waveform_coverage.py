"""Coverage of the phase-resolved stand fit's uncertainties over noise seeds.

Generates a record per seed (``identification/data/make_stand_waveform.py``:
fixed hidden lift scale, hinge stiffness and wing inertia, a fresh sensor
offset and fresh noise each seed), fits it
(:func:`flapjax.identify.flapper.waveform.fit_waveform`) and counts, for
every parameter and offset, the seeds whose hidden value lies within the
reported 2-sigma interval. Calibrated standard deviations give about 95 %.

Run: ``python -m benchmarks.identify_waveform_coverage [--seeds 20] [--first 0] [--json FILE]``
(about 15 s per seed on a 2-core CPU after a first fit of about 30 s).

Two verdicts are printed, as in ``benchmarks/identify_data_coverage.py``:
the per-parameter one (each physical parameter covered in at least 19 of 20
seeds; with calibrated intervals a parameter meets it with probability
0.77) and the calibration one, which sets the exit code: pooled coverage of
at least 90 % and every RMS z-score inside the 99.9 % chi-square band of
the seed count.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PHYSICAL = ("lift_scale", "hinge_stiffness", "wing_inertia_scale")


def load_generator():
    """The sample-record script as a module (it is a file, not a package)."""
    path = ROOT / "identification" / "data" / "make_stand_waveform.py"
    spec = importlib.util.spec_from_file_location("make_stand_waveform", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def coverage(seeds, *, k_sigma: float = 2.0, progress=print) -> dict:
    """Per-parameter coverage, z-scores and held-out errors over ``seeds``."""
    from flapjax.identify.flapper.waveform import fit_waveform
    from flapjax.identify.flapper.waveform_format import stand_waveform
    from flapjax.sim import flapper as fl

    gen = load_generator()
    robot = fl.make_robot("fixed", "wing", backend="rigid")
    hits: dict[str, int] = {}
    z: dict[str, list[float]] = {}
    val_sigma: dict[str, list[float]] = {}
    seconds = []
    for seed in seeds:
        cols, truth = gen.make_waveform_record(seed)
        data = stand_waveform(cols["frequency_hz"], cols["phase_rad"], cols["fz_n"],
                              pitch_plate=cols["pitch_plate_rad"], roll_plate=cols["roll_plate_rad"],
                              fx_n=cols["fx_n"], fy_n=cols["fy_n"], source=f"seed {seed}")
        t0 = time.perf_counter()
        res = fit_waveform(data, robot=robot)
        seconds.append(time.perf_counter() - t0)
        values = {**res["values"], **res["offsets"]}
        std = {**res["std"], **res["offsets_std"]}
        for name, value in values.items():
            zi = (value - truth[name]) / std[name]
            z.setdefault(name, []).append(float(zi))
            hits[name] = hits.get(name, 0) + int(abs(zi) <= k_sigma)
        for ch, v in res["validation"].items():
            val_sigma.setdefault(ch, []).append(v["relative_to_sigma"])
        progress(f"seed {seed}: " + ", ".join(f"{k} z {z[k][-1]:+.2f}" for k in values)
                 + f" ({seconds[-1]:.1f} s)")
    n = len(seconds)
    return {
        "seeds": n,
        "k_sigma": k_sigma,
        "covered": hits,
        "z_rms": {k: float(np.sqrt(np.mean(np.square(v)))) for k, v in z.items()},
        "z": z,
        "validation_rms_over_sigma_mean": {k: float(np.mean(v)) for k, v in val_sigma.items()},
        "pooled_coverage": float(sum(hits.values()) / (n * len(hits))),
        "fit_seconds_first": seconds[0],
        "fit_seconds_median_after_first": float(np.median(seconds[1:])) if n > 1 else math.nan,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="2-sigma coverage of the phase-resolved stand fit over noise seeds")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first", type=int, default=0, help="first noise seed")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = ap.parse_args(argv)
    out = coverage(range(args.first, args.first + args.seeds))
    need = math.ceil(0.95 * args.seeds)
    print(f"phase-resolved stand fit, {out['seeds']} noise seeds, hidden value within +-{out['k_sigma']:g} sigma:")
    print(f"{'parameter':<20}{'covered':>10}{'z rms':>8}")
    for name, h in out["covered"].items():
        print(f"{name:<20}{h:>6} / {out['seeds']:<3}{out['z_rms'][name]:>8.2f}")
    print(f"pooled coverage {100 * out['pooled_coverage']:.1f} % (nominal 95.4 %)")
    print("held-out condition error / residual std, mean over seeds: "
          + ", ".join(f"{k} {v:.2f}" for k, v in out["validation_rms_over_sigma_mean"].items()))
    print(f"fit time: first {out['fit_seconds_first']:.1f} s (compilation), then "
          f"{out['fit_seconds_median_after_first']:.1f} s per record")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    short = [k for k in PHYSICAL if out["covered"][k] < need]
    if short:
        print(f"per-parameter: {short} covered in fewer than {need} of {args.seeds} seeds")
    else:
        print(f"per-parameter: every physical parameter covered in at least {need} of {args.seeds} seeds")
    from scipy.stats import chi2

    lo, hi = (math.sqrt(chi2.ppf(q, args.seeds) / args.seeds) for q in (0.0005, 0.9995))
    off = [k for k, v in out["z_rms"].items() if not lo <= v <= hi]
    ok = out["pooled_coverage"] >= 0.90 and not off
    print(f"calibration: pooled coverage {100 * out['pooled_coverage']:.1f} % (>= 90 %), z rms band "
          f"[{lo:.2f}, {hi:.2f}]{'' if not off else f', outside: {off}'} -> {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
