"""Baseline A: the fixed-base frequency sweep as FlapSim users run it today.

The same sweep (0.6 s per frequency, first 0.3 s discarded, cycle-mean
world force) is run

* by flapjax: :func:`flapjax.sim.flapper.sweep` with all frequencies in one
  vmapped batch, timed from a cold start in this process (robot build and
  compilation included), float32, on its default fixed-base robot (the
  pure-JAX joint tree, ``backend="rigid"``), then, also cold (its own
  program), on the MJX robot for comparison;
* by the baseline: :mod:`benchmarks.baselines.flapsim_numpy`, one frequency
  after the other, C MuJoCo + the per-wing model in NumPy, float64.

Goal: flapjax >= 10x faster in wall time, compile included. The cold time
is a genuinely cold one: JAX's persistent compilation cache is switched off
for the whole process, so every program compiles. Its breakdown (tracing,
lowering, each XLA compilation) is recorded beside it. Both results are
compared (mean F_z) to show they computed the same thing. A second flapjax
sweep with different frequencies checks that nothing recompiles.

    python -m benchmarks.baseline_flapsim [--quick] [--frequencies 64]
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import common as C

DURATION, DISCARD = 0.6, 0.3
GOAL = 10.0
# --quick runs the serial baseline on this many of the frequencies (evenly spread)
# and scales its time linearly (the loop is serial); the full run measures all.
QUICK_BASELINE_SUBSET = 16


def compile_counter():
    """Number of XLA backend compilations so far (monitoring events), a
    one-element list."""
    import jax

    count = [0]

    def listener(event, *args, **kwargs):
        if "backend_compile" in event:
            count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    return count


def compile_log() -> list[tuple[str, str, float]]:
    """A list that fills with (stage, program, seconds) of every tracing,
    lowering and XLA compilation from now on (``jax.monitoring`` events)."""
    import jax

    log = []
    stages = {"jaxpr_trace_duration": "trace", "jaxpr_to_mlir_module_duration": "lower",
              "backend_compile_duration": "compile"}

    def listener(event, seconds, **kwargs):
        for key, stage in stages.items():
            if event.endswith(key):
                log.append((stage, str(kwargs.get("fun_name", "?")), float(seconds)))

    jax.monitoring.register_event_duration_secs_listener(listener)
    return log


def no_persistent_cache() -> None:
    """Switch JAX's persistent compilation cache off for this process (an
    environment variable or an earlier ``enable_compilation_cache`` would
    otherwise turn a cold start into cache reads)."""
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    jax.config.update("jax_compilation_cache_dir", None)


def breakdown(log: list[tuple[str, str, float]]) -> dict:
    """Seconds per stage and the XLA compilations (program, seconds) of a compile log."""
    total = {stage: sum(s for st, _, s in log if st == stage) for stage in ("trace", "lower", "compile")}
    return dict(seconds=total, compilations=[[name, s] for st, name, s in log if st == "compile"])


def run(quick: bool, n_frequencies: int = 64, baseline_subset: int | None = None) -> dict:
    import jax

    from flapjax.sim import flapper as fl

    no_persistent_cache()
    freqs = np.linspace(20.0, 40.0, n_frequencies)
    log = compile_log()
    t0 = time.perf_counter()
    robot = fl.make_robot("fixed", "wing", backend="rigid")  # sweep's default robot
    res = fl.sweep(freqs, duration=DURATION, discard=DISCARD, robot=robot, batch_size=n_frequencies)
    fz = np.asarray(jax.block_until_ready(res.force))[:, 2]
    flapjax_cold = time.perf_counter() - t0
    cold = breakdown(log)
    c_first = len(cold["compilations"])
    t0 = time.perf_counter()
    res2 = fl.sweep(freqs + 0.25, duration=DURATION, discard=DISCARD, robot=robot, batch_size=n_frequencies)
    jax.block_until_ready(res2.force)
    flapjax_warm = time.perf_counter() - t0
    recompiles = len(breakdown(log)["compilations"]) - c_first
    C.log(f"flapjax sweep of {n_frequencies} frequencies (pure-JAX joint tree): {flapjax_cold:.2f} s cold "
          f"(build + compile + run), {flapjax_warm:.2f} s warm; recompilations on new frequencies: {recompiles}")
    C.log("cold breakdown: " + ", ".join(f"{k} {v:.2f} s" for k, v in cold["seconds"].items())
          + "; compilations: " + ", ".join(f"{n} {s:.2f} s" for n, s in cold["compilations"]))
    n_log = len(log)
    t0 = time.perf_counter()
    robot_mjx = fl.make_robot("fixed", "wing")
    res_mjx = fl.sweep(freqs, duration=DURATION, discard=DISCARD, robot=robot_mjx, batch_size=n_frequencies)
    fz_mjx = np.asarray(jax.block_until_ready(res_mjx.force))[:, 2]
    mjx_cold = time.perf_counter() - t0
    mjx_breakdown = breakdown(log[n_log:])
    t0 = time.perf_counter()
    jax.block_until_ready(fl.sweep(freqs + 0.25, duration=DURATION, discard=DISCARD, robot=robot_mjx,
                                   batch_size=n_frequencies).force)
    mjx_warm = time.perf_counter() - t0
    tree_vs_mjx = float(np.max(np.abs(fz - fz_mjx) / np.abs(fz_mjx)))
    C.log(f"the same sweep on the MJX robot: {mjx_cold:.2f} s cold (its own program), {mjx_warm:.2f} s warm; "
          f"max F_z difference tree vs MJX {100 * tree_vs_mjx:.2g} %")

    from benchmarks.baselines.flapsim_numpy import FlapperBaseline

    if baseline_subset is None and quick:
        baseline_subset = QUICK_BASELINE_SUBSET
    idx = np.arange(n_frequencies)
    if baseline_subset is not None and baseline_subset < n_frequencies:
        idx = np.linspace(0, n_frequencies - 1, baseline_subset).round().astype(int)
    t0 = time.perf_counter()
    sim = FlapperBaseline.from_assets()
    base = np.stack([sim.cycle_mean_force(float(freqs[i]), DURATION, DISCARD) for i in idx])
    base_time = time.perf_counter() - t0
    measured_all = len(idx) == n_frequencies
    base_time_all = base_time * n_frequencies / len(idx)
    rel = np.abs(fz[idx] - base[:, 2]) / np.abs(base[:, 2])
    C.log(f"baseline (C MuJoCo + NumPy, serial): {base_time:.1f} s for {len(idx)} frequencies"
          + ("" if measured_all else f" -> {base_time_all:.1f} s for {n_frequencies} (linear, serial)"))
    speedup = base_time_all / flapjax_cold
    C.log(f"speed-up, flapjax compile included: {speedup:.1f}x (goal >= {GOAL:g}x; MJX robot "
          f"{base_time_all / mjx_cold:.1f}x); "
          f"max |F_z| difference flapjax(float32) vs baseline(float64): {100 * rel.max():.3f} %")
    n_steps = int(round(DURATION / robot.dt))
    return dict(
        env=C.env_info(), quick=quick, n_frequencies=n_frequencies, duration_s=DURATION, discard_s=DISCARD,
        n_steps=n_steps, flapjax_cold_s=flapjax_cold, flapjax_warm_s=flapjax_warm,
        flapjax_cold_breakdown_s=cold["seconds"], flapjax_cold_compilations=cold["compilations"],
        persistent_compilation_cache=bool(jax.config.jax_enable_compilation_cache),
        flapjax_compilations_first_sweep=c_first, flapjax_recompilations_on_new_frequencies=recompiles,
        baseline_s=base_time, baseline_frequencies_measured=len(idx), baseline_s_for_all=base_time_all,
        baseline_measured_all=measured_all,
        baseline_steps_per_s=len(idx) * n_steps / base_time,
        flapjax_warm_steps_per_s=n_frequencies * n_steps / flapjax_warm,
        speedup_with_compile=speedup, speedup_warm=base_time_all / flapjax_warm, goal=GOAL, goal_met=speedup >= GOAL,
        flapjax_robot="fixed-base per-wing robot, backend='rigid' (pure-JAX joint tree)",
        mjx_cold_s=mjx_cold, mjx_warm_s=mjx_warm, mjx_cold_breakdown_s=mjx_breakdown["seconds"],
        mjx_speedup_with_compile=base_time_all / mjx_cold, mjx_speedup_warm=base_time_all / mjx_warm,
        max_rel_diff_fz_tree_vs_mjx=tree_vs_mjx, fz_mjx=fz_mjx.tolist(),
        max_rel_diff_fz=float(rel.max()), frequencies=freqs.tolist(), fz_flapjax=fz.tolist(),
        fz_baseline=base[:, 2].tolist(), baseline_indices=idx.tolist(),
    )


def main(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--frequencies", type=int, default=64)
    p.add_argument("--baseline-subset", type=int, default=None,
                   help="run the serial baseline on this many of the frequencies and scale linearly")
    a = p.parse_args(argv)
    C.print_header("baseline A: FlapSim-style sweep")
    C.log("wrote", C.write_json("baseline_flapsim", run(a.quick, a.frequencies, a.baseline_subset)))


if __name__ == "__main__":
    main()
