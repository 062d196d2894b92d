"""Run every benchmark section, then regenerate the README tables and plot.

    python -m benchmarks.run --quick                  # the documented run (all sections but scaling)
    python -m benchmarks.run                          # longer runs, more repeats
    python -m benchmarks.run --quick --only gradient  # one section, then the report
    python -m benchmarks.run --quick --device gpu     # on a GPU: world counts up to 65536, results/gpu/

Each section runs in its own process (so its peak memory is its own) and
writes ``benchmarks/results/<section>.json``; sections not rerun keep their
previous results in the report.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from benchmarks import common as C

SECTIONS = ("throughput", "kernel_share", "baseline_flapsim", "crazyflow", "roofline", "gradient", "retrace",
            "scaling")
# Left out of a plain ``--quick`` run (no goal depends on it; ``--only scaling``
# or the full run measure it, and the report keeps its last results).
QUICK_SKIP = ("scaling",)
MODULES = {"crazyflow": "crazyflow_bench"}  # section name -> script (results/<section>.json)
# Prints the platforms JAX can start here ("cpu" or "cpu,gpu"), never a traceback.
PROBE = ("import jax\ntry:\n    print(','.join(sorted({d.platform for d in jax.devices()} | "
         "({'gpu'} if jax.devices('gpu') else set()))))\nexcept RuntimeError:\n"
         "    print(','.join(sorted({d.platform for d in jax.devices()})))")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", nargs="*", choices=SECTIONS, default=None)
    p.add_argument("--skip", nargs="*", choices=SECTIONS, default=())
    p.add_argument("--device", choices=("cpu", "gpu"), default=None,
                   help="pin JAX to this platform (gpu: results in benchmarks/results/gpu, README untouched)")
    a = p.parse_args(argv)
    default = [s for s in SECTIONS if not (a.quick and s in QUICK_SKIP)]
    sections = [s for s in (a.only or default) if s not in a.skip]
    # Sections run with XLA's default flags, and one JAX CPU device per core
    # (FLAPJAX_CORES=1: one), as the flapjax command does.
    os.environ.pop("XLA_FLAGS", None)
    from flapjax.devices import setup

    C.log(setup())
    env = dict(os.environ)
    env["PYTHONPATH"] = str(C.ROOT.parent) + os.pathsep + env.get("PYTHONPATH", "")
    if a.device is not None:
        probe_env = {k: v for k, v in env.items() if k != "JAX_PLATFORMS"}
        probe = subprocess.run([sys.executable, "-c", PROBE], env=probe_env, capture_output=True, text=True)
        seen = probe.stdout.strip().splitlines()[-1] if probe.returncode == 0 and probe.stdout.strip() else "none"
        if a.device not in seen.split(","):
            hint = (" On an NVIDIA machine install the CUDA build: pip install -e '.[cuda]'."
                    if a.device == "gpu" else "")
            C.log(f"--device {a.device}: JAX sees no {a.device.upper()} here (platforms found: {seen}); "
                  f"nothing was run.{hint}")
            return 2
        env["JAX_PLATFORMS"] = {"cpu": "cpu", "gpu": "cuda"}[a.device]
    if a.device == "gpu":
        C.RESULTS = C.ROOT / "results" / "gpu"  # run.json too
        env["FLAPJAX_BENCH_RESULTS"] = str(C.RESULTS)
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    t_all = time.perf_counter()
    failed = []
    timings = {}
    for s in sections:
        C.log(f"=== {s} ===")
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", f"benchmarks.{MODULES.get(s, s)}"] + (["--quick"] if a.quick else [])
        r = subprocess.run(cmd, env=env, cwd=C.ROOT.parent)
        timings[s] = time.perf_counter() - t0
        C.log(f"=== {s}: {timings[s]:.0f} s, exit {r.returncode} ===")
        if r.returncode != 0:
            failed.append(s)
    wall = time.perf_counter() - t_all
    # Sections rerun with --only replace their own entries; the others keep
    # the time of the run that produced their results.
    prev = {}
    if (C.RESULTS / "run.json").exists():
        import json

        prev = json.loads((C.RESULTS / "run.json").read_text())
    section_s = dict(prev.get("section_s", {})) if a.only else {}
    section_s.update(timings)
    history = (prev.get("history", []) if a.only else []) + [dict(
        command="python -m benchmarks.run" + (" --quick" if a.quick else "")
        + (f" --only {' '.join(a.only)}" if a.only else ""),
        sections=sections, wall_s=wall, failed=failed, load_average_end=list(os.getloadavg()))]
    C.write_json("run", dict(section_s=section_s, wall_s=sum(section_s.values()), history=history))
    if a.device == "gpu":  # the README's tables are the CPU run's; GPU JSON stays beside them
        C.log(f"GPU results in {C.ROOT / 'results' / 'gpu'}; total {wall:.0f} s; failed sections: {failed or 'none'}")
        return 1 if failed else 0
    from benchmarks import report

    report.write()
    C.log(report.build())
    C.log(f"total {wall:.0f} s; failed sections: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
