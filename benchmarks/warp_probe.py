"""MuJoCo Warp on this machine: MJX's ``impl="warp"`` against its JAX
implementation on flapjax's X-quad model, and whether flapjax's batched
MJX worlds run on it.

MuJoCo Warp (``pip install mujoco-warp``; it brings NVIDIA Warp, whose
kernels also compile for the CPU) is reachable from JAX through
``mujoco.mjx.put_model(m, impl="warp")``. This script

1. times a bare ``mjx.step`` of the X-quad MJCF that
   :class:`flapjax.sim.multirotor.MultirotorWorld` builds, ``impl="jax"``
   against ``impl="warp"``, at the same world counts, in one process;
2. builds flapjax's batched MJX worlds (``vmap`` of one world's ``Data``,
   :func:`benchmarks.workloads.multirotor`) on a Warp model and reports
   whether one batched step runs, or the error it stops with.

Without ``mujoco_warp`` it says so and exits 0. Results:
``results/warp_probe.json``.

    python -m benchmarks.warp_probe [--worlds 1024 4096] [--steps 20]
"""

from __future__ import annotations

import time

from benchmarks import common as C


def _bare_rate(mj_model, impl: str, n_worlds: int, n_steps: int) -> dict:
    """World-steps/s of ``vmap(mjx.step)`` over ``n_worlds`` copies of the
    model's initial state (compile and first call timed apart)."""
    import jax
    import jax.numpy as jnp
    from mujoco import mjx

    model = mjx.put_model(mj_model, impl=impl)
    data = mjx.make_data(mj_model, impl=impl)
    batch = jax.vmap(lambda _: data)(jnp.arange(n_worlds))
    step = jax.jit(jax.vmap(lambda d: mjx.step(model, d)))
    t0 = time.perf_counter()
    out = jax.block_until_ready(step(batch))
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(n_steps):
        out = step(out)
    jax.block_until_ready(out)
    rate = n_steps * n_worlds / (time.perf_counter() - t0)
    return dict(impl=impl, n_worlds=n_worlds, n_steps=n_steps, compile_and_first_s=first_s, steps_per_s=rate)


def _flapjax_worlds_on_warp(n_worlds: int) -> str:
    """Build flapjax's batched X-quad worlds with MJX's Warp implementation
    and run one batched step; returns "ran" or the error's first line."""
    import jax
    from mujoco import mjx

    from benchmarks import workloads as W

    put, make = mjx.put_model, mjx.make_data
    last = {}

    def put_warp(m, **kw):
        last["m"] = m
        return put(m, impl="warp", **kw)

    mjx.put_model, mjx.make_data = put_warp, lambda m, **kw: make(last["m"], impl="warp", **kw)
    try:
        wl = W.multirotor(n_worlds, 1)
        jax.block_until_ready(jax.jit(wl.fn)(*wl.args))
        return "ran"
    except Exception as exc:  # noqa: BLE001 - the finding is the error itself
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    finally:
        mjx.put_model, mjx.make_data = put, make


def run(worlds=(1024, 4096), n_steps: int = 20) -> dict:
    try:
        import mujoco_warp  # noqa: F401
        import warp
    except ImportError as exc:
        return dict(env=C.env_info(), available=False,
                    message=f"mujoco_warp not importable ({exc}); pip install mujoco-warp")
    import mujoco

    from flapjax import rotor
    from flapjax.sim.multirotor import MultirotorWorld

    warp.config.quiet = True
    mj_model = mujoco.MjModel.from_xml_string(MultirotorWorld(rotor.profile.quad_x()).xml)
    rows = []
    for n in worlds:
        for impl in ("jax", "warp"):
            row = _bare_rate(mj_model, impl, n, n_steps)
            rows.append(row)
            C.log(f"bare mjx.step impl={impl:4s} n={n:5d}: {C.fmt_rate(row['steps_per_s'])} world-steps/s "
                  f"(compile + first call {row['compile_and_first_s']:.1f} s)")
    flapjax_worlds = _flapjax_worlds_on_warp(min(worlds))
    C.log(f"flapjax's batched MJX worlds on impl=warp: {flapjax_worlds}")
    return dict(env=C.env_info(), available=True, warp_version=C.package_version("warp-lang"),
                mujoco_warp_version=C.package_version("mujoco-warp"), rows=rows, flapjax_worlds=flapjax_worlds)


def main(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--worlds", type=int, nargs="*", default=[1024, 4096])
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args(argv)
    from flapjax.devices import setup

    C.log(setup())  # as every section: XLA's CPU options, before JAX starts
    C.print_header("MuJoCo Warp probe")
    out = run(a.worlds, a.steps)
    if not out["available"]:
        C.log(out["message"])
    C.log("wrote", C.write_json("warp_probe", out))


if __name__ == "__main__":
    main()
