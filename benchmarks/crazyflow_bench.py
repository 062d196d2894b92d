"""Baseline B: crazyflow (pip package), the closest public peer.

crazyflow 0.4.0 runs Crazyflie quadrotors in pure JAX (its dynamics do not
call MJX's integrator). It is installed into its own virtual environment,
``benchmarks/.venv-crazyflow`` (created on first use with ``pip install
crazyflow==0.4.0``), so its JAX pin cannot disturb flapjax's; the timing runs
in a subprocess there (:mod:`benchmarks.baselines.crazyflow_worker`). If the
install fails (no network, no wheel), the section is skipped with a message.

Models: ``so_rpy_rotor_drag`` (its fastest model with rotor dynamics and
drag, i.e. the closest to flapjax's chain) and ``first_principles`` (rotor
speeds -> thrusts and torques -> rigid body), both under crazyflow's state
(position) controller, at 500 Hz = flapjax's multirotor timestep of 2 ms,
at the same world counts and step counts as :mod:`benchmarks.throughput`.

    python -m benchmarks.crazyflow_bench [--quick] [--worlds 1024 4096]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks import common as C
from benchmarks.throughput import CPU_WORLDS, n_steps_for

VENV = C.ROOT / ".venv-crazyflow"
WORKER = C.ROOT / "baselines" / "crazyflow_worker.py"
PACKAGE = "crazyflow==0.4.0"
MODELS = ("so_rpy_rotor_drag", "first_principles")
FREQ = 500


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> tuple[bool, str]:
    """Create the environment and install crazyflow if needed; (ok, message)."""
    py = venv_python()
    if py.exists():
        check = subprocess.run([str(py), "-c", "import crazyflow"], capture_output=True, text=True)
        if check.returncode == 0:
            return True, "crazyflow already installed"
    try:
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True, text=True)
        r = subprocess.run([str(py), "-m", "pip", "install", "--quiet", PACKAGE], capture_output=True, text=True,
                           timeout=1200)
    except (subprocess.SubprocessError, OSError) as exc:
        return False, f"could not create {VENV}: {exc}"
    if r.returncode != 0:
        return False, f"pip install {PACKAGE} failed: {r.stderr.strip()[-500:]}"
    return True, f"installed {PACKAGE} into {VENV}"


def run(quick: bool, worlds=None, repeats=None) -> dict:
    worlds = list(worlds or CPU_WORLDS)
    repeats = repeats or (3 if quick else 5)
    ok, msg = ensure_venv()
    C.log(msg)
    out = dict(env=C.env_info(), quick=quick, package=PACKAGE, models=list(MODELS), dt=1.0 / FREQ,
               available=ok, message=msg, rows=[])
    if not ok:
        C.log(f"SKIPPED crazyflow baseline: {msg}")
        return out
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PYTHONPATH")}
    # Same device kind as flapjax's runs. On a GPU host crazyflow's environment
    # needs a CUDA build of JAX (pip install "jax[cuda12]" there) for this.
    device = "gpu" if out["env"]["platform"] == "gpu" else "cpu"
    if device == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    # One process per world count: a world count's peak memory is its own,
    # and crazyflow runs measurably slower (~15 %) after other world counts
    # in the same process.
    groups = [[n] for n in worlds]
    for group in groups:
        cfg = dict(dynamics=list(MODELS), worlds=group,
                   n_steps=[n_steps_for(n, quick, "multirotor_rigid") for n in group], repeats=repeats, freq=FREQ,
                   device=device)
        r = subprocess.run([str(venv_python()), str(WORKER), json.dumps(cfg)], capture_output=True, text=True,
                           env=env, timeout=1800)
        if r.returncode != 0:
            out["rows"].extend(dict(n_worlds=n, error=r.stderr.strip()[-800:]) for n in group)
            C.log(f"crazyflow n={group}: FAILED {r.stderr.strip()[-300:]}")
            continue
        res = json.loads(r.stdout.strip().splitlines()[-1])
        out["crazyflow_version"] = res["crazyflow_version"]
        out["crazyflow_jax_version"] = res["jax_version"]
        for row in res["rows"]:
            row["n_worlds"] = row.pop("worlds")
            row["peak_rss_mb"] = res["peak_rss_mb"]
            out["rows"].append(row)
            C.log(f"crazyflow {row['dynamics']:18s} n={row['n_worlds']:6d} compile {row['compile_s']:5.1f} s  "
                  f"{C.fmt_rate(row['steps_per_s'])} world-steps/s")
    return out


def main(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--worlds", type=int, nargs="*", default=None)
    a = p.parse_args(argv)
    C.print_header("baseline B: crazyflow")
    C.log("wrote", C.write_json("crazyflow", run(a.quick, a.worlds, a.repeats)))


if __name__ == "__main__":
    main()
