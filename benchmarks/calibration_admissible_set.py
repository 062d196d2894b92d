"""Identification, validation, fidelity and hover across the admissible
per-wing calibrations (the determinacy of a phase-resolved stand fit:
:mod:`benchmarks.calibration_determinacy`).

The seed's table 11.2 (cycle-mean lift at three frequencies) does not pin
the per-wing robot's calibration: the 192 candidates of
``identification/history/flapper_damped_search.json`` (feathering hinge
stiffness and damping, stops, ``lift_scale``) all reproduce it, yet their
driven-base derivatives differ (D_y changes sign). This script takes the
candidates at the extremes of D_x, D_y and M_u (min and max of each) and
the nominal calibration (the baseline, measured in the same run), runs
``flapjax identify --quick`` on each through the Python API with the
candidate as ``[calibration]`` (studies lift, moments, damping,
plate_motion, validation, fidelity; ``physical`` re-fits ``lift_scale`` to
the same table and is left out), then flies the per-wing free robot with
that calibration under ``hover_rollout``'s defaults (the designed gains of
the per-wing linear hover model, :func:`flapjax.sim.flapper.hover_gains.designed_gains`,
at the hover frequency ``sqrt(m g / k_f)`` of the identified model; 2 s
from z = 0.5 m on the periodic orbit; pass: cycle-mean tilt < 1 deg, tilt
RMS < 3 deg, altitude error < 5 mm over the last 0.5 s).

Run: ``python -m benchmarks.calibration_admissible_set [--out-root DIR]
[--only LABEL ...] [--hover-backend rigid|mjx]``. Each candidate's
identification goes to ``DIR/<label>/`` and resumes there; rows are written
after each candidate to ``benchmarks/results/calibration_admissible_set.json``
and the table to ``benchmarks/results/calibration_admissible_set.md``; with
``--only`` the rows run replace theirs among the saved ones (``meta.rerun``
names them, ``meta.seconds`` is that run's).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SEARCH = ROOT / "identification" / "history" / "flapper_damped_search.json"
RESULTS = Path(__file__).parent / "results"
CALIBRATION_KEYS = ("hinge_stiffness", "hinge_damping", "stop_angle", "stop_stiffness", "stop_width", "lift_scale")
STUDIES = ["lift", "moments", "damping", "plate_motion", "validation", "fidelity"]
#: Derivatives whose spread the table reports: symbol -> (where in a row, key, unit). "driven": the
#: damping study on the driven base (D_x, D_y its signed closed-form rate-damping slopes, the search's
#: D_x, D_y); "identified": the final model (L_v, M_u, D_w refitted from free-flight pulses by plate_motion).
DERIVATIVES = {
    "k_f": ("identified", "k_f", "N/Hz^2"), "k_roll": ("identified", "k_roll", "N m/rad"),
    "k_pitch": ("identified", "k_pitch", "N m/rad"), "k_v": ("identified", "k_v", "N s/m"),
    "D_x (driven)": ("driven_slopes", "slope_w_x", "N m s/rad"), "D_y (driven)": ("driven_slopes", "slope_w_y", "N m s/rad"),
    "L_v (driven)": ("driven_slopes", "slope_L_v", "N m s/m"), "M_u (driven)": ("driven_slopes", "slope_M_u", "N m s/m"),
    "D_w,x (free flight)": ("identified", "D_w_x", "N m s/rad"), "D_w,y (free flight)": ("identified", "D_w_y", "N m s/rad"),
    "L_v (free flight)": ("identified", "L_v", "N m s/m"), "M_u (free flight)": ("identified", "M_u", "N m s/m"),
}


def admissible_candidates(path: Path = SEARCH) -> list[tuple[str, dict[str, float], dict[str, float]]]:
    """``(label, calibration, search derivatives)`` of the nominal calibration
    (empty) and of the search candidates at the min and max of D_y, M_u and
    D_x, a candidate at two extremes listed once under both labels."""
    cands = json.loads(path.read_text())
    picks: dict[int, list[str]] = {}
    for key in ("D_y", "M_u", "D_x"):
        vals = np.array([c[key] for c in cands])
        for end, i in (("min", int(np.argmin(vals))), ("max", int(np.argmax(vals)))):
            picks.setdefault(i, []).append(f"{end} {key}")
    out = [("nominal", {}, {})]
    for i, labels in picks.items():
        c = cands[i]
        out.append((f"#{i} ({', '.join(labels)})", {k: float(c[k]) for k in CALIBRATION_KEYS},
                    {k: float(c[k]) for k in ("D_x", "D_y", "M_u")}))
    return out


def _driven_slopes(metrics) -> dict[str, float]:
    """The damping study's signed closed-form slopes (``slope_w_x``: D_x, ...)."""
    return {k: float(v) for k, v in metrics.items() if k.startswith("slope_")}


def _flat(final) -> dict[str, float]:
    values, _, _ = final.flat_values()
    return {k: float(v) for k, v in values.items()}


def _validation_row(final) -> dict[str, Any]:
    v = final.validation or {}
    flights = v.get("flights", {})
    att = [r["cycle_mean_attitude_rms_difference_deg"] for r in flights.values()]
    pos = [r["cycle_mean_position_rms_difference"] for r in flights.values()]
    return {"passed": bool(v.get("validation_passed", False)), "attitude_rms_deg_max": max(att) if att else math.nan,
            "position_rms_max": max(pos) if pos else math.nan,
            "flights_passed": {k: bool(r["passed"]) for k, r in flights.items()}}


def _fidelity_row(final) -> dict[str, Any]:
    study = final.studies.get("fidelity")
    if study is None:
        return {}
    m = study.metrics
    rows = {}
    for name, row in m["manoeuvres"].items():
        signal, s = next(iter(row["signals"].items()))
        rows[name] = {"signal": signal, "nrmse": float(s["nrmse"]), "peak_ratio": float(s["peak_ratio"]),
                      "passed": bool(row["passed"])}
    return {"passed": bool(m["fidelity_passed"]), "manoeuvres": rows}


def hover_check(calibration: dict, averaged, *, backend: str = "rigid", duration: float = 2.0) -> dict[str, Any]:
    """The hover of the per-wing free robot with ``calibration`` under
    ``hover_rollout``'s defaults (designed gains at the hover frequency of
    ``averaged``, which also sets the robot's stroke frequency), from rest on
    the periodic orbit at z = 0.5 m: the hover quality over the last 0.5 s
    [deg, deg, m] and whether it meets the bounds."""
    import jax.numpy as jnp

    from flapjax.sim import flapper as fl
    from flapjax.sim.flapper.hover import hover_quality
    from flapjax.sim.flapper.stand import calibrate

    robot = fl.make_robot("free", "wing", backend=backend)
    f_h = float(jnp.sqrt(averaged.mass * averaged.gravity / averaged.lift_coefficient))
    robot, params = calibrate(robot, fl.default_params(robot, frequency=f_h, averaged=averaged), calibration)
    target = jnp.asarray([0.0, 0.0, 0.5])
    record_every = 10
    n = int(round(duration / robot.dt)) // record_every * record_every
    st = fl.init_state(robot, params, position=target)
    _, rec = fl.hover_rollout(robot, params, st, n, target=target, record_every=record_every, checkpoint=False)
    q = hover_quality(rec, target, frequency=f_h, record_dt=robot.dt * record_every)
    return {"passed": bool(q.meets()), "cycle_mean_tilt_deg": math.degrees(float(q.cycle_mean_tilt)),
            "tilt_rms_deg": math.degrees(float(q.tilt_rms)), "altitude_error_m": float(q.altitude_error),
            "hover_frequency": f_h, "backend": backend}


def _failed_row(label: str, calibration: dict, out: Path, exc: Exception, seconds: float) -> dict[str, Any]:
    """The row of a candidate whose identification stopped with ``exc``: the
    values of the studies it finished (saved in ``out/studies``)."""
    from flapjax.identify.flapper.results import IdentificationResult
    from flapjax.files import read_json
    from flapjax.identify.results import StudyResult

    done = {p.stem: StudyResult.from_dict(read_json(p)["result"]) for p in sorted((out / "studies").glob("*.json"))}
    final = IdentificationResult.from_studies({k: done[k] for k in STUDIES if k in done})
    damping = done.get("damping")
    return {"label": label, "calibration": calibration, "identified": _flat(final), "error": str(exc),
            "finished_studies": [k for k in STUDIES if k in done],
            "driven_slopes": {} if damping is None else _driven_slopes(damping.metrics),
            "validation": {"passed": False, "attitude_rms_deg_max": math.nan, "error": True},
            "fidelity": {"passed": False, "manoeuvres": {}},
            "hover": {"passed": False, "tilt_rms_deg": math.nan, "cycle_mean_tilt_deg": math.nan,
                      "altitude_error_m": math.nan, "error": True},
            "identify_seconds": seconds}


def run_candidate(label: str, calibration: dict, out: Path, *, hover_backend: str,
                  studies: list[str] = STUDIES) -> dict[str, Any]:
    """Identify (``--quick`` settings, ``studies``) with ``calibration``
    into ``out`` and fly the hover; one row of the table."""
    from flapjax.identify.flapper.config import default_config
    from flapjax.runs.flapper_studies import run_identification
    from flapjax.validation import ConfigError

    cfg = default_config(quick=True)
    cfg["run"]["studies"], cfg["run"]["plots"] = list(studies), False
    cfg["calibration"] = dict(calibration)
    t0 = time.perf_counter()
    try:
        final = run_identification(cfg, out_dir=out, progress=False, echo=lambda s: None)
    except ConfigError as exc:  # the identified values do not make a valid averaged model: a finding, kept
        return _failed_row(label, calibration, out, exc, time.perf_counter() - t0)
    t_identify = time.perf_counter() - t0
    avg = final.to_cycle_averaged_params()
    damping = final.studies["damping"]
    row = {"label": label, "calibration": calibration, "identified": _flat(final),
           "driven_base": {k: np.asarray(v).tolist() for k, v in damping.values.items()},
           "driven_slopes": _driven_slopes(damping.metrics),
           "validation": _validation_row(final), "fidelity": _fidelity_row(final),
           "identify_seconds": t_identify}
    t1 = time.perf_counter()
    row["hover"] = hover_check(calibration, avg, backend=hover_backend)
    row["hover_seconds"] = time.perf_counter() - t1
    return row


def spread(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per derivative over the rows: mean, std, std / |mean|, (max - min) /
    |mean| and whether every row has the same sign."""
    out = {}
    for symbol, (where, key, unit) in DERIVATIVES.items():
        x = np.array([r[where][key] for r in rows if key in r.get(where, {})])
        if x.size == 0:
            continue
        mean = float(np.mean(x))
        out[symbol] = {"key": f"{where}.{key}", "unit": unit, "mean": mean, "std": float(np.std(x, ddof=1)) if x.size > 1 else 0.0,
                       "min": float(x.min()), "max": float(x.max()),
                       "relative_std": float(np.std(x, ddof=1) / abs(mean)) if x.size > 1 and mean else math.inf,
                       "relative_range": float((x.max() - x.min()) / abs(mean)) if mean else math.inf,
                       "sign_certain": bool(np.all(x > 0) or np.all(x < 0))}
    return out


def _fmt(x: float) -> str:
    return f"{x:+.3e}" if isinstance(x, float) and math.isfinite(x) else str(x)


def _hover_cell(h: dict | None) -> str:
    if h is None:
        return "not run"
    return (f"{'pass' if h['passed'] else 'FAIL'} ({h['tilt_rms_deg']:.2f} deg, {h['cycle_mean_tilt_deg']:.2f} deg, "
            f"{1e3 * h['altitude_error_m']:.1f} mm)")


def _rerun_note(meta: dict) -> str:
    """Which rows the last run (``--only``) made; the others are an earlier run's."""
    if not meta.get("rerun"):
        return ""
    return (" The wall time is that of the run with `--only` that made the rows " + ", ".join(meta["rerun"])
            + " (the nominal one among them, as the baseline); the other rows are kept from an earlier run of the "
            f"script ({meta['earlier_seconds']:.0f} s for all seven).")


def markdown(rows: list[dict], meta: dict) -> str:
    """The table of :func:`run_candidate` rows and the spread summary."""
    lines = ["# Identification across the admissible per-wing calibrations", "",
             "Produced by `python -m benchmarks.calibration_admissible_set"
             + ("" if "plate_motion" in meta.get("studies", STUDIES) else " --without-plate-motion")
             + f"` ({meta['seconds']:.0f} s wall, "
             f"{meta['device']}, JAX {meta['jax']}; two CPU cores shared with other work). Each row: "
             "`flapjax identify --quick` (studies " + ", ".join(meta.get("studies", STUDIES)) + ") with the candidate as "
             "`[calibration]`, then the per-wing free robot's hover under `hover_rollout`'s defaults "
             f"({meta['hover_backend']} backend, 2 s). The nominal row is the baseline." + _rerun_note(meta), "",
             "D_x, D_y, L_v, M_u (driven): the damping study's signed slopes on the driven base; L_v, M_u "
             "(free flight): the final model's, refitted by the plate_motion study. Units: k_f N/Hz^2, k_roll "
             "and k_pitch N m/rad, D N m s/rad, L_v and M_u N m s/m. Hover: `hover_rollout`'s defaults (the "
             "designed gains of the per-wing linear hover model) at the hover frequency of the row's identified "
             "model; \"at the nominal f_h\": the same at the nominal row's (42.214 Hz). Pass: tilt RMS < 3 deg, "
             "cycle-mean tilt < 1 deg, altitude error < 5 mm over the last 0.5 s.", "",
             "| calibration | k_h [N m/rad] | b_h [N m s/rad] | lift_scale | k_f | k_roll / k_pitch | "
             "D_x / D_y (driven) | L_v / M_u (driven) | L_v / M_u (free flight) | "
             "validation (att. RMS max) | fidelity | hover (tilt RMS, cycle-mean tilt, alt. err.) | "
             "hover at the nominal f_h |",
             "|" + "---|" * 13]
    for r in rows:
        c, v, d = r["calibration"], r["identified"], r.get("driven_slopes", {})
        cal = (f"{c['hinge_stiffness']:.3e} | {c['hinge_damping']:.2e} | {c['lift_scale']:.4f}" if c
               else "nominal | nominal | nominal")
        val, fid, h = r["validation"], r["fidelity"], r["hover"]
        ms = fid.get("manoeuvres", {})
        n_fail = sum(not m["passed"] for m in ms.values())
        fid_cell = "pass" if fid.get("passed") else f"FAIL ({n_fail} of {len(ms)})" if ms else "not run"
        if "error" in r:
            val = {**val, "passed": False}
        pair = lambda a, b: f"{_fmt(a)} / {_fmt(b)}"  # noqa: E731
        lines.append(
            f"| {r['label']} | {cal} | {v['k_f']:.4e} | {v['k_roll']:.3e} / {v['k_pitch']:.3e} | "
            f"{pair(d.get('slope_w_x', math.nan), d.get('slope_w_y', math.nan))} | "
            f"{pair(d.get('slope_L_v', math.nan), d.get('slope_M_u', math.nan))} | "
            f"{pair(v.get('L_v', math.nan), v.get('M_u', math.nan))} | "
            + (f"{'pass' if val['passed'] else 'FAIL'} ({val['attitude_rms_deg_max']:.2f} deg) | {fid_cell} | "
               f"{'pass' if h['passed'] else 'FAIL'} ({h['tilt_rms_deg']:.2f} deg, {h['cycle_mean_tilt_deg']:.2f} deg, "
               f"{1e3 * h['altitude_error_m']:.1f} mm) |" if "error" not in r else
               "not run | not run | not run |") + f" {_hover_cell(r.get('hover_nominal_model'))} |")
    return "\n".join(lines + _summary_lines(rows)) + "\n"


def _summary_lines(rows: list[dict]) -> list[str]:
    """The stopped identifications, the spread table and the fidelity scores."""
    lines = []
    failed = [r for r in rows if "error" in r]
    if failed:
        lines += ["", "Identifications that stopped (after the studies named; the identified values above are theirs):", ""]
        lines += [f"- {r['label']}: after {', '.join(r['finished_studies'])}: {r['error']}" for r in failed]
    lines += ["", "Spread of the identified derivatives over these calibrations (sample std, n = "
              f"{len(rows)}):", "", "| symbol | unit | mean | min | max | std / abs(mean) | (max - min) / abs(mean) | sign certain |",
              "|---|---|---|---|---|---|---|---|"]
    for sym, s in spread(rows).items():
        lines.append(f"| {sym} | {s['unit']} | {s['mean']:+.3e} | {s['min']:+.3e} | {s['max']:+.3e} | "
                     f"{100 * s['relative_std']:.1f} % | {100 * s['relative_range']:.1f} % | "
                     f"{'yes' if s['sign_certain'] else 'no'} |")
    lines += ["", "Fidelity per manoeuvre (NRMSE / peak ratio; pass: NRMSE <= 0.3, peak ratio 0.8-1.25, same sign):", ""]
    names = list(next((r["fidelity"]["manoeuvres"] for r in rows if r["fidelity"].get("manoeuvres")), {}))
    lines += ["| calibration | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    for r in rows:
        ms = r["fidelity"].get("manoeuvres", {})
        lines.append(f"| {r['label']} | " + " | ".join(
            f"{ms[n]['nrmse']:.2f} / {ms[n]['peak_ratio']:.2f}{'' if ms[n]['passed'] else ' FAIL'}" if n in ms
            else "not run" for n in names) + " |")
    return lines


def _folder(label: str) -> str:
    return label.split(" ")[0].replace("#", "c")


def hover_with_nominal_model(json_path: Path, md_path: Path, out_root: Path, *, backend: str) -> None:
    """Add to each saved row the hover of its calibrated per-wing robot
    under ``hover_rollout``'s defaults at the hover frequency of the nominal
    calibration's identified model (a row whose identification stopped has
    no hover frequency of its own)."""
    from flapjax.aero.cycle_averaged import CycleAveragedParams

    record = json.loads(json_path.read_text())
    nominal = CycleAveragedParams.from_json(out_root / "nominal" / "cycle_averaged.json")
    for row in record["rows"]:
        print(f"{row['label']}: hover at the nominal hover frequency ...", flush=True)
        row["hover_nominal_model"] = hover_check(row["calibration"], nominal, backend=backend)
        json_path.write_text(json.dumps(record, indent=1, default=float))
    md_path.write_text(markdown(record["rows"], record["meta"]))


def refresh_tables(json_path: Path, md_path: Path, out_root: Path) -> None:
    """Rewrite the table from the saved rows, taking each row's driven-base
    slopes from its saved damping study (``out_root/<label>/studies``) where
    the row lacks them."""
    from flapjax.files import read_json

    record = json.loads(json_path.read_text())
    for row in record["rows"]:
        if "driven_slopes" not in row:
            saved = read_json(out_root / _folder(row["label"]) / "studies" / "damping.json")
            row["driven_slopes"] = _driven_slopes(saved["result"]["metrics"])
    record["spread"] = spread(record["rows"])
    json_path.write_text(json.dumps(record, indent=1, default=float))
    md_path.write_text(markdown(record["rows"], record["meta"]))


def _saved_rows(json_path: Path) -> tuple[dict[str, dict], float]:
    """The rows of an earlier run, by label (empty when there is none), and
    the wall time of the run that made all of them [s]."""
    if not json_path.exists():
        return {}, math.nan
    record = json.loads(json_path.read_text())
    return {r["label"]: r for r in record["rows"]}, record["meta"].get("earlier_seconds", record["meta"]["seconds"])


def _merged(saved: dict[str, dict], rows: list[dict]) -> list[dict]:
    """The earlier rows with those run now replaced (in their place; new
    labels at the end). A rerun row keeps the earlier row's entries it does
    not make itself (the hover at the nominal f_h of ``--hover-nominal-model``,
    which depends on the calibration and the nominal model only)."""
    new = {r["label"]: r for r in rows}
    kept = ("hover_nominal_model",)
    table = [{**{n: saved[k][n] for n in kept if n in saved[k]}, **new[k]} if k in new else saved[k] for k in saved]
    return table + [r for r in rows if r["label"] not in saved]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-root", default="out/calibration_admissible_set")
    ap.add_argument("--only", action="append", default=[], help="run only the candidates whose label contains this")
    ap.add_argument("--hover-backend", default="rigid", choices=("rigid", "mjx"))
    ap.add_argument("--json", default=str(RESULTS / "calibration_admissible_set.json"))
    ap.add_argument("--md", default=str(RESULTS / "calibration_admissible_set.md"))
    ap.add_argument("--tables-only", action="store_true", help="rewrite the tables from the saved rows")
    ap.add_argument("--without-plate-motion", action="store_true",
                    help="leave the plate_motion study out (the model of lift, moments and damping alone)")
    ap.add_argument("--hover-nominal-model", action="store_true",
                    help="add to the saved rows the hover at the nominal calibration's hover frequency")
    args = ap.parse_args(argv)
    if args.tables_only:
        refresh_tables(Path(args.json), Path(args.md), Path(args.out_root))
        return 0
    if args.hover_nominal_model:
        import jax

        jax.config.update("jax_enable_x64", True)
        hover_with_nominal_model(Path(args.json), Path(args.md), Path(args.out_root), backend=args.hover_backend)
        return 0

    import jax

    jax.config.update("jax_enable_x64", True)
    t0 = time.perf_counter()
    cands = [c for c in admissible_candidates() if not args.only or any(t in c[0] for t in args.only)]
    studies = [k for k in STUDIES if k != "plate_motion" or not args.without_plate_motion]
    rows, (saved, earlier) = [], _saved_rows(Path(args.json)) if args.only else ({}, math.nan)
    for label, calibration, search in cands:
        print(f"{label}: identify ...", flush=True)
        row = run_candidate(label, calibration, Path(args.out_root) / _folder(label), hover_backend=args.hover_backend,
                            studies=studies)
        row["search"] = search
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("label", "identified", "validation", "hover")}, default=float), flush=True)
        meta = {"seconds": time.perf_counter() - t0, "device": str(jax.devices()[0].platform), "jax": jax.__version__,
                "hover_backend": args.hover_backend, "studies": studies}
        table = _merged(saved, rows)
        if saved:
            meta.update(rerun=[r["label"] for r in rows], earlier_seconds=earlier)
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": table, "spread": spread(table)}, indent=1,
                                              default=float))
        Path(args.md).write_text(markdown(table, meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
