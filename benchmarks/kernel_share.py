"""Kernel share: cost of the physics kernels per step vs a bare ``mjx.step``.

At 1024 worlds (same model, same batch, same step count) three programs
are timed back to back in one process:

* full: the flapjax step (bridge + kernels + ``mjx`` pipeline);
* bare: ``mjx.step`` of the same model (the multirotor held up by a constant
  weight-cancelling force so it flies contact-free like the full step);
* kernels alone: the aerodynamic kernels (flapper) or the controller + rotor
  chain (multirotor) as the step calls them, on inputs that drift every
  iteration so XLA cannot hoist them out of the loop.

Kernel share = kernels alone / bare (goal <= 10 %). "full vs bare" is the
whole bridge overhead, which also contains the per-step bookkeeping of the
bridge (servo commands, divergence masking), not only the kernels. With
``--quick`` the full step's time is taken from ``results/throughput.json``
when the throughput section has timed the same program (same workload,
worlds, steps and JAX version), as ``benchmarks.run`` does just before.

    python -m benchmarks.kernel_share [--quick] [--worlds 1024]
"""

from __future__ import annotations

import gc

import jax

from benchmarks import common as C
from benchmarks import workloads as W
from benchmarks.throughput import KERNEL_SHARE, n_steps_for

GOAL = 0.10


def run(quick: bool, n: int = 1024, repeats=None) -> dict:
    repeats = repeats or (3 if quick else 5)
    out = []
    for name, (bare_b, kern_b, what) in KERNEL_SHARE.items():
        k = n_steps_for(n, quick, name)
        # --quick takes the full step from the throughput section, which has
        # just timed the very same program (saves a compile per workload).
        row = C.throughput_row(name, n, k) if quick else None
        if row is not None:
            full, rf = None, dict(steady_s=row["steady_s"], compile_s=row["compile_s"], _compiled=None)
            C.log(f"{name}: full step from the throughput section (same program, {n} worlds, {k} steps)")
        else:
            full = W.BUILDERS[name](n, k)
            rf = C.measure(full.fn, full.args, world_steps=full.world_steps, repeats=repeats)
        bare = bare_b(n, k)
        rb = C.measure(bare.fn, bare.args, world_steps=bare.world_steps, repeats=repeats)
        kern = kern_b(n, k)
        rk = C.measure(kern.fn, kern.args, world_steps=kern.world_steps, repeats=repeats)
        # Full mode times all three again, interleaved, and keeps each one's
        # best median: load from other processes then hits them alike.
        full_s, bare_s, kern_s = rf["steady_s"], rb["steady_s"], rk["steady_s"]
        if not quick:
            full_s = min(full_s, C.retime(rf["_compiled"], full.args, repeats))
            bare_s = min(bare_s, C.retime(rb["_compiled"], bare.args, repeats))
            kern_s = min(kern_s, C.retime(rk["_compiled"], kern.args, repeats))
        e = dict(workload=name, kernels=what, n_worlds=n, n_steps=k, full_step_s=full_s, bare_step_s=bare_s,
                 kernel_only_s=kern_s, kernel_share=kern_s / bare_s, bridge_overhead=(full_s - bare_s) / bare_s,
                 full_compile_s=rf["compile_s"], bare_compile_s=rb["compile_s"], kernel_compile_s=rk["compile_s"],
                 goal=GOAL, full_step_from="throughput" if row is not None else "this section")
        e["goal_met"] = e["kernel_share"] <= GOAL
        out.append(e)
        C.log(f"{name:24s} {what}: kernels {100 * e['kernel_share']:.1f} % of bare mjx.step; "
              f"full step vs bare {100 * e['bridge_overhead']:+.1f} %")
        del full, bare, kern, rf, rb, rk
        gc.collect()
        jax.clear_caches()
    return dict(env=C.env_info(), quick=quick, repeats=repeats, kernel_share=out)


def main(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--worlds", type=int, default=1024)
    a = p.parse_args(argv)
    C.print_header("kernel share")
    C.log("wrote", C.write_json("kernel_share", run(a.quick, a.worlds, a.repeats)))


if __name__ == "__main__":
    main()
