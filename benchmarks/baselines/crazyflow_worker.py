"""Runs inside crazyflow's own virtual environment (no flapjax import).

Usage: python crazyflow_worker.py '<json config>'  -> one JSON line on stdout.

Config: {"dynamics": [...], "worlds": [...], "n_steps": int, "repeats": int,
"freq": int, "device": "cpu" | "gpu"}. For each dynamics model and world
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


def main() -> None:
    cfg = json.loads(sys.argv[1])
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
            data = sim.data
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
            rows.append(dict(dynamics=dyn, worlds=n, n_steps=k, compile_s=max(first + second - 2 * steady, 0.0),
                             first_call_s=first, second_call_s=second, steady_s=steady, steps_per_s=n * k / steady,
                             mean_altitude_m=z, times_s=times))
    print(json.dumps(dict(
        crazyflow_version=cf_version, jax_version=jax.__version__, device_kind=jax.devices()[0].device_kind,
        dt=1.0 / cfg["freq"], rows=rows,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    )))


if __name__ == "__main__":
    main()
