"""Sample phase-resolved stand records with hidden per-wing parameters.

Generates what a force sensor under the fixed flapping-wing robot records,
phase-averaged against the stroke drive: five conditions (25, 30, 35 and
40 Hz with level plates, 35 Hz with the pitch plate at 0.2 rad), 24 phase
bins each, channels F_z, F_x, F_y, M_x, M_y, from the per-wing model
(:func:`flapjax.sim.flapper.stand_waveform.sensor_waveform`: aerodynamic load
minus the rate of change of the robot's momenta, plus the moment of the
weight the plate and wings move; tared once with the robot at rest and the
plates level) with the hidden values
:data:`HIDDEN`, averaged over a longer steady stretch than the fit
averages (1.2 s runs, the last 0.6 s averaged: 15 to 24 cycles, against the
fit's 0.2 s), plus

- a sensor offset per channel, drawn once per record (what is left of the
  zero after taring), standard deviation :data:`BIAS_STD`;
- white noise on every bin mean, standard deviation :data:`NOISE_STD` (a
  sensor read at 10 kHz with 20 mN and 0.5 mN m of mount vibration, averaged
  over about 200 cycles into 24 bins, leaves about 0.4 mN and 10 uN m; the
  model's own cycle-to-cycle spread of M_y, about 2 uN m between 0.2 s and
  0.6 s averages, stays well below that).

Run from the repository root::

    python identification/data/make_stand_waveform.py            # seed 0
    python identification/data/make_stand_waveform.py --seed 3 --out /tmp/waveform.csv

It writes the record (CSV) and beside it ``<name>.hidden.json`` with the
hidden values, the drawn offsets, the noise levels and the seed.
:func:`make_waveform_record` is importable (the coverage benchmark and the
tests load this file by path).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

#: Hidden per-wing parameters (the fit never sees them).
HIDDEN = {
    "lift_scale": 0.75,           # - (model nominal 0.720045)
    "hinge_stiffness": 3.3e-4,    # N m/rad (nominal 2.922e-4)
    "wing_inertia_scale": 0.85,   # - (nominal 1)
}

#: Conditions: (frequency [Hz], pitch plate [rad], roll plate [rad]).
CONDITIONS = ((25.0, 0.0, 0.0), (30.0, 0.0, 0.0), (35.0, 0.0, 0.0), (40.0, 0.0, 0.0), (35.0, 0.2, 0.0))

N_BINS = 24

#: Noise on each bin mean (one standard deviation) [N, N m].
NOISE_STD = {"fz_n": 4e-4, "fx_n": 4e-4, "fy_n": 4e-4, "mx_nm": 1e-5, "my_nm": 1e-5}

#: Sensor offset left after taring, drawn per record (one standard deviation) [N, N m].
BIAS_STD = {"fz_n": 2e-3, "fx_n": 2e-3, "fy_n": 2e-3, "mx_nm": 2e-5, "my_nm": 2e-5}

CHANNELS = ("fz_n", "fx_n", "fy_n", "mx_nm", "my_nm")

_CLEAN: dict = {}


def clean_record(hidden: dict | None = None) -> dict[str, np.ndarray]:
    """Noise-free columns of the record at ``hidden`` (cached per values)."""
    from flapjax.sim.flapper.stand_waveform import READING_COLUMNS, WaveformRollout, eval_waveform

    hidden = dict(HIDDEN if hidden is None else hidden)
    key = tuple(sorted(hidden.items()))
    if key not in _CLEAN:
        cond = np.asarray(CONDITIONS)
        centres = np.tile((np.arange(N_BINS) + 0.5) * 2 * math.pi / N_BINS, (len(cond), 1))
        ro = WaveformRollout.make(cond[:, 0], cond[:, 1:], centres, duration=1.2, discard=0.6)
        out = np.asarray(eval_waveform(ro, hidden))  # (m, B, 5): READING_COLUMNS
        cols = {"frequency_hz": np.repeat(cond[:, 0], N_BINS), "phase_rad": centres.ravel(),
                "pitch_plate_rad": np.repeat(cond[:, 1], N_BINS), "roll_plate_rad": np.repeat(cond[:, 2], N_BINS)}
        cols.update({ch: out[..., READING_COLUMNS.index(ch)].ravel() for ch in CHANNELS})
        _CLEAN[key] = cols
    return {k: v.copy() for k, v in _CLEAN[key].items()}


def make_waveform_record(seed: int = 0, hidden: dict | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """One noisy record: ``(columns, truth)`` with ``columns`` name -> (n,)
    values in file order and ``truth`` the hidden values plus the drawn
    offsets (``fz_offset`` ...), the noise levels and the seed."""
    hidden = dict(HIDDEN if hidden is None else hidden)
    cols = clean_record(hidden)
    rng = np.random.default_rng(seed)
    offsets = {}
    for ch in CHANNELS:
        offsets[f"{ch.split('_')[0]}_offset"] = b = float(rng.normal(0.0, BIAS_STD[ch]))
        cols[ch] = cols[ch] + b + rng.normal(0.0, NOISE_STD[ch], cols[ch].shape)
    truth = {**hidden, **offsets, "noise_std": dict(NOISE_STD), "bias_std": dict(BIAS_STD), "seed": int(seed)}
    return cols, truth


def main(argv=None) -> None:
    from flapjax.data.tables import write_sample

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0, help="noise seed")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("stand_waveform_sample.csv"))
    args = ap.parse_args(argv)
    columns, truth = make_waveform_record(args.seed)
    comment = (f"Sample phase-resolved stand record made by identification/data/make_stand_waveform.py --seed {args.seed}.\n"
               "One row per (condition, phase bin): the six-axis sensor's reading under the fixed robot averaged in\n"
               "bins of the stroke drive phase (stroke of the left wing = A sin(phase)), body axes, moments about\n"
               "the centre of mass at rest; tared once with the robot at rest and the plates level.\n"
               "Hidden values, offsets and noise levels: the .hidden.json file.")
    sidecar = write_sample(args.out, columns, truth, comment)
    print(f"wrote {args.out} ({len(columns['frequency_hz'])} rows) and {sidecar}")


if __name__ == "__main__":
    main()
