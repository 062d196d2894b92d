"""Sharding the world axis over several devices: throughput, 1 vs N devices.

On a CPU-only machine the devices are forced host devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=N``, set here before JAX
is imported, so this script re-executes itself in a subprocess). Each device
then runs its slice of worlds on its own thread, which is how one process
uses several cores; on a multi-GPU host the same code splits the worlds
over the GPUs (:mod:`flapjax.sim.sharding`).

    python -m benchmarks.scaling [--quick] [--devices 2] [--worlds 1024]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from benchmarks import common as C


def child(n_devices: int, n_worlds: int, n_steps: int, repeats: int) -> dict:
    import jax
    import numpy as np

    from benchmarks import workloads as W
    from flapjax.sim import sharding

    rows = []
    for name, root, model in (("flapper_fixed_wing", "fixed", "wing"), ("flapper_free_averaged", "free", "averaged")):
        robot, params, state = W.flapper_batch(root, model, n_worlds)
        obs = lambda s, o: None  # noqa: E731
        for d in sorted({1, n_devices}):
            mesh = sharding.world_mesh(d)
            p = sharding.shard_worlds(params, mesh)
            s = sharding.shard_worlds(state, mesh)
            r = sharding.shard_worlds(robot, mesh, None)
            jitted = sharding._flapper_rollout
            res = C.measure(lambda r_, p_, s_: jitted(r_, p_, s_, n_steps, obs, True), (r, p, s),
                            world_steps=n_worlds * n_steps, repeats=repeats)
            q = np.asarray(res["_out"][0].data.qpos)
            rows.append(dict(workload=name, devices=d, n_worlds=n_worlds, n_steps=n_steps, qpos=q.tolist(),
                             **C.strip_private(res)))
        a, b = rows[-2], rows[-1]
        b["speedup"] = b["steps_per_s"] / a["steps_per_s"]
        b["identical_to_1_device"] = bool(np.array_equal(np.asarray(a["qpos"]), np.asarray(b["qpos"])))
        b["max_abs_qpos_diff"] = float(np.max(np.abs(np.asarray(a["qpos"]) - np.asarray(b["qpos"]))))
        for row in (a, b):
            row.pop("qpos")
        jax.clear_caches()
    return dict(env=C.env_info(), rows=rows)


def run(quick: bool, n_devices: int = 2, n_worlds: int = 1024, repeats=None) -> dict:
    repeats = repeats or (3 if quick else 5)
    n_steps = 50 if quick else 200
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n_devices}", JAX_PLATFORMS="cpu")
    cmd = [sys.executable, "-m", "benchmarks.scaling", "--child", str(n_devices), str(n_worlds), str(n_steps),
           str(repeats)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=C.ROOT.parent, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["quick"] = quick
    for row in out["rows"]:
        if "speedup" in row:
            C.log(f"{row['workload']:24s} {row['n_worlds']} worlds on {row['devices']} devices: "
                  f"{row['speedup']:.2f}x one device, identical={row['identical_to_1_device']} "
                  f"(max |qpos diff| {row['max_abs_qpos_diff']:.2g})")
    return out


def main(argv=None):
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        d, n, k, rep = (int(x) for x in sys.argv[2:6])
        print(json.dumps(child(d, n, k, rep), default=C._jsonable))
        return
    p = C.parser(__doc__)
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--worlds", type=int, default=1024)
    a = p.parse_args(argv)
    C.print_header("sharding over devices")
    C.log("wrote", C.write_json("scaling", run(a.quick, a.devices, a.worlds, a.repeats)))


if __name__ == "__main__":
    main()
