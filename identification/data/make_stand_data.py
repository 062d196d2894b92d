"""Sample thrust-stand tables with hidden parameter values.

Generates what a force/torque sensor under the robot would record: one row
per condition (7 frequencies from 15 to 45 Hz times 13 plate settings: level,
each plate angle alone at +-0.15 and +-0.3 rad, and the four combinations of
+-0.2 rad), each the cycle mean of the six-axis sensor reading, from the
stand model of :mod:`flapjax.identify.flapper.stand_prediction` with the hidden values
:data:`HIDDEN`, plus

- a sensor offset per channel, drawn once per table (what is left of the
  zero after taring the sensor: thermal drift and the preload of the
  mount), standard deviation :data:`BIAS_STD`;
- white noise on every cycle mean, standard deviation :data:`NOISE_STD`
  (a 6-axis sensor of the Nano17 class resolves about 3 mN and 15 uN m per
  sample; averaging a few hundred flapping cycles leaves the structural
  vibration of the mount, about 1 mN and 5 uN m).

Run from the repository root::

    python identification/data/make_stand_data.py            # seed 0
    python identification/data/make_stand_data.py --seed 3 --out /tmp/stand.csv

It writes the table (CSV) and beside it ``<name>.hidden.json`` with the
hidden values, the drawn offsets, the noise levels and the seed.
:func:`make_stand_table` is importable (the coverage benchmark and the tests
load this file by path).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

#: Hidden stand-model parameters (the fit never sees them) [SI].
HIDDEN = {
    "k_f": 1.62e-4,            # N/Hz^2
    "k_roll": 5.6e-4,          # N m/rad (roll moment per rad of pitch_joint, at f_ref)
    "k_pitch": 5.2e-4,         # N m/rad (pitch moment per rad of roll_joint, at f_ref)
    "k_roll_cross": 2.5e-5,    # N m/rad (roll moment per rad of roll_joint)
    "k_pitch_cross": -1.8e-5,  # N m/rad (pitch moment per rad of pitch_joint)
}

#: Noise on each cycle mean (one standard deviation) [N or N m].
NOISE_STD = {"fz_n": 1.0e-3, "fx_n": 7e-4, "fy_n": 7e-4, "mx_nm": 5e-6, "my_nm": 5e-6}

#: Sensor offset left after taring, drawn per table (one standard deviation) [N or N m].
BIAS_STD = {"fz_n": 2e-3, "fx_n": 1.5e-3, "fy_n": 1.5e-3, "mx_nm": 1e-5, "my_nm": 1e-5}

FREQUENCIES = (15.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0)  # Hz


def conditions() -> tuple[np.ndarray, np.ndarray]:
    """(frequency (n,) [Hz], plate (n, 2) (delta_p, delta_r) [rad]) of every row."""
    plates = [(0.0, 0.0)]
    for a in (-0.3, -0.15, 0.15, 0.3):
        plates += [(a, 0.0), (0.0, a)]
    plates += [(0.2, 0.2), (0.2, -0.2), (-0.2, 0.2), (-0.2, -0.2)]
    f = np.repeat(np.asarray(FREQUENCIES), len(plates))
    p = np.tile(np.asarray(plates), (len(FREQUENCIES), 1))
    return f, p


def make_stand_table(seed: int = 0, hidden: dict | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """One noisy stand table: ``(columns, truth)`` with ``columns`` name ->
    (n,) values in file order and ``truth`` the hidden values plus the drawn
    offsets (``fz_offset`` ...), the noise levels and the seed."""
    from flapjax.data.stand_table import CHANNELS
    from flapjax.identify.flapper.stand_prediction import stand_model

    hidden = dict(HIDDEN if hidden is None else hidden)
    rng = np.random.default_rng(seed)
    f, plate = conditions()
    offsets = {f"{ch.split('_')[0]}_offset": float(rng.normal(0.0, BIAS_STD[ch])) for ch in CHANNELS}
    clean = np.asarray(stand_model({**hidden, **offsets}, f, plate, CHANNELS))
    noise = np.stack([rng.normal(0.0, NOISE_STD[ch], f.shape) for ch in CHANNELS], axis=1)
    meas = clean + noise
    columns = {"frequency_hz": f, "pitch_plate_rad": plate[:, 0], "roll_plate_rad": plate[:, 1]}
    columns.update({ch: meas[:, j] for j, ch in enumerate(CHANNELS)})
    truth = {**hidden, **offsets, "noise_std": dict(NOISE_STD), "bias_std": dict(BIAS_STD), "seed": int(seed)}
    return columns, truth


def main(argv=None) -> None:
    from flapjax.data.tables import write_sample

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0, help="noise seed")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("stand_sample.csv"))
    args = ap.parse_args(argv)
    columns, truth = make_stand_table(args.seed)
    comment = (f"Sample thrust-stand table made by identification/data/make_stand_data.py --seed {args.seed}.\n"
               "One row per condition: cycle means of a six-axis force/torque sensor; moments about the\n"
               "robot's centre of mass, body axes. Hidden values, offsets and noise levels: the .hidden.json file.")
    sidecar = write_sample(args.out, columns, truth, comment)
    print(f"wrote {args.out} ({len(columns['frequency_hz'])} rows) and {sidecar}")


if __name__ == "__main__":
    main()
