"""Shared bookkeeping of the identification coverage benchmarks: count, per
parameter, the noise seeds whose hidden value lies within the reported
k-sigma interval, and print the two verdicts.

The per-parameter verdict (every listed parameter covered in at least 95 %
of the seeds, 19 of 20) is strict for calibrated intervals: with a true
coverage of 95.4 % a single parameter meets it at 20 seeds with probability
0.77 only. The calibration verdict, which sets the exit code, asks that the
pooled coverage be at least 90 % and that no parameter's RMS z-score leave
the 99.9 % chi-square band of the seed count (intervals neither too narrow
nor too wide).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def load_generator(name: str):
    """The sample-data script ``identification/data/<name>.py`` as a module
    (it is a file, not a package)."""
    path = ROOT / "identification" / "data" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Coverage:
    """z-scores per parameter, held-out errors per channel, fit times."""

    k_sigma: float = 2.0
    z: dict[str, list[float]] = field(default_factory=dict)
    validation: dict[str, list[float]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def add(self, values, std, truth) -> dict[str, float]:
        """Record one seed's fit (``values``, ``std``: name -> number) against
        ``truth``; returns this seed's z-scores. A value without a standard
        deviation (``None``: at a bound, or held) has z = inf, a miss."""
        out = {}
        for name, value in values.items():
            out[name] = math.inf if std[name] is None else float((value - truth[name]) / std[name])
            self.z.setdefault(name, []).append(out[name])
        return out

    def add_validation(self, channel: str, rms_over_sigma: float) -> None:
        self.validation.setdefault(channel, []).append(float(rms_over_sigma))

    def summary(self) -> dict:
        n = len(self.seconds)
        covered = {k: int(np.sum(np.abs(v) <= self.k_sigma)) for k, v in self.z.items()}
        return {
            "seeds": n,
            "k_sigma": self.k_sigma,
            "covered": covered,
            "z_rms": {k: float(np.sqrt(np.mean(np.square(v)))) for k, v in self.z.items()},
            "z": self.z,
            "validation_rms_over_sigma_mean": {k: float(np.mean(v)) for k, v in self.validation.items()},
            "pooled_coverage": float(sum(covered.values()) / (n * len(covered))),
            "fit_seconds_first": self.seconds[0],
            "fit_seconds_median_after_first": float(np.median(self.seconds[1:])) if n > 1 else math.nan,
        }


def report(out: dict, *, title: str, per_parameter: tuple[str, ...], json_path: Path | None = None,
           unit: str = "table") -> int:
    """Print the coverage table and both verdicts of ``out`` (a
    :meth:`Coverage.summary`); returns the exit code (0: calibrated)."""
    from scipy.stats import chi2

    seeds = out["seeds"]
    need = math.ceil(0.95 * seeds)
    print(f"{title}, {seeds} noise seeds, hidden value within +-{out['k_sigma']:g} sigma:")
    print(f"{'parameter':<20}{'covered':>10}{'z rms':>8}")
    for name, h in out["covered"].items():
        print(f"{name:<20}{h:>6} / {seeds:<3}{out['z_rms'][name]:>8.2f}")
    print(f"pooled coverage {100 * out['pooled_coverage']:.1f} % (nominal 95.4 %)")
    print("held-out error / residual std, mean over seeds: "
          + ", ".join(f"{k} {v:.2f}" for k, v in out["validation_rms_over_sigma_mean"].items()))
    print(f"fit time: first {out['fit_seconds_first']:.1f} s (compilation), then "
          f"{out['fit_seconds_median_after_first']:.2f} s per {unit}")
    if json_path:
        json_path.write_text(json.dumps(out, indent=1) + "\n")
    short = [k for k in per_parameter if k in out["covered"] and out["covered"][k] < need]
    if short:
        print(f"per-parameter: {short} covered in fewer than {need} of {seeds} seeds")
    else:
        print(f"per-parameter: every model parameter covered in at least {need} of {seeds} seeds")
    # What exact intervals would give: each parameter's count is binomial(seeds, P(|z| <= k)).
    from scipy.stats import binom, norm

    p_in = 1.0 - 2.0 * norm.sf(out["k_sigma"])
    p_meet = float(binom.sf(need - 1, seeds, p_in))
    listed = [k for k in per_parameter if k in out["covered"]]
    print(f"  (exact {out['k_sigma']:g}-sigma intervals meet it with probability {p_meet:.2f} per parameter: "
          f"{len(listed) * (1 - p_meet):.1f} of these {len(listed)} parameters short on average)")
    lo, hi = (math.sqrt(chi2.ppf(q, seeds) / seeds) for q in (0.0005, 0.9995))
    off = [k for k, v in out["z_rms"].items() if not lo <= v <= hi]
    ok = out["pooled_coverage"] >= 0.90 and not off
    print(f"calibration: pooled coverage {100 * out['pooled_coverage']:.1f} % (>= 90 %), z rms band "
          f"[{lo:.2f}, {hi:.2f}]{'' if not off else f', outside: {off}'} -> {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


def main(coverage, argv=None, *, description: str, title, per_parameter: tuple[str, ...],
         unit: str = "table", add_arguments=None) -> int:
    """Command line of a coverage benchmark: ``--seeds N --first K --json
    FILE``; ``coverage(seeds)`` returns a :meth:`Coverage.summary`. With
    ``add_arguments(parser)`` adding options of its own, ``coverage(seeds,
    args)`` and ``title(args)`` receive the parsed arguments."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first", type=int, default=0, help="first noise seed")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    if add_arguments is not None:
        add_arguments(ap)
    args = ap.parse_args(argv)
    seeds = range(args.first, args.first + args.seeds)
    if add_arguments is not None:
        out, title = coverage(seeds, args), title(args)
    else:
        out = coverage(seeds)
    return report(out, title=title, per_parameter=per_parameter, json_path=args.json, unit=unit)
