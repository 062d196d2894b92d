"""Hover the insect-scale robot from randomized starts with gains designed on
its identified averaged model (docs/flapper_robots.md, section 6).

    flapjax identify --robot examples/flappers/insect/robot.toml --quick --out out/insect
    python examples/flappers/insect/hover.py out/insect/cycle_averaged.json --model wing --worlds 16

:func:`flapjax.sim.flapper.hover_rollout` flies it: the hover controller's
two inputs reach the robot's channels (stroke bias, amplitude difference)
through the averaged model's control matrix, with gains designed through
those channels (:func:`flapjax.sim.flapper.channel_gains.channel_gains`,
frequency held within the description's ``stroke.frequency_range``).
Starts: position within ``--position-spread`` [m] of the target on each
axis and tilt within ``--tilt-spread`` [rad] about x and y, at rest.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.sim import flapper
from flapjax.sim.flapper.channel_gains import channel_gains

DESCRIPTION = "examples/flappers/insect/robot.toml"
TARGET = (0.0, 0.0, 0.5)


def setup(averaged_path: str, aero_model: str):
    """(robot, params, gains) of the described robot at its identified hover frequency."""
    desc = flapper.load_robot_description(DESCRIPTION)
    avg = CycleAveragedParams.from_json(averaged_path)
    root = "lumped" if aero_model == "averaged" else "free"
    robot = flapper.make_robot(root, aero_model, description=desc, backend="rigid",
                               timestep=1e-4 if aero_model == "averaged" else None)
    params = flapper.default_params(robot, description=desc, frequency=float(avg.hover_frequency), averaged=avg)
    return robot, params, channel_gains(robot, params, frequency_limits=desc.frequency_range)


def random_starts(n: int, position_spread: float, tilt_spread: float, seed: int = 0):
    """(positions (n, 3) [m], quaternions (n, 4)) of the randomized starts."""
    rng = np.random.default_rng(seed)
    pos = np.asarray(TARGET) + rng.uniform(-position_spread, position_spread, (n, 3))
    tilt = rng.uniform(-tilt_spread, tilt_spread, (n, 2))
    angle = np.hypot(tilt[:, 0], tilt[:, 1])
    axis = np.c_[tilt, np.zeros(n)] / np.maximum(angle, 1e-12)[:, None]
    return pos, np.c_[np.cos(angle / 2), np.sin(angle / 2)[:, None] * axis]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("averaged", help="cycle_averaged.json of flapjax identify --robot")
    ap.add_argument("--model", choices=("wing", "averaged"), default="wing")
    ap.add_argument("--worlds", type=int, default=16)
    ap.add_argument("--duration", type=float, default=2.0, help="[s]")
    ap.add_argument("--position-spread", type=float, default=0.005, help="[m]")
    ap.add_argument("--tilt-spread", type=float, default=0.1, help="[rad]")
    ap.add_argument("--bound", type=float, default=0.002, help="largest final position error [m]")
    args = ap.parse_args()
    jax.config.update("jax_enable_x64", True)
    robot, params, gains = setup(args.averaged, args.model)
    every = max(1, int(round(1e-3 / robot.dt)))  # a record every 1 ms
    n_steps = int(round(args.duration / robot.dt)) // every * every
    target = jnp.asarray(TARGET)

    def fly(p, q):
        st = flapper.init_state(robot, params, position=p, quat=q)
        _, rec = flapper.hover_rollout(robot, params, st, n_steps, gains=gains, target=target, record_every=every)
        return rec.position, rec.healthy[-1]

    pos0, quat0 = random_starts(args.worlds, args.position_spread, args.tilt_spread)
    t0 = time.perf_counter()
    pos, healthy = (np.asarray(x) for x in jax.jit(jax.vmap(fly))(jnp.asarray(pos0), jnp.asarray(quat0)))
    err = np.linalg.norm(pos - np.asarray(TARGET), axis=-1)
    f_h = float(params.averaged.hover_frequency)
    print(f"{args.worlds} worlds, {args.model} model, {args.duration} s at f_h = {f_h:.1f}"
          f" Hz ({time.perf_counter() - t0:.1f} s): healthy {int(healthy.sum())}/{healthy.size}")
    for t in (0.25, 0.5, 1.0, 1.5, 2.0):
        k = int(round(t / 1e-3)) - 1
        if k < err.shape[1]:
            print(f"  t = {t:4.2f} s: position error max {err[:, k].max() * 1e3:.3f} mm, median "
                  f"{np.median(err[:, k]) * 1e3:.3f} mm")
    ok = bool(healthy.all() and err[:, -1].max() < args.bound)
    print(f"  final error within {args.bound * 1e3:g} mm: {ok}")


if __name__ == "__main__":
    main()
