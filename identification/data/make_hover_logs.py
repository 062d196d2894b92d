"""Generate the sample multirotor hover log with the project's simulator.

Flies ``quad_x`` (rigid-body backend, wrench controller, the full rotor chain
without wind) through hovers at 0.85-6 rotor radii above the ground, at
1.15-6 radii from a wall (x = 2 m) and in free air, joined by moves and
free-air sweeps along x, y and z, with hidden chain coefficients that differ
from the defaults; logs at 200 Hz with motion-capture noise (0.3 mm,
0.11 deg), accelerometer white noise (0.12 m/s^2) and a constant
accelerometer bias (uniform in +-0.08 m/s^2 per axis).

Writes, next to this script:
  hover_quad_x.npz             the log (docs/data_formats.md, "Multirotor hover logs")
  hover_quad_x.scene.json      where the ground and the wall are
  hover_quad_x.truth.json      the hidden values, the drawn bias and the noise levels

    .venv/bin/python identification/data/make_hover_logs.py [--seed 0] [--csv]

Identify from it with
    flapjax.runs.run_hover_identification(
        "identification/data/hover_quad_x.npz", robot="quad_x", out_dir="out/hover")
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

from flapjax import rotor  # noqa: E402
from flapjax.data.hover_log import write_hover_log  # noqa: E402
from flapjax.sim.multirotor import synthetic_logs as S  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0, help="noise seed")
    ap.add_argument("--csv", action="store_true", help="also write hover_quad_x.csv (about 3 MB)")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    prof = rotor.profiles.preset("quad_x")
    truth = S.simulate_hover_flight(prof, S.hidden_chain_params())
    if truth["touching"].any() or truth["diverged"].any():
        raise SystemExit("the sample flight touched a surface or diverged; check the flight plan")
    cols, drawn = S.noisy_log(truth, args.seed)
    out = write_hover_log(args.out / "hover_quad_x.npz", cols, S.SCENE)
    if args.csv:
        write_hover_log(args.out / "hover_quad_x.csv", cols, S.SCENE, header="sample hover log of quad_x (flapjax simulator)")
    sidecar = {"robot": "quad_x", "hidden": S.HIDDEN, "accel_bias_mps2": drawn["accel_bias"], "noise": S.NOISE,
               "noise_seed": args.seed, "rate_hz": 200.0, "scene": S.SCENE,
               "note": "wall_fade_start and wall_range are in rotor radii; drag per body axis x, y, z"}
    (args.out / "hover_quad_x.truth.json").write_text(json.dumps(sidecar, indent=2) + "\n")
    print(f"wrote {out} ({out.stat().st_size / 1e3:.0f} kB, {cols['time_s'].shape[0]} rows)")


if __name__ == "__main__":
    main()
