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

if __name__ == "__main__":  # before JAX starts: one device per core, as benchmarks.run
    from flapjax.devices import setup

    print(setup(), flush=True)

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from benchmarks import common as C  # noqa: E402
from benchmarks.throughput import default_worlds, n_steps_for  # noqa: E402

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
    worlds = list(worlds or default_worlds(quick, "cpu"))
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
    n_dev = C.env_info()["n_devices"]
    if device == "cpu" and n_dev > 1:
        _sharded_crazyflow(out, env, [n for n in worlds if n >= SHARD_FROM], quick, repeats, n_dev)
    out["flapjax_rows"] = flapjax_rows([n for n in worlds if n >= SHARD_FROM], quick, repeats)
    return out


# World counts from which both engines are also run split over every device.
SHARD_FROM = 1024


def _sharded_crazyflow(out: dict, env: dict, worlds, quick: bool, repeats: int, n_dev: int) -> None:
    """crazyflow's step with its worlds split over ``n_dev`` forced host
    devices (crazyflow has no such option; the worker places its data) and
    the XLA CPU options flapjax runs with (:data:`flapjax.cache.FAST_CPU_FLAGS`):
    like for like with flapjax's default."""
    from flapjax.cache import FAST_CPU_FLAGS

    for n in worlds:
        cfg = dict(dynamics=list(MODELS), worlds=[n], n_steps=[n_steps_for(n, quick, "multirotor_rigid")],
                   repeats=repeats, freq=FREQ, device="cpu", devices=n_dev, xla_flags=list(FAST_CPU_FLAGS))
        r = subprocess.run([str(venv_python()), str(WORKER), json.dumps(cfg)], capture_output=True, text=True,
                           env=env, timeout=1800)
        if r.returncode != 0:
            out.setdefault("sharded_rows", []).append(dict(n_worlds=n, devices=n_dev, error=r.stderr.strip()[-800:]))
            C.log(f"crazyflow sharded n={n}: FAILED {r.stderr.strip()[-300:]}")
            continue
        for row in json.loads(r.stdout.strip().splitlines()[-1])["rows"]:
            row["n_worlds"] = row.pop("worlds")
            out.setdefault("sharded_rows", []).append(row)
            C.log(f"crazyflow {row['dynamics']:18s} n={row['n_worlds']:6d} on {n_dev} devices "
                  f"{C.fmt_rate(row['steps_per_s'])} world-steps/s")


def flapjax_rows(worlds, quick: bool, repeats: int) -> list[dict]:
    """flapjax's rigid X-quad (prepared worlds, steps only) on one device and
    split over every device, in this process, at the same step counts."""
    import jax

    from benchmarks import workloads as W
    from flapjax.sim import sharding

    rows = []
    for name in ("multirotor_rigid", "multirotor_rigid_exact"):
        for n in worlds:
            wl = W.PREPARED_BUILDERS[name](n, n_steps_for(n, quick, "multirotor_rigid"))
            mesh = sharding.world_mesh()
            for devs, args in ((1, wl.args), (mesh.devices.size, tuple(sharding.shard_worlds(a, mesh) for a in wl.args))):
                if devs == 1 or n % devs == 0:
                    res = C.measure(wl.fn, args, world_steps=wl.world_steps, repeats=repeats)
                    rows.append(dict(workload=name, n_worlds=n, n_steps=wl.n_steps, devices=int(devs),
                                     steps_per_s=res["steps_per_s"], compile_s=res["compile_s"]))
                    C.log(f"flapjax {name:22s} n={n:6d} on {devs} device(s) {C.fmt_rate(res['steps_per_s'])} "
                          "world-steps/s")
            jax.clear_caches()
    return rows


def table(cf: dict | None) -> list[str]:
    """Default use and like for like, from ``results/crazyflow.json``."""
    if not cf or not cf.get("flapjax_rows"):
        return []
    fj = {(r["workload"], r["n_worlds"], r["devices"]): r["steps_per_s"] for r in cf["flapjax_rows"]}
    cz = {(r["dynamics"], r["n_worlds"], r.get("devices", 1)): r["steps_per_s"]
          for r in cf["rows"] + cf.get("sharded_rows", []) if "error" not in r}
    n_all = max(d for _, _, d in fj)
    lines = [f"Measured in one run of `python -m benchmarks.crazyflow_bench` (load {cf['env']['load_average']}, "
             f"{cf['env']['cpu_count']} cores shared with other work: ratios are noisy). flapjax: rigid X-quad, "
             "worlds prepared before timing; 'default' = how each engine runs out of the box "
             f"(flapjax's sharded entry points on {n_all} devices, crazyflow on one).", "",
             "| worlds | flapjax rigid (noise / exact), 1 device | crazyflow so_rpy_rotor_drag / first_principles, "
             f"1 device | flapjax, {n_all} devices | crazyflow, {n_all} devices (placed by hand) | "
             "default: flapjax all / crazyflow 1 (so_rpy_rotor_drag, first_principles) | 1 device each | "
             "like for like, all devices |",
             "|---|---|---|---|---|---|---|---|"]
    for n in sorted({k[1] for k in fj}):
        f1, fe1 = fj.get(("multirotor_rigid", n, 1), nan), fj.get(("multirotor_rigid_exact", n, 1), nan)
        fa, fea = fj.get(("multirotor_rigid", n, n_all), nan), fj.get(("multirotor_rigid_exact", n, n_all), nan)
        c1, cf1 = cz.get(("so_rpy_rotor_drag", n, 1), nan), cz.get(("first_principles", n, 1), nan)
        ca, cfa = cz.get(("so_rpy_rotor_drag", n, n_all), nan), cz.get(("first_principles", n, n_all), nan)
        lines.append(f"| {n} | {C.fmt_rate(f1)} / {C.fmt_rate(fe1)} | {C.fmt_rate(c1)} / {C.fmt_rate(cf1)} | "
                     f"{C.fmt_rate(fa)} / {C.fmt_rate(fea)} | {C.fmt_rate(ca)} / {C.fmt_rate(cfa)} | "
                     f"{fa / c1:.2f}x, {fa / cf1:.2f}x | {f1 / c1:.2f}x | {fa / ca:.2f}x |")
    lines += ["", "Ratios: flapjax rigid with sensor-noise draws over crazyflow `so_rpy_rotor_drag` (its closest model; "
              "the default column also over `first_principles`). "
              "flapjax runs with the XLA CPU options `flapjax.devices.setup()` picks (classic emitters, no YNNPACK "
              "fusions); crazyflow runs with JAX's defaults on one device, and with flapjax's devices and XLA "
              "options in the all-devices columns (like for like)."]
    return lines


nan = float("nan")


def main(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--worlds", type=int, nargs="*", default=None)
    a = p.parse_args(argv)
    C.print_header("baseline B: crazyflow")
    C.log("wrote", C.write_json("crazyflow", run(a.quick, a.worlds, a.repeats)))


if __name__ == "__main__":
    main()
