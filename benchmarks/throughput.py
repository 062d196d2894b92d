"""Throughput vs number of worlds, kernel share, memory per world.

For every workload of :mod:`benchmarks.workloads` and world count: compile
time, steady world-steps per second (median), XLA memory. At the kernel-share
world count (1024) the same model and batch are also advanced by bare
``mjx.step`` and the physics kernels alone are timed, right after the full
step, in the same process.

    python -m benchmarks.throughput [--quick] [--worlds 1 16 256]
"""

from __future__ import annotations

import gc

import jax

from benchmarks import common as C
from benchmarks import workloads as W

CPU_WORLDS = (1, 16, 256, 1024, 4096)
GPU_WORLDS = (1, 16, 256, 1024, 4096, 16384, 65536)
KERNEL_SHARE_WORLDS = 1024
WORKLOADS = ("flapper_fixed_wing", "flapper_free_averaged", "multirotor_mjx", "multirotor_rigid")
MEMORY_BUDGETS_GB = {"host RAM 24 GB": 24e9, "GPU 80 GB": 80e9}

# Bare-step and kernel-only companions of each workload for the kernel share.
KERNEL_SHARE = {
    "flapper_fixed_wing": (lambda n, k: W.flapper_bare("fixed", "wing", n, k),
                           lambda n, k: W.flapper_kernel("fixed", "wing", n, k), "per-wing aero kernels"),
    "flapper_free_averaged": (lambda n, k: W.flapper_bare("free", "averaged", n, k),
                              lambda n, k: W.flapper_kernel("free", "averaged", n, k), "cycle-averaged kernel"),
    "multirotor_mjx": (W.multirotor_bare, W.multirotor_chain, "controller + rotor chain"),
}


def n_steps_for(n_worlds: int, quick: bool) -> int:
    target, cap = (2e5, 500) if quick else (1e6, 2000)
    return int(max(20, min(cap, target // n_worlds)))


def _row(workload: str, wl: W.Workload, res: dict) -> dict:
    row = dict(workload=workload, n_worlds=wl.n_worlds, n_steps=wl.n_steps, dt=wl.dt)
    row.update(C.strip_private(res))
    return row


def run(quick: bool, worlds=None, workloads=WORKLOADS, repeats=None) -> dict:
    env = C.env_info()
    if worlds is None:
        worlds = GPU_WORLDS if env["platform"] == "gpu" else CPU_WORLDS
    repeats = repeats or (3 if quick else 5)
    rows, share = [], []
    for name in workloads:
        for n in worlds:
            k = n_steps_for(n, quick)
            wl = W.BUILDERS[name](n, k)
            res = C.measure(wl.fn, wl.args, world_steps=wl.world_steps, repeats=repeats)
            rows.append(_row(name, wl, res))
            C.log(f"{name:24s} n={n:6d} steps={k:4d} compile {res['compile_s']:6.1f} s  "
                  f"{C.fmt_rate(res['steps_per_s'])} world-steps/s  XLA {res['total_mb']:.1f} MiB")
            if n == KERNEL_SHARE_WORLDS and name in KERNEL_SHARE:
                bare_b, kern_b, what = KERNEL_SHARE[name]
                bare = bare_b(n, k)
                rb = C.measure(bare.fn, bare.args, world_steps=bare.world_steps, repeats=repeats)
                kern = kern_b(n, k)
                rk = C.measure(kern.fn, kern.args, world_steps=kern.world_steps, repeats=repeats)
                # Re-time the full step after the others so load drift hits both sides.
                full_s = min(res["steady_s"], C.retime(res["_compiled"], wl.args, repeats))
                entry = dict(workload=name, kernels=what, n_worlds=n, n_steps=k,
                             full_step_s=full_s, bare_step_s=rb["steady_s"], kernel_only_s=rk["steady_s"],
                             kernel_share=rk["steady_s"] / rb["steady_s"],
                             bridge_overhead=(full_s - rb["steady_s"]) / rb["steady_s"],
                             bare_compile_s=rb["compile_s"], goal=0.10)
                entry["goal_met"] = entry["kernel_share"] <= 0.10
                share.append(entry)
                C.log(f"  kernel share ({what}): kernels {100 * entry['kernel_share']:.1f} % of bare mjx.step; "
                      f"full bridge step vs bare: {100 * entry['bridge_overhead']:+.1f} %")
            del wl, res
            gc.collect()
            jax.clear_caches()
    memory = []
    for name in workloads:
        rs = sorted((r for r in rows if r["workload"] == name), key=lambda r: r["n_worlds"])
        if len(rs) < 2:
            continue
        lo, hi = rs[0], rs[-1]
        per_world = (hi["total_mb"] - lo["total_mb"]) * 2**20 / (hi["n_worlds"] - lo["n_worlds"])
        entry = dict(workload=name, bytes_per_world=per_world, measured_from=[lo["n_worlds"], hi["n_worlds"]])
        for label, budget in MEMORY_BUDGETS_GB.items():
            entry[f"worlds_in_{label}"] = int(budget // per_world) if per_world > 0 else None
        memory.append(entry)
    return dict(env=env, quick=quick, repeats=repeats, rows=rows, kernel_share=share, memory=memory)


def main(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--worlds", type=int, nargs="*", default=None)
    p.add_argument("--workloads", nargs="*", default=list(WORKLOADS))
    a = p.parse_args(argv)
    out = run(a.quick, a.worlds, a.workloads, a.repeats)
    C.log("wrote", C.write_json("throughput", out))


if __name__ == "__main__":
    main()
