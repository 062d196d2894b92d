"""Coverage of the flight-log identification's uncertainties.

The sample flight (identification/data/make_flight_log.py: the averaged
model with hidden values, hover controller, excitation) is logged with a
fresh motion-capture noise seed each time; each log is identified
(:func:`flapjax.identify.flapper.flight_fit.identify_flight_log`) and every
parameter is checked against its hidden value: inside the reported
2-sigma interval? ``--dropouts F`` also removes about F of each log's rows
in bursts of 2-20 samples (motion-capture occlusions), to check that a log
with dropped samples keeps calibrated intervals.

Run: ``python -m benchmarks.identify_flight_coverage [--seeds 20] [--first 0]
[--dropouts 0.1] [--json FILE]``. The verdicts are those of
:mod:`benchmarks.coverage` (per parameter: 19 of 20 seeds, strict for
calibrated intervals; calibration, which sets the exit code: pooled
coverage >= 90 % and every RMS z-score inside its chi-square band). The
held-out line is the held-out position RMS over the position noise.
"""

from __future__ import annotations

import math
import sys
import time

from benchmarks.coverage import Coverage
from benchmarks.coverage import main as coverage_main


#: Added to a noise seed for the dropout pattern's seed.
DROPOUT_SEED_OFFSET = 1_000_003


def coverage(seeds, *, dropouts: float = 0.0, k_sigma: float = 2.0) -> dict:
    """Per-parameter coverage, z-scores and held-out errors over ``seeds``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from flapjax.data.sampling import with_dropouts
    from flapjax.identify.flapper.flight_fit import identify_flight_log
    from flapjax.sim.flapper.averaged_body import SAMPLE_HIDDEN, synthetic_flight_log

    cov = Coverage(k_sigma=k_sigma)
    for seed in seeds:
        log = synthetic_flight_log(noise_seed=seed)
        if dropouts:
            # a stream apart from the noise's: the rows dropped must not depend on the noise drawn
            log = with_dropouts(log, dropouts, seed=DROPOUT_SEED_OFFSET + seed)
        t0 = time.perf_counter()
        res = identify_flight_log(log)
        cov.seconds.append(time.perf_counter() - t0)
        z = cov.add(res.values, res.std, SAMPLE_HIDDEN)
        noise = math.sqrt(sum(res.details["noise"][k] ** 2 for k in ("x_m", "y_m", "z_m")))
        cov.add_validation("position", res.validation["identified"]["position_rms"] / noise)
        worst = max(z, key=lambda k: abs(z[k]))
        print(f"seed {seed}: max |z| {abs(z[worst]):.2f} ({worst}), {res.details['fit']['segments']} segments "
              f"({cov.seconds[-1]:.1f} s)", flush=True)
    return cov.summary()


def main(argv=None) -> int:
    from flapjax.identify.flapper.flight_parameters import FLIGHT_PARAMETERS

    def options(parser):
        parser.add_argument("--dropouts", type=float, default=0.0,
                            help="share of each log's rows removed in bursts of 2-20 samples")

    def title(args):
        return "flight-log fit" + (f" ({100 * args.dropouts:.0f} % of the rows dropped)" if args.dropouts else "")

    return coverage_main(lambda seeds, args: coverage(seeds, dropouts=args.dropouts), argv,
                         description="2-sigma coverage of the flight-log fit over noise seeds", title=title,
                         per_parameter=tuple(FLIGHT_PARAMETERS), unit="log", add_arguments=options)


if __name__ == "__main__":
    sys.exit(main())
