"""Coverage of the phase-resolved stand fit's uncertainties over noise seeds.

Generates a record per seed (``identification/data/make_stand_waveform.py``:
fixed hidden lift scale, hinge stiffness and wing inertia, a fresh sensor
offset and fresh noise each seed), fits it
(:func:`flapjax.identify.flapper.waveform.fit_waveform`) and counts, for
every parameter and offset, the seeds whose hidden value lies within the
reported 2-sigma interval. Calibrated standard deviations give about 95 %.

Run: ``python -m benchmarks.identify_waveform_coverage [--seeds 20] [--first 0] [--json FILE]``
(about 9 s per seed on one core of a 2-core CPU after a first fit of about 25 s).

Two verdicts are printed (:func:`benchmarks.coverage.report`): the
per-parameter one for the three physical parameters and the calibration
one, which sets the exit code.
"""

from __future__ import annotations

import sys
import time

from benchmarks.coverage import Coverage, load_generator
from benchmarks.coverage import main as coverage_main

PHYSICAL = ("lift_scale", "hinge_stiffness", "wing_inertia_scale")


def coverage(seeds, *, k_sigma: float = 2.0, progress=print) -> dict:
    """Per-parameter coverage, z-scores and held-out errors over ``seeds``."""
    from flapjax.identify.flapper.waveform import fit_waveform
    from flapjax.data.stand_record import stand_waveform
    from flapjax.sim import flapper as fl

    gen = load_generator("make_stand_waveform")
    robot = fl.make_robot("fixed", "wing", backend="rigid")
    cov = Coverage(k_sigma=k_sigma)
    for seed in seeds:
        cols, truth = gen.make_waveform_record(seed)
        data = stand_waveform(cols["frequency_hz"], cols["phase_rad"], cols["fz_n"],
                              pitch_plate=cols["pitch_plate_rad"], roll_plate=cols["roll_plate_rad"],
                              source=f"seed {seed}", **{k: cols[k] for k in gen.CHANNELS[1:]})
        t0 = time.perf_counter()
        res = fit_waveform(data, robot=robot)
        cov.seconds.append(time.perf_counter() - t0)
        z = cov.add(res.values, res.std, truth)  # the parameters and the sensor offsets
        for ch, v in res.validation.items():
            cov.add_validation(ch, v["rms_over_sigma"])
        progress(f"seed {seed}: " + ", ".join(f"{k} z {v:+.2f}" for k, v in z.items())
                 + f" ({cov.seconds[-1]:.1f} s)")
    return cov.summary()


def main(argv=None) -> int:
    return coverage_main(coverage, argv, title="phase-resolved stand fit", per_parameter=PHYSICAL, unit="record",
                         description="2-sigma coverage of the phase-resolved stand fit over noise seeds")


if __name__ == "__main__":
    sys.exit(main())
