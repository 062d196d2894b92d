"""Success rates of the reference controllers: every task x preset, nominal
and randomized, 256 worlds each, with saturation use and (near_ground) the
ground-effect ablation. Writes one report per run under --out and prints a
Markdown table.

    python benchmarks/task_success.py --out out/task_success [--worlds 256] [--task near_ground] [--robot quad_x]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import jax

from flapjax import tasks
from flapjax.evaluate import evaluate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="out/task_success")
    ap.add_argument("--worlds", type=int, default=256)
    ap.add_argument("--task", action="append")
    ap.add_argument("--robot", action="append")
    args = ap.parse_args()
    rows = []
    for task in args.task or tasks.names():
        for robot in args.robot or list(tasks.get_class(task).robots):
            for randomize in (False, True):
                out = pathlib.Path(args.out) / f"{task}_{robot}_{'randomized' if randomize else 'nominal'}"
                t0 = time.perf_counter()
                rep = evaluate(task, robot=robot, n_worlds=args.worlds, out_dir=out, randomize=randomize,
                               progress=False)
                m = rep.metrics[rep.primary_metric]
                abl = rep.ablations.get("ground_effect")
                rows.append(dict(task=task, robot=robot, randomized=randomize, success_rate=rep.success_rate,
                                 metric=rep.primary_metric, mean=m["mean"], p90=m["p90"],
                                 saturation=rep.saturation["rotor_step_fraction_mean"],
                                 min_margin=rep.saturation["min_control_margin"],
                                 ge_off=None if abl is None else abl["primary_off_mean"],
                                 ge_trace_rms=None if abl is None else abl["trace_rms_difference"],
                                 seconds=time.perf_counter() - t0))
                r = rows[-1]
                print(f"| {task} | {robot} | {'rand' if randomize else 'nominal'} | {r['success_rate']:.3f} | "
                      f"{r['metric']} {r['mean']:.4g} (p90 {r['p90']:.4g}) | {r['saturation']:.4f} | "
                      f"{r['min_margin']:.3f} | "
                      + ("" if abl is None else f"GE off {r['ge_off']:.4g}, trace gap {r['ge_trace_rms']:.4g}")
                      + f" | {r['seconds']:.0f} s |", flush=True)
    pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
    (pathlib.Path(args.out) / "summary.json").write_text(json.dumps(
        dict(jax=jax.__version__, backend=jax.default_backend(), rows=rows), indent=2))


if __name__ == "__main__":
    main()
