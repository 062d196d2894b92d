"""Determinacy of the driven-base derivatives from a phase-resolved stand fit.

``flapjax identify --data RECORD.csv`` fits per-wing values (``lift_scale``,
the feathering hinge, the wings' inertia) to a phase-resolved stand record
and reports their Gauss-Newton covariance. This script carries that
covariance to the driven-base derivatives D_x, D_y (rate damping about x,
y), L_v and M_u (speed-to-moment couplings) of the damping study, through
central differences of the study at the fitted calibration
(:mod:`flapjax.identify.flapper.calibration`), and reports each one's
standard deviation relative to its value and whether its sign is certain
(``|value| > 3 std``). The values the fit held at their nominal values
are named: the result holds given them.

Run: ``python -m benchmarks.calibration_determinacy RESULTS.json
[RESULTS.json ...]`` (one section per fit); writes
``benchmarks/results/calibration_determinacy.{md,json}``. About 4 minutes
per fit on 2 shared cores (1 lift and 7 to 9 damping studies).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"


#: The driven-base derivatives the determinacy report propagates to: symbol -> damping-study metric.
DRIVEN = {"D_x": "slope_w_x", "D_y": "slope_w_y", "L_v": "slope_L_v", "M_u": "slope_M_u"}


def _driven_derivatives(calibration: dict, frequency: float) -> np.ndarray:
    """(4,) D_x, D_y, L_v, M_u of the damping study (``--quick`` settings) at
    ``frequency`` [Hz] with ``calibration``."""
    from flapjax.identify.flapper.config import default_config
    from flapjax.identify.flapper.damping import study_damping

    cfg = default_config(quick=True)
    cfg["calibration"] = dict(calibration)
    metrics = study_damping(cfg, frequency=frequency).metrics
    return np.array([metrics[k] for k in DRIVEN.values()])


#: Values a stand fit may hold at their nominal ones whose influence the report measures.
HELD = ("hinge_damping", "stop_angle", "stop_stiffness", "stop_width")


def _nominal_held() -> dict[str, float]:
    """The nominal per-wing values of :data:`HELD` (MJCF and flapper_params.json)."""
    from flapjax.sim.flapper import make_robot
    from flapjax.sim.flapper.stand import nominal_physical, nominal_stops

    robot = make_robot("fixed", "wing", backend="rigid")
    return {"hinge_damping": nominal_physical(robot)["hinge_damping"], **nominal_stops(robot)}


def _central_jacobian(theta: dict, names, frequency: float, step: float) -> np.ndarray:
    """(4, len(names)) d(D_x, D_y, L_v, M_u) / d value by central differences (relative ``step``)."""
    jac = np.zeros((len(DRIVEN), len(names)))
    for j, n in enumerate(names):
        h = step * theta[n]
        up = _driven_derivatives({**theta, n: theta[n] + h}, frequency)
        down = _driven_derivatives({**theta, n: theta[n] - h}, frequency)
        jac[:, j] = (up - down) / (2 * h)
    return jac


def determinacy(record_path: Path, *, step: float = 0.02) -> dict[str, Any]:
    """Propagate the Gauss-Newton covariance of a phase-resolved stand fit
    (its ``results.json``: values, ``*_std``, correlation) to D_x, D_y, L_v,
    M_u by central differences (relative ``step``) of the damping study at
    the fitted calibration's hover frequency (held: its own sensitivity is
    second order here). Returns the sensitivities, each derivative's value,
    std, std / abs(value), and whether its sign is certain (abs(value) > 3 std)."""
    from flapjax.identify.flapper.calibration import CALIBRATION_UNITS, read_calibration_record
    from flapjax.identify.flapper.config import default_config
    from flapjax.identify.flapper.damping import damping_frequency
    from flapjax.identify.flapper.lift import study_lift
    from flapjax.files import read_json

    record = read_json(record_path)
    theta = read_calibration_record(record_path)
    corr_names = record["correlation"]["names"]
    names = [n for n in corr_names if n in theta]
    idx = [corr_names.index(n) for n in names]
    corr = np.asarray(record["correlation"]["matrix"])[np.ix_(idx, idx)]
    sd = np.array([record[f"{n}_std"] for n in names])
    cov = corr * np.outer(sd, sd)
    cfg = default_config(quick=True)
    cfg["calibration"] = theta
    k_f = float(study_lift(cfg).values["k_f"])
    f = damping_frequency(cfg, k_f)
    base = _driven_derivatives(theta, f)
    jac = _central_jacobian(theta, names, f, step)
    std = np.sqrt(np.diag(jac @ cov @ jac.T))
    held_values = {n: v for n, v in _nominal_held().items() if n not in theta}
    held_jac = _central_jacobian({**held_values, **theta}, list(held_values), f, step)
    rows = {sym: {"value": float(base[i]), "std": float(std[i]), "relative_std": float(std[i] / abs(base[i])),
                  "sign_certain": bool(abs(base[i]) > 3 * std[i]),
                  "sensitivity": {n: float(jac[i, j]) for j, n in enumerate(names)},
                  "held_elasticity": {n: float(held_jac[i, j] * v / base[i]) for j, (n, v) in enumerate(held_values.items())}}
            for i, sym in enumerate(DRIVEN)}
    held = [n for n in CALIBRATION_UNITS if n not in theta]
    return {"record": str(record_path), "fitted": {n: {"value": theta[n], "std": float(sd[k])} for k, n in enumerate(names)},
            "held_at_nominal": held, "frequency": f, "k_f": k_f, "step": step, "derivatives": rows}


def determinacy_markdown(d: dict) -> str:
    """The determinacy report as markdown."""
    lines = [f"## Determinacy from a fit of {', '.join(d['fitted'])}", "",
             f"Produced by `python -m benchmarks.calibration_determinacy {d['record']}`: the "
             "Gauss-Newton covariance of the per-wing values that `flapjax identify --data` fitted, propagated "
             f"through central differences ({100 * d['step']:g} % steps) of the damping study (`--quick` settings) "
             f"at the fitted calibration's hover frequency {d['frequency']:.3f} Hz (k_f {d['k_f']:.4e} N/Hz^2). "
             f"Held at their nominal values by the fit (not in the covariance): {', '.join(d['held_at_nominal'])}.", "",
             "| fitted | value | std |", "|---|---|---|"]
    lines += [f"| {n} | {v['value']:.6g} | {v['std']:.2g} |" for n, v in d["fitted"].items()]
    lines += ["", "| derivative | value | std | std / abs(value) | sign certain (abs > 3 std) | "
              + " | ".join(f"d/d {n}" for n in d["fitted"]) + " |", "|" + "---|" * (5 + len(d["fitted"]))]
    for sym, r in d["derivatives"].items():
        lines.append(f"| {sym} | {r['value']:+.4e} | {r['std']:.2e} | {100 * r['relative_std']:.3f} % | "
                     f"{'yes' if r['sign_certain'] else 'no'} | "
                     + " | ".join(f"{v:+.3e}" for v in r["sensitivity"].values()) + " |")
    held = list(next(iter(d["derivatives"].values())).get("held_elasticity", {}))
    if held:
        lines += ["", "What the held values would move (elasticity: per cent change of the derivative per per cent "
                  "change of the held value, central differences at the same steps):", "",
                  "| derivative | " + " | ".join(held) + " |", "|" + "---|" * (len(held) + 1)]
        lines += [f"| {sym} | " + " | ".join(f"{r['held_elasticity'][n]:+.2f}" for n in held) + " |"
                  for sym, r in d["derivatives"].items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+", metavar="RESULTS_JSON",
                    help="results.json of flapjax identify --data <phase-resolved stand record>")
    ap.add_argument("--step", type=float, default=0.02, help="relative step of the central differences")
    ap.add_argument("--from-json", action="store_true",
                    help="rewrite the markdown from benchmarks/results/calibration_determinacy.json")
    args = ap.parse_args(argv)
    out_json = RESULTS / "calibration_determinacy.json"
    if args.from_json:
        reports = json.loads(out_json.read_text())
    else:
        import jax

        jax.config.update("jax_enable_x64", True)
        reports = [determinacy(Path(p), step=args.step) for p in args.records]
        out_json.write_text(json.dumps(reports, indent=1))
    text = "# Determinacy of the driven-base derivatives from phase-resolved stand fits\n\n" + "\n".join(
        determinacy_markdown(d) for d in reports)
    (RESULTS / "calibration_determinacy.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
