"""Shared helpers of the benchmark scripts: environment, timing, memory, output.

Timing protocol (every script): ``jit(f).lower(args).compile()`` is timed as
the compile time; one warm-up call of the compiled function follows; the
steady-state time is the median of ``repeats`` further calls, each ended by
``block_until_ready``. Memory: XLA's buffer assignment of the compiled
program (``compiled.memory_analysis()``: arguments, outputs, temporaries)
and the process's peak resident set (``resource.getrusage``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import statistics
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent
# ``benchmarks.run --device gpu`` points this at results/gpu so GPU figures
# sit beside the CPU ones instead of replacing them.
RESULTS = Path(os.environ.get("FLAPJAX_BENCH_RESULTS", ROOT / "results"))


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def env_info() -> dict[str, Any]:
    """Device kind, versions and machine load at the time of the run."""
    import jax

    dev = jax.devices()[0]
    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover - platform without getloadavg
        load = (float("nan"),) * 3
    return dict(
        date=_dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        device_kind=dev.device_kind,
        platform=dev.platform,
        n_devices=len(jax.devices()),
        cpu_count=os.cpu_count(),
        load_average=[round(x, 2) for x in load],
        python=platform.python_version(),
        jax=jax.__version__,
        jaxlib=package_version("jaxlib"),
        mujoco=package_version("mujoco"),
        mujoco_mjx=package_version("mujoco-mjx"),
        numpy=package_version("numpy"),
        x64=bool(jax.config.jax_enable_x64),
    )


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far [MiB]."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0 if sys.platform != "darwin" else r / 2**20


def current_rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except Exception:  # pragma: no cover - psutil missing
        return float("nan")


def memory_stats(compiled) -> dict[str, float]:
    """XLA buffer sizes of a compiled program [MiB] (NaN where unsupported)."""
    nan = float("nan")
    try:
        m = compiled.memory_analysis()
    except Exception:  # pragma: no cover - backend without the analysis
        m = None
    if m is None:
        return dict(argument_mb=nan, output_mb=nan, temp_mb=nan, total_mb=nan)
    arg, out, tmp = m.argument_size_in_bytes, m.output_size_in_bytes, m.temp_size_in_bytes
    alias = getattr(m, "alias_size_in_bytes", 0)
    mb = 2.0**20
    return dict(argument_mb=arg / mb, output_mb=out / mb, temp_mb=tmp / mb, total_mb=(arg + out + tmp - alias) / mb)


def block(x):
    import jax

    return jax.block_until_ready(x)


def measure(fn: Callable, args: tuple, *, world_steps: int, repeats: int = 3, jitted=None) -> dict[str, Any]:
    """Compile ``fn`` for ``args``, warm up once, time ``repeats`` calls.

    Returns compile time, steady time (median), world-steps per second and
    XLA memory. ``jitted`` may be an already ``jax.jit``-wrapped function.
    """
    import jax

    jf = jax.jit(fn) if jitted is None else jitted
    t0 = time.perf_counter()
    lowered = jf.lower(*args)
    compiled = lowered.compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = block(compiled(*args))
    warmup_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = block(compiled(*args))
        times.append(time.perf_counter() - t0)
    steady = statistics.median(times)
    res = dict(compile_s=compile_s, warmup_s=warmup_s, steady_s=steady, times_s=times,
               steps_per_s=world_steps / steady, world_steps=world_steps)
    res.update(memory_stats(compiled))
    res["_out"] = out
    res["_compiled"] = compiled
    return res


def hlo_op_counts(compiled, ops=("scatter", "gather", "while", "custom-call")) -> dict[str, int]:
    """How often each HLO op appears in the optimized program (a cost hint)."""
    import re

    try:
        text = compiled.as_text()
    except Exception:  # pragma: no cover - backend without text
        return {}
    return {op: len(re.findall(rf"= [^=]*? {op}\(", text)) for op in ops}


def retime(compiled, args: tuple, repeats: int) -> float:
    """Median steady time of an already compiled function [s]."""
    block(compiled(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        block(compiled(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def throughput_row(name: str, n: int, k: int, *, keys: tuple[str, ...] = ()) -> dict | None:
    """The throughput section's row of the same program (workload, worlds,
    steps, JAX version) in ``results/throughput.json``, if it has one with
    every key in ``keys``."""
    import jax

    path = RESULTS / "throughput.json"
    if not path.exists():
        return None
    tp = json.loads(path.read_text())
    if tp.get("env", {}).get("jax") != jax.__version__:
        return None
    return next((r for r in tp["rows"] if r["workload"] == name and r["n_worlds"] == n and r["n_steps"] == k
                 and all(key in r for key in keys)), None)


def strip_private(d: dict) -> dict:
    return {k: v for k, v in d.items() if not k.startswith("_")}


def write_json(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = dict(payload)
    payload.setdefault("peak_rss_mb", peak_rss_mb())
    path.write_text(json.dumps(payload, indent=1, default=_jsonable) + "\n")
    log(f"peak resident memory of this process: {payload['peak_rss_mb']:.0f} MiB")
    return path


def _jsonable(x):
    try:
        import numpy as np

        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, np.ndarray):
            return x.tolist()
    except Exception:  # pragma: no cover
        pass
    return str(x)


def print_header(title: str) -> None:
    """Device kind, versions and load, printed at the start of every script."""
    e = env_info()
    log(f"# {title}: {e['date']}, device {e['device_kind']} ({e['platform']} x{e['n_devices']}, "
        f"{e['cpu_count']} cores, load {e['load_average']}), JAX {e['jax']}, jaxlib {e['jaxlib']}, "
        f"MuJoCo {e['mujoco']}, MJX {e['mujoco_mjx']}, x64 {e['x64']}")


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="smaller step counts and fewer repeats")
    p.add_argument("--repeats", type=int, default=None, help="timed calls per configuration (median)")
    return p


def log(*a) -> None:
    print(*a, flush=True)


def fmt_rate(x: float) -> str:
    if x != x:  # NaN
        return "n/a"
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if x >= div:
            return f"{x / div:.3g} {unit}"
    return f"{x:.3g}"
