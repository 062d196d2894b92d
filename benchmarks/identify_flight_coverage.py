"""Coverage of the flight-log identification's uncertainties.

The sample flight (identification/data/make_flight_log.py: the averaged
model with hidden values, hover controller, excitation) is logged with 20
motion-capture noise seeds; each log is identified
(:func:`flapjax.identify.flapper.flight_log.identify_flight_log`) and every
parameter is checked against its hidden value: inside the reported
2-sigma interval? The acceptance is at least 19 of 20 seeds per parameter.

Run: ``python -m benchmarks.identify_flight_coverage [--seeds 20]``; prints
a table (coverage per parameter, mean normalized error and its spread) and
exits non-zero when a parameter is covered in fewer than 19 of 20 seeds
(scaled: 95 % of the seeds run).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="flight-log identification: 2-sigma coverage over noise seeds")
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    from flapjax.identify.flapper import flight_log as fl_log

    names = list(fl_log.FLIGHT_PARAMETERS)
    z = np.zeros((args.seeds, len(names)))
    held = []
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        log = fl_log.synthetic_flight_log(noise_seed=seed)
        res = fl_log.identify_flight_log(log)
        for j, k in enumerate(names):
            z[seed, j] = (res["values"][k] - fl_log.SAMPLE_HIDDEN[k]) / res["std"][k]
        held.append(res["validation"]["identified"]["position_rms"])
        print(f"seed {seed:2d}: max |error| / std {np.max(np.abs(z[seed])):.2f} "
              f"({names[int(np.argmax(np.abs(z[seed])))]}), held-out position RMS {1e3 * held[-1]:.3f} mm, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    need = math.ceil(0.95 * args.seeds)
    print(f"\n{'parameter':<14} {'inside 2 sigma':>15} {'mean z':>8} {'std z':>7}")
    ok = True
    for j, k in enumerate(names):
        inside = int(np.sum(np.abs(z[:, j]) <= 2.0))
        ok &= inside >= need
        print(f"{k:<14} {inside:>9d} / {args.seeds:<3d} {np.mean(z[:, j]):>8.2f} {np.std(z[:, j]):>7.2f}")
    joint = int(np.sum(np.all(np.abs(z) <= 2.0, axis=1)))
    print(f"all parameters inside at once: {joint} / {args.seeds}; held-out position RMS "
          f"{1e3 * np.mean(held):.3f} mm (mean); {'PASS' if ok else 'FAIL'} (need {need} per parameter)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
