"""Runs inside crazyflow's own virtual environment (no flapjax import).

Usage: python crazyflow_worker.py '<json config>'  -> one JSON line on stdout.

Config: {"dynamics": [...], "worlds": [...], "n_steps": int, "repeats": int,
"freq": int, "device": "cpu" | "gpu", "devices": int (optional: force that many
host devices and split the worlds over them), "xla_flags": [str] (optional:
added to XLA_FLAGS, e.g. the XLA CPU options flapjax runs with)}. For each dynamics model and world
count: a crazyflow ``Sim``
with one Crazyflie per world under its state (position) controller holding a
hover set-point, ``n_steps`` steps per call of the jitted, scanned
``sim._step``; compile time (first call) apart from the steady time (median
of ``repeats`` calls).
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time


def _shard(data, n: int):
    """Split every leaf with a leading world axis over all devices (a 1-D
    mesh, Auto axis); other leaves are replicated. Lets XLA partition
    crazyflow's jitted step as flapjax's sharded rollouts are."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = jax.make_mesh((len(jax.devices()),), ("worlds",), axis_types=(jax.sharding.AxisType.Auto,))
    split, full = NamedSharding(mesh, PartitionSpec("worlds")), NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(lambda x: jax.device_put(x, split if getattr(x, "ndim", 0) and x.shape[0] == n else full),
                        data)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    import os

    flags = list(cfg.get("xla_flags", []))
    if int(cfg.get("devices", 1)) > 1:
        flags.append(f"--xla_force_host_platform_device_count={int(cfg['devices'])}")
    if flags:  # before JAX starts
        os.environ["XLA_FLAGS"] = " ".join(flags)
    import jax
    import jax.numpy as jnp
    import crazyflow
    from crazyflow.control import Control
    from crazyflow.sim import Sim

    try:
        from importlib.metadata import version
        cf_version = version("crazyflow")
    except Exception:  # pragma: no cover - metadata missing
        cf_version = getattr(crazyflow, "__version__", "unknown")
    rows = []
    for dyn in cfg["dynamics"]:
        for i, n in enumerate(cfg["worlds"]):
            sim = Sim(n_worlds=n, n_drones=1, dynamics=dyn, control=Control.state, freq=cfg["freq"],
                      device=cfg.get("device", "cpu"))
            sim.reset()
            cmd = jnp.zeros((n, 1, 16)).at[..., 2].set(1.0).at[..., 12].set(1.0)
            sim.state_control(cmd)
            data = sim.data if int(cfg.get("devices", 1)) == 1 else _shard(sim.data, n)
            steps = cfg["n_steps"]  # one count for all world counts, or one per world count
            k = int(steps[i] if isinstance(steps, list) else steps)
            # The first call compiles; the second compiles again (the step
            # flips a static "mjx synced" flag in the data), so both are warm-up.
            t0 = time.perf_counter()
            out = sim._step(data, n_steps=k)
            jax.block_until_ready(out)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            out = sim._step(out, n_steps=k)
            jax.block_until_ready(out)
            second = time.perf_counter() - t0
            times = []
            for _ in range(int(cfg["repeats"])):
                t0 = time.perf_counter()
                out = sim._step(out, n_steps=k)
                jax.block_until_ready(out)
                times.append(time.perf_counter() - t0)
            steady = statistics.median(times)
            z = float(jnp.mean(out.states.pos[..., 2]))
            rows.append(dict(dynamics=dyn, worlds=n, n_steps=k, devices=len(jax.devices()),
                             sharded=bool(len(out.states.pos.sharding.device_set) > 1), compile_s=max(first + second - 2 * steady, 0.0),
                             first_call_s=first, second_call_s=second, steady_s=steady, steps_per_s=n * k / steady,
                             mean_altitude_m=z, times_s=times))
    print(json.dumps(dict(
        crazyflow_version=cf_version, jax_version=jax.__version__, device_kind=jax.devices()[0].device_kind,
        dt=1.0 / cfg["freq"], rows=rows,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    )))


if __name__ == "__main__":
    main()
