"""Throughput vs number of worlds and memory per world.

For every workload of :mod:`benchmarks.workloads` and world count: compile
time, steady world-steps per second (median), XLA memory. Memory per world
is the slope of XLA's buffer total between the smallest and largest batch.
(The kernel share lives in :mod:`benchmarks.kernel_share`.)

    python -m benchmarks.throughput [--quick] [--worlds 1 16 256]
"""

from __future__ import annotations

import gc

import jax

from benchmarks import common as C
from benchmarks import workloads as W

CPU_WORLDS = (1, 16, 256, 1024, 4096)
# --quick on a CPU: the smallest batch (the memory slope starts there), the
# kernel share's and the crazyflow goal's 1024 and the largest, 4096; the
# full run keeps every batch size (each world count is a compilation per workload).
QUICK_CPU_WORLDS = (1, 1024, 4096)
GPU_WORLDS = (1, 16, 256, 1024, 4096, 16384, 65536)
WORKLOADS = ("flapper_fixed_wing", "flapper_free_averaged", "multirotor_mjx", "multirotor_mjx_contact",
             "multirotor_rigid", "multirotor_rigid_exact")
# World-steps per timed call in --quick mode (default 2e5): the MJX multirotor
# (~35 k world-steps/s here) and the free flapper (~180 k/s) get less so a
# call stays near a second; the rigid
# backend (~3 M/s) gets more so that the per-call work (the allocation
# inverse, an SVD per world) is amortized as in a long rollout; crazyflow runs
# the same step counts as the rigid backend.
QUICK_BUDGET = {"multirotor_mjx": 2.5e4, "multirotor_mjx_contact": 2.5e4, "flapper_free_averaged": 1e5, "multirotor_rigid": 1e6,
                "multirotor_rigid_exact": 1e6}
MEMORY_BUDGETS_GB = {"host RAM 24 GB": 24e9, "GPU 80 GB": 80e9}

# Bare-step and kernel-only companions of each workload for the kernel share.
KERNEL_SHARE = {
    "flapper_fixed_wing": (lambda n, k: W.flapper_bare("fixed", "wing", n, k),
                           lambda n, k: W.flapper_kernel("fixed", "wing", n, k), "per-wing aero kernels"),
    "flapper_free_averaged": (lambda n, k: W.flapper_bare("free", "averaged", n, k),
                              lambda n, k: W.flapper_kernel("free", "averaged", n, k), "cycle-averaged kernel"),
    "multirotor_mjx": (W.multirotor_bare, W.multirotor_chain, "controller + rotor chain"),
}


def default_worlds(quick: bool, platform: str) -> tuple[int, ...]:
    """World counts a section runs by default on ``platform`` ("cpu"/"gpu")."""
    if platform == "gpu":
        return GPU_WORLDS
    return QUICK_CPU_WORLDS if quick else CPU_WORLDS


def n_steps_for(n_worlds: int, quick: bool, workload: str | None = None) -> int:
    target, cap = (QUICK_BUDGET.get(workload, 2e5), 500) if quick else (1e6, 2000)
    return int(max(20, min(cap, target // n_worlds)))


def _row(workload: str, wl: W.Workload, res: dict) -> dict:
    from benchmarks.roofline import cost_analysis, op_counts

    row = dict(workload=workload, n_worlds=wl.n_worlds, n_steps=wl.n_steps, dt=wl.dt)
    row.update(C.strip_private(res))
    # XLA's counts of the compiled program, so the roofline section can take
    # them with the time instead of compiling the same program again.
    row.update(cost=cost_analysis(res["_compiled"]), ops=op_counts(res["_compiled"]))
    return row


def run(quick: bool, worlds=None, workloads=WORKLOADS, repeats=None) -> dict:
    env = C.env_info()
    if worlds is None:
        worlds = default_worlds(quick, env["platform"])
    repeats = repeats or (3 if quick else 5)
    rows = []
    for name in workloads:
        for n in worlds:
            k = n_steps_for(n, quick, name)
            wl = W.BUILDERS[name](n, k)
            res = C.measure(wl.fn, wl.args, world_steps=wl.world_steps, repeats=repeats)
            rows.append(_row(name, wl, res))
            C.log(f"{name:24s} n={n:6d} steps={k:4d} compile {res['compile_s']:6.1f} s  "
                  f"{C.fmt_rate(res['steps_per_s'])} world-steps/s  XLA {res['total_mb']:.1f} MiB")
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
    return dict(env=env, quick=quick, repeats=repeats, rows=rows, memory=memory)


def main(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--worlds", type=int, nargs="*", default=None)
    p.add_argument("--workloads", nargs="*", default=list(WORKLOADS))
    a = p.parse_args(argv)
    C.print_header("throughput vs worlds")
    out = run(a.quick, a.worlds, a.workloads, a.repeats)
    C.log("wrote", C.write_json("throughput", out))


if __name__ == "__main__":
    main()
