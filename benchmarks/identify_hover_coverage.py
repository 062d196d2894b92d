"""Coverage of the multirotor hover identification over noise seeds.

Simulates the sample hover flight of ``quad_x`` once (rigid backend, hidden
coefficients of :data:`flapjax.sim.multirotor.synthetic_logs.HIDDEN`), then
for each noise seed draws motion-capture and accelerometer noise and bias,
optionally drops rows in bursts (``--dropouts F``), fits
(:func:`flapjax.identify.multirotor.fit_hover`), and checks whether
each hidden value lies within the reported 2-sigma interval. The verdicts
are those of :mod:`benchmarks.coverage` (the calibration one sets the exit
code); the held-out line is the held-out RMS per body axis over the fit's
residual standard deviation.

    python -m benchmarks.identify_hover_coverage [--seeds 20] [--first 0] [--dropouts 0.05] [--json FILE]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from benchmarks.coverage import Coverage
from benchmarks.coverage import main as coverage_main


def truth_values(drawn) -> dict[str, float]:
    """The hidden coefficients by reported name, with the drawn accelerometer bias."""
    from flapjax.sim.multirotor import synthetic_logs as S

    h = S.HIDDEN
    out = {k: float(h[k]) for k in ("ground_coeff", "wall_thrust_coeff", "wall_lateral_coeff", "wall_fade_start",
                                     "wall_range")}
    for j, a in enumerate("xyz"):
        out[f"drag_linear_{a}"] = h["drag_linear"][j]
        out[f"drag_quadratic_{a}"] = h["drag_quadratic"][j]
        out[f"accel_bias_{a}"] = drawn["accel_bias"][j]
    return out


#: Added to a noise seed for the dropout pattern's seed (a stream apart from the noise's).
DROPOUT_SEED_OFFSET = 1_000_003


def coverage(seeds, *, dropouts: float = 0.0, k_sigma: float = 2.0) -> dict:
    """Per-parameter coverage, z-scores and held-out errors over ``seeds``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from flapjax import rotor
    from flapjax.data.hover_log import read_hover_log, write_hover_log
    from flapjax.data.sampling import with_dropouts
    from flapjax.identify.multirotor import fit_hover
    from flapjax.sim.multirotor import synthetic_logs as S

    prof = rotor.profiles.preset("quad_x")
    t0 = time.perf_counter()
    truth = S.simulate_hover_flight(prof, S.hidden_chain_params())
    if truth["touching"].any() or truth["diverged"].any():
        raise RuntimeError("the sample hover flight touched a surface or diverged")
    print(f"simulated {truth['time'].shape[0]} samples in {time.perf_counter() - t0:.1f} s", flush=True)
    cov = Coverage(k_sigma=k_sigma)
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            cols, drawn = S.noisy_log(truth, seed)
            if dropouts:
                cols = with_dropouts(cols, dropouts, seed=DROPOUT_SEED_OFFSET + seed)
            path = write_hover_log(Path(tmp) / f"hover_{seed}.npz", cols, S.SCENE)
            t1 = time.perf_counter()
            res = fit_hover(prof, read_hover_log(path, prof.n_rotors))
            cov.seconds.append(time.perf_counter() - t1)
            z = cov.add(res.values, res.std, truth_values(drawn))
            for axis, v in zip("xyz", res.validation["rms_over_sigma"]):
                cov.add_validation(f"a_{axis}", v)
            worst = max(z, key=lambda k: abs(z[k]))
            print(f"seed {seed}: max |z| {abs(z[worst]):.2f} ({worst}) ({cov.seconds[-1]:.1f} s)", flush=True)
    return cov.summary()


def main(argv=None) -> int:
    from flapjax.identify.multirotor import REPORTED

    model = tuple(k for k in REPORTED if not k.startswith("accel_bias"))

    def options(parser):
        parser.add_argument("--dropouts", type=float, default=0.0,
                            help="share of each log's rows removed in bursts of 2-20 samples")

    def title(args):
        dropped = f", {100 * args.dropouts:.0f} % of the rows dropped" if args.dropouts else ""
        return "hover-log fit (quad_x)" + dropped

    return coverage_main(lambda seeds, args: coverage(seeds, dropouts=args.dropouts), argv,
                         description="2-sigma coverage of the hover-log fit over noise seeds", title=title,
                         per_parameter=model, unit="log", add_arguments=options)


if __name__ == "__main__":
    sys.exit(main())
