"""A phase-resolved stand record tells the admissible calibrations apart.

The seed's table 11.2 leaves the per-wing calibration open: the candidates
of ``identification/history/flapper_damped_search.json`` reproduce it
equally, yet their driven-base D_y changes sign
(:mod:`benchmarks.calibration_admissible_set`). This script asks whether the
data the project can read instead, a phase-resolved stand record at several
frequencies and a plate tilt, pins the calibration and with it D_x, D_y,
L_v and M_u. For each chosen candidate (default: the nominal calibration,
and the candidates at the minimum and maximum of D_y and the maximum of
M_u) it

1. makes that robot's record (``identification/data/make_stand_waveform.py``:
   five conditions at 25 to 40 Hz, one with the pitch plate at 0.2 rad, 24
   phase bins, sensor offsets and noise drawn with seed 0) with the
   candidate's values hidden, and the wings' inertia scaled by 0.85;
2. fits every value the candidate sets (``lift_scale``, the hinge's
   stiffness and damping, the stops' angle, stiffness and width) and the
   wings' inertia scale to it with
   :func:`flapjax.runs.waveform.run_waveform_identification`,
   from the nominal values (``fit_waveform`` frees ``lift_scale``, the stop
   angle and the inertia scale first, then all of them from there: from the
   nominal values directly, the stops' stiff nonlinearity leads the
   Levenberg-Marquardt steps to a local minimum far above the noise);
3. propagates the fit's Gauss-Newton covariance to D_x, D_y, L_v and M_u
   (:func:`benchmarks.calibration_determinacy.determinacy`) and compares
   them with the candidate's own values (the damping study at the true
   calibration).

Pass per candidate: every fitted value within 3 std of the truth, and each
derivative's std at most 20 % of its value with its sign certain
(``abs(value) > 3 std``) and the true derivative within 3 std.

Run: ``python -m benchmarks.calibration_recovery [--only LABEL ...]
[--out-root DIR]``; writes ``benchmarks/results/calibration_recovery.{md,json}``.
About 8 minutes per candidate on 2 shared cores.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.calibration_admissible_set import CALIBRATION_KEYS, admissible_candidates
from benchmarks.calibration_determinacy import DRIVEN, _driven_derivatives, determinacy

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
MAKER = ROOT / "identification" / "data" / "make_stand_waveform.py"
#: Candidates run by default (labels of :func:`admissible_candidates` start with these).
DEFAULT_LABELS = ("nominal", "#129", "#187", "#183")
#: Values fitted: the candidate's and the wings' inertia scale.
FITTED = (*CALIBRATION_KEYS, "wing_inertia_scale")
#: The hidden wings' inertia scale of every record.
INERTIA_SCALE = 0.85


def _maker():
    spec = importlib.util.spec_from_file_location("make_stand_waveform", MAKER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _truth(calibration: dict[str, float]) -> dict[str, float]:
    """The record's hidden values: the candidate over the nominal calibration."""
    from flapjax.sim import flapper as fl
    from flapjax.sim.flapper.stand import nominal_physical, nominal_stops

    robot = fl.make_robot("fixed", "wing", backend="rigid")
    nominal = {**nominal_physical(robot), **nominal_stops(robot)}
    return {**{k: nominal[k] for k in CALIBRATION_KEYS}, **calibration, "wing_inertia_scale": INERTIA_SCALE}


def _held(fitted: tuple[str, ...]) -> dict[str, float]:
    """The nominal values of what a fit of ``fitted`` holds."""
    return {k: v for k, v in _truth({}).items() if k not in fitted and k != "wing_inertia_scale"}


def recover(label: str, calibration: dict[str, float], out: Path, fitted: tuple[str, ...] = FITTED,
            **options) -> dict[str, Any]:
    """Make ``label``'s record, fit ``fitted`` to it (the rest held at their
    nominal values; ``options``: of ``fit_waveform``), propagate; the row of
    the report."""
    from flapjax.data.tables import write_sample
    from flapjax.validation import ConfigError
    from flapjax.runs.waveform import run_waveform_identification

    t0 = time.perf_counter()
    truth = _truth(calibration)
    columns, hidden = _maker().make_waveform_record(0, truth)
    out.mkdir(parents=True, exist_ok=True)
    record = out / "record.csv"
    write_sample(record, columns, hidden, f"phase-resolved stand record of the calibration {label}")
    run_waveform_identification(record, out_dir=out / "fit", echo=lambda s: None, parameters=fitted, **options)
    try:
        d = determinacy(out / "fit" / "results.json")
    except ConfigError as exc:  # a value the fit drove out of the calibration's range
        fit = json.loads((out / "fit" / "results.json").read_text())
        return {"label": label, "held": list(_held(fitted)), "passed": False, "error": str(exc),
                "fitted": {n: fit[n] for n in fitted}, "notes": fit["notes"], "seconds": time.perf_counter() - t0}
    true_derivatives = _driven_derivatives({k: truth[k] for k in FITTED}, d["frequency"])
    fitted_ok = {n: abs(v["value"] - truth[n]) <= 3 * v["std"] for n, v in d["fitted"].items()}
    held_ok = {n: bool(np.isclose(nominal_value, truth[n], rtol=1e-6)) for n, nominal_value in _held(fitted).items()}
    rows = {}
    for i, (sym, r) in enumerate(d["derivatives"].items()):
        rows[sym] = {**{k: r[k] for k in ("value", "std", "relative_std", "sign_certain")},
                     "true": float(true_derivatives[i]),
                     "within_3_std": bool(abs(r["value"] - true_derivatives[i]) <= 3 * r["std"])}
        rows[sym]["ok"] = bool(r["relative_std"] <= 0.2 and r["sign_certain"] and rows[sym]["within_3_std"])
    fit = json.loads((out / "fit" / "results.json").read_text())
    misfit = {c: s / hidden["noise_std"][c] for c, s in fit["residual_std"].items()}
    return {"label": label, "truth": {k: truth[k] for k in FITTED}, "fitted": d["fitted"], "held": list(held_ok),
            "duration": fit["duration"], "residual_over_noise": misfit,
            "fitted_within_3_std": fitted_ok, "held_at_truth": held_ok, "frequency": d["frequency"],
            "derivatives": rows,
            "passed": bool(all(fitted_ok.values()) and all(r["ok"] for r in rows.values())),
            "seconds": time.perf_counter() - t0}


def markdown(rows: list[dict]) -> str:
    lines = ["# A phase-resolved stand record tells the admissible calibrations apart", "",
             "Produced by `python -m benchmarks.calibration_recovery`: per candidate calibration (each reproduces "
             "the seed's table 11.2), its synthetic phase-resolved stand record is fitted with every calibration "
             f"value and the wings' inertia scale free ({', '.join(FITTED)}; a section names what a run held), from "
             "the nominal values; the fit's "
             "covariance is carried to the driven-base derivatives (damping study, `--quick` settings, at the "
             "fitted calibration's hover frequency). Pass: every fitted value within 3 std of the truth, and "
             "each derivative with std / abs(value) <= 20 %, a certain sign (abs > 3 std) and the truth within "
             "3 std.", ""]
    for r in rows:
        held = f", held at their nominal values: {', '.join(r['held'])}" if r.get("held") else ""
        if "error" in r:
            lines += [f"## {r['label']}: FAIL ({r['seconds']:.0f} s{held})", "", f"The fit gave {r['fitted']}; "
                      f"its notes: {' '.join(r['notes'])}", "", f"Not propagated: {r['error']}", ""]
            continue
        lines += [f"## {r['label']}: {'PASS' if r['passed'] else 'FAIL'} ({r['seconds']:.0f} s{held})", "",
                  f"Fit window {r['duration']:g} s per condition; residual std over the record's noise: "
                  + ", ".join(f"{c} {v:.2f}" for c, v in r["residual_over_noise"].items()) + ".", "",
                  "| value | truth | fitted | std | within 3 std |", "|---|---|---|---|---|"]
        lines += [f"| {n} | {r['truth'][n]:.6g} | {v['value']:.6g} | {v['std']:.2g} | "
                  f"{'yes' if r['fitted_within_3_std'][n] else 'no'} |" for n, v in r["fitted"].items()]
        lines += ["", "| derivative | true | identified | std | std / abs(value) | sign certain | truth within 3 std |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {s} | {d['true']:+.4e} | {d['value']:+.4e} | {d['std']:.2e} | {100 * d['relative_std']:.3f} % | "
                  f"{'yes' if d['sign_certain'] else 'no'} | {'yes' if d['within_3_std'] else 'no'} |"
                  for s, d in r["derivatives"].items()]
        lines.append("")
    spread = {s: [r["derivatives"][s]["true"] for r in rows if "derivatives" in r] for s in DRIVEN}
    if not all(spread.values()):
        return "\n".join(lines) + "\n"
    lines += ["Across these candidates the true derivatives span: "
              + "; ".join(f"{s} {min(v):+.2e} to {max(v):+.2e}" for s, v in spread.items()) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=list(DEFAULT_LABELS), help="candidate labels (their start)")
    ap.add_argument("--out-root", type=Path, default=Path("out/calibration_recovery"))
    ap.add_argument("--fit", nargs="+", default=list(FITTED), choices=FITTED,
                    help="values fitted (the rest held at their nominal values): the power check holds the stops")
    ap.add_argument("--name", default="calibration_recovery", help="stem of the results files")
    ap.add_argument("--duration", type=float, default=0.35, help="the fit's rollout per condition [s]")
    args = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    rows = []
    for label, calibration, _ in admissible_candidates():
        if not any(label.startswith(p) for p in args.only):
            continue
        folder = args.out_root / label.split(" ")[0].lstrip("#")
        rows.append(recover(label, calibration, folder, tuple(args.fit), duration=args.duration))
        print(f"{label}: {'PASS' if rows[-1]['passed'] else 'FAIL'} ({rows[-1]['seconds']:.0f} s)", flush=True)
        (RESULTS / f"{args.name}.json").write_text(json.dumps(rows, indent=1, default=float))
        (RESULTS / f"{args.name}.md").write_text(markdown(rows))
    print(markdown(rows))
    return 0 if rows and all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
