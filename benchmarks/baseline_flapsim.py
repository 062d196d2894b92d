"""Baseline A: the fixed-base frequency sweep as FlapSim users run it today.

The same sweep (0.6 s per frequency, first 0.3 s discarded, cycle-mean
world force) is run

* by flapjax: :func:`flapjax.sim.flapper.sweep` with all frequencies in one
  vmapped batch, timed from a cold start in this process (robot build and
  compilation included), float32;
* by the baseline: :mod:`benchmarks.baselines.flapsim_numpy`, one frequency
  after the other, C MuJoCo + the per-wing model in NumPy, float64.

Goal: flapjax >= 5x faster in wall time, compile included. Both results are
compared (mean F_z) to show they computed the same thing. A second flapjax
sweep with different frequencies checks that nothing recompiles.

    python -m benchmarks.baseline_flapsim [--quick] [--frequencies 64]
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import common as C

DURATION, DISCARD = 0.6, 0.3


def compile_counter():
    """Number of XLA backend compilations so far (monitoring events)."""
    import jax

    count = [0]

    def listener(event, *args, **kwargs):
        if "backend_compile" in event:
            count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    return count


def run(quick: bool, n_frequencies: int = 64, baseline_subset: int | None = None) -> dict:
    import jax

    from flapjax.sim import flapper as fl

    freqs = np.linspace(20.0, 40.0, n_frequencies)
    compiles = compile_counter()
    t0 = time.perf_counter()
    robot = fl.make_robot("fixed", "wing")
    res = fl.sweep(freqs, duration=DURATION, discard=DISCARD, robot=robot, batch_size=n_frequencies)
    fz = np.asarray(jax.block_until_ready(res.force[:, 2]))
    flapjax_cold = time.perf_counter() - t0
    c_first = compiles[0]
    t0 = time.perf_counter()
    res2 = fl.sweep(freqs + 0.25, duration=DURATION, discard=DISCARD, robot=robot, batch_size=n_frequencies)
    jax.block_until_ready(res2.force)
    flapjax_warm = time.perf_counter() - t0
    recompiles = compiles[0] - c_first
    C.log(f"flapjax sweep of {n_frequencies} frequencies: {flapjax_cold:.2f} s cold (build + compile + run), "
          f"{flapjax_warm:.2f} s warm; recompilations on new frequencies: {recompiles}")

    from benchmarks.baselines.flapsim_numpy import FlapperBaseline

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
    C.log(f"speed-up, flapjax compile included: {speedup:.1f}x (goal >= 5x); "
          f"max |F_z| difference flapjax(float32) vs baseline(float64): {100 * rel.max():.3f} %")
    n_steps = int(round(DURATION / robot.dt))
    return dict(
        env=C.env_info(), quick=quick, n_frequencies=n_frequencies, duration_s=DURATION, discard_s=DISCARD,
        n_steps=n_steps, flapjax_cold_s=flapjax_cold, flapjax_warm_s=flapjax_warm,
        flapjax_compilations_first_sweep=c_first, flapjax_recompilations_on_new_frequencies=recompiles,
        baseline_s=base_time, baseline_frequencies_measured=len(idx), baseline_s_for_all=base_time_all,
        baseline_measured_all=measured_all,
        baseline_steps_per_s=len(idx) * n_steps / base_time,
        flapjax_warm_steps_per_s=n_frequencies * n_steps / flapjax_warm,
        speedup_with_compile=speedup, speedup_warm=base_time_all / flapjax_warm, goal=5.0, goal_met=speedup >= 5.0,
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
