"""Hover the insect-scale robot from randomized starts with gains designed on
its identified averaged model (docs/flapper_robots.md, section 6).

    flapjax identify --robot examples/flappers/insect/robot.toml --quick --out out/insect
    python examples/flappers/insect/hover.py out/insect/cycle_averaged.json --model wing --worlds 16

The hover controller writes its two outputs in the plate robot's order,
``plate = (-u_y, -u_x)`` with ``u_x``, ``u_y`` the inputs that tilt the body
toward +x, +y; :func:`channel_values` maps them onto the robot's channel
vector (``c[j_i] = s_i u_i``, the channels and signs
:meth:`LinearHoverModel.from_averaged` picked from the control matrix).
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
from flapjax.control.design import LinearHoverModel, design_gains, notch_delay
from flapjax.control.hover import hover_command, hover_state
from flapjax.sim import flapper
from flapjax.sim.flapper import description_model
from flapjax.sim.flapper import model as flapper_model
from flapjax.sim.flapper.hover import base_pose
from flapjax.sim.flapper.robot import FlapperCommand

DESCRIPTION = "examples/flappers/insect/robot.toml"
TARGET = (0.0, 0.0, 0.5)


def channel_values(model: LinearHoverModel, plate, nc: int):
    """(nc,) channel vector from the controller's (2,) plate-order output."""
    u = jnp.stack([-plate[1], -plate[0]])
    (jx, jy), (sx, sy) = model.channels, model.channel_signs
    return jnp.zeros(nc, dtype=u.dtype).at[jx].set(sx * u[0]).at[jy].set(sy * u[1])


def setup(averaged_path: str, aero_model: str):
    """(robot, params, linear model, gains, hover frequency) of the described robot."""
    desc = flapper.load_robot_description(DESCRIPTION)
    avg = CycleAveragedParams.from_json(averaged_path)
    inertia = np.diag(flapper_model.composite_inertia(description_model.build(desc), desc.names.base)[2])
    root = "lumped" if aero_model == "averaged" else "free"
    robot = flapper.make_robot(root, aero_model, description=desc, backend="rigid",
                               timestep=1e-4 if aero_model == "averaged" else None)
    f_h = float(avg.hover_frequency)
    model = LinearHoverModel.from_averaged(avg, inertia=(inertia[1], inertia[0]), plate_lag=0.0,
                                           estimate_lag=0.0 if aero_model == "averaged" else notch_delay(f_h))
    gains = design_gains(model, hover_frequency=f_h, plate_limit=0.3, frequency_limits=desc.frequency_range,
                         cycle_filter=aero_model == "wing", filter_settle=0.05)
    params = flapper.default_params(robot, description=desc, frequency=f_h, averaged=avg)
    return robot, params, model, gains, f_h


def fly(robot, params, model, gains, f_h, position, quat, n_steps: int):
    """Closed-loop hover of one world; returns the base position every 1 ms (T, 3) [m] and whether it stayed healthy."""
    target = jnp.asarray(TARGET)
    nc = len(robot.channel_kinds)
    st = flapper.init_state(robot, params, position=position, quat=quat)
    pose = base_pose(robot, st.data)
    hs = hover_state(gains, hover_frequency=f_h, position=pose.position, velocity=pose.velocity,
                     rot_world_body=pose.rot_world_body, w_body=pose.w_body, dt=robot.dt, target=target)

    def one(carry, _):
        st, hs = carry
        pose = base_pose(robot, st.data)
        hs, cmd = hover_command(gains, hs, hover_frequency=f_h, gravity=float(params.averaged.gravity), target=target,
                                position=pose.position, velocity=pose.velocity, rot_world_body=pose.rot_world_body,
                                w_body=pose.w_body, dt=robot.dt)
        st, _ = flapper.step(robot, params, st, FlapperCommand(frequency=cmd.frequency,
                                                               plate=channel_values(model, cmd.plate, nc)))
        return (st, hs), pose.position

    (st, _), pos = jax.lax.scan(one, (st, hs), None, length=n_steps)
    every = max(1, int(round(1e-3 / robot.dt)))
    return pos[::every], st.healthy


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
    robot, params, model, gains, f_h = setup(args.averaged, args.model)
    pos0, quat0 = random_starts(args.worlds, args.position_spread, args.tilt_spread)
    n_steps = int(round(args.duration / robot.dt))
    t0 = time.perf_counter()
    run = jax.jit(jax.vmap(lambda p, q: fly(robot, params, model, gains, f_h, p, q, n_steps)))
    pos, healthy = (np.asarray(x) for x in run(jnp.asarray(pos0), jnp.asarray(quat0)))
    err = np.linalg.norm(pos - np.asarray(TARGET), axis=-1)
    print(f"{args.worlds} worlds, {args.model} model, {args.duration} s at f_h = {f_h:.1f} Hz "
          f"({time.perf_counter() - t0:.1f} s): healthy {int(healthy.sum())}/{healthy.size}")
    for t in (0.25, 0.5, 1.0, 1.5, 2.0):
        k = int(round(t / 1e-3)) - 1
        if k < err.shape[1]:
            print(f"  t = {t:4.2f} s: position error max {err[:, k].max() * 1e3:.3f} mm, median "
                  f"{np.median(err[:, k]) * 1e3:.3f} mm")
    ok = bool(healthy.all() and err[:, -1].max() < args.bound)
    print(f"  final error within {args.bound * 1e3:g} mm: {ok}")


if __name__ == "__main__":
    main()
