"""Sample flapper flight log with hidden parameter values.

Generates what motion capture and the robot's own command log would record
during a 12 s excited hover: the cycle-averaged model
(:func:`flapjax.aero.cycle_averaged_wrench`) with the hidden values
:data:`flapjax.sim.flapper.averaged_body.SAMPLE_HIDDEN` (including a
speed-to-moment coupling ``L_v = 8e-4``, ``M_u = -4.8e-4`` N m s/m) flies
the robot's mass and inertia under a cascaded hover controller at 200 Hz,
excited by position-target steps, plate steps and frequency steps
(:func:`flapjax.sim.flapper.averaged_body.synthetic_flight_log`). The
logged pose carries

- white motion-capture noise, 0.2 mm in position and 3 mrad (0.17 deg) in
  attitude per sample (a marker set on a 30 g body tracked by a lab
  system at 200 Hz);
- a constant attitude offset (marker misalignment), 6 mrad in roll and
  -4 mrad in pitch, identified with the model.

The commands (frequency, plate angles) are logged exactly as the controller
sent them, each held until the next sample. ``--dropouts F`` removes about
F of the rows in bursts of 2-20 samples (motion-capture occlusions; the
fit handles such logs, docs/data_formats.md, "Dropped samples").

Run from the repository root::

    python identification/data/make_flight_log.py              # noise seed 0
    python identification/data/make_flight_log.py --seed 3 --out /tmp/flight.csv
    python identification/data/make_flight_log.py --dropouts 0.1 --out /tmp/flight_gaps.csv

It writes the log (CSV) and beside it ``<name>.hidden.json`` with the hidden
values, the noise levels and the seed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax

HERE = Path(__file__).resolve().parent
POSITION_NOISE = 2e-4  # [m]
ATTITUDE_NOISE = 3e-3  # [rad]
RATE = 200.0  # [Hz]
DURATION = 12.0  # [s]


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="noise seed (the flight itself is the same)")
    parser.add_argument("--out", type=Path, default=HERE / "flight_log.csv")
    parser.add_argument("--dropouts", type=float, default=0.0,
                        help="share of the rows removed in bursts of 2-20 samples (occlusions)")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    from flapjax.data.flight_log import write_flight_log
    from flapjax.data.sampling import with_dropouts
    from flapjax.identify.flapper.flight_parameters import FLIGHT_PARAMETERS
    from flapjax.sim.flapper.averaged_body import SAMPLE_HIDDEN, synthetic_flight_log

    log = synthetic_flight_log(noise_seed=args.seed, duration=DURATION, rate=RATE,
                               position_noise=POSITION_NOISE, attitude_noise=ATTITUDE_NOISE)
    if args.dropouts:
        log = with_dropouts(log, args.dropouts, seed=args.seed + 1_000_003)  # apart from the noise's stream
    comment = (f"flapjax sample flight log (identification/data/make_flight_log.py, noise seed {args.seed}): "
               f"{DURATION:g} s at {RATE:g} Hz\nhidden values in {args.out.stem}.hidden.json")
    write_flight_log(args.out, log, comment=comment)
    hidden = {
        "hidden": SAMPLE_HIDDEN, "units": FLIGHT_PARAMETERS,
        "noise": {"position_m": POSITION_NOISE, "attitude_rad": ATTITUDE_NOISE},
        "rate_hz": RATE, "duration_s": DURATION, "seed": args.seed, "dropouts": args.dropouts,
        "note": "D_w_x, D_w_y are the rate damping about body x, y; D_w_z, f_ref, mass, gravity and inertia are "
                "the robot's nominal values (not identified from the log).",
    }
    path = args.out.with_name(f"{args.out.stem}.hidden.json")
    path.write_text(json.dumps(hidden, indent=2) + "\n")
    print(f"wrote {args.out} ({len(log['time_s'])} rows) and {path}")
    return args.out


if __name__ == "__main__":
    main()
