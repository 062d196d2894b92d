"""Batched MJX multirotor hover near ground and a randomized pitched wall.

Every preset hovers with its lowest rotor 10 cm above the ground and its
rotor nearest the wall 15 cm from it, for 5 s (2500 steps of 2 ms), in N
worlds whose wall pitch is uniform in +-20 deg, with every chain effect on
(saturation, actuator lag and rate limit, ground and wall effect, drag,
constant wind, a 1-cos gust, OU turbulence, sensor and command noise).

    python benchmarks/multirotor_hover_batch.py [--worlds 1024] [--steps 2500] [--x64] [presets...]

Prints compile time apart from the steady run, world-steps per second and the
stability figures (max position error, max tilt, contacts, diverged worlds).
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("presets", nargs="*", default=["quad_x", "hexa", "hexa_tilted"])
    ap.add_argument("--worlds", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=2500)
    ap.add_argument("--x64", action="store_true", help="run in float64 (default float32)")
    args = ap.parse_args()

    import jax

    if args.x64:
        jax.config.update("jax_enable_x64", True)
    import equinox as eqx
    import numpy as np

    from flapjax import rotor
    from flapjax import scene as sc
    from flapjax.control.wrench import Reference
    from flapjax.noise import CommandNoise, NoiseParams, SensorNoise
    from flapjax.sim import multirotor as mr

    yaw = np.pi / 2
    ranges = sc.SceneRanges(wall_pitch=(-0.35, 0.35))
    print(f"device={jax.devices()[0].device_kind} jax={jax.__version__} worlds={args.worlds} steps={args.steps} "
          f"dtype={'float64' if args.x64 else 'float32'}")
    for name in args.presets:
        prof = rotor.profiles.preset(name)
        world = mr.MultirotorWorld(prof, options=rotor.ChainOptions(command_noise=True))
        wind = rotor.WindParams(constant=(0.3, 0.2, 0.0), gust_amplitude=[[0.8, 0.0, -0.3]], gust_start=[2.0],
                                gust_duration=[1.0], turbulence_std=(0.3, 0.3, 0.2), turbulence_time=(0.5, 0.5, 0.5))
        noise = NoiseParams(SensorNoise((0.002,) * 3, (0.01,) * 3, (0.003,) * 3, (0.01,) * 3), CommandNoise(0.05))
        p0 = eqx.tree_at(lambda p: (p.chain, p.noise), world.default_params(), (rotor.ChainParams(wind=wind), noise))
        keys = jax.random.split(jax.random.key(5), args.worlds)
        params = jax.vmap(lambda k: world.randomize(p0, k, ranges))(keys)
        pos = jax.vmap(lambda s: sc.hover_position(s, prof, ground_clearance=0.10, wall_clearance=0.15, yaw=yaw))(
            params.scene)
        refs = jax.vmap(lambda x: Reference.hover(x, yaw))(pos)
        states = world.batched_reset(params, keys, pos, refs.yaw)
        t0 = time.perf_counter()
        compiled = world.batched_rollout.lower(params, states, refs, args.steps).compile()
        t1 = time.perf_counter()
        _, traj = compiled(params, states, refs)
        jax.block_until_ready(traj)
        t2 = time.perf_counter()
        err = np.abs(np.asarray(traj.position) - np.asarray(pos)[:, None])
        q = np.asarray(traj.quat)
        tilt = np.degrees(2 * np.arcsin(np.clip(np.linalg.norm(q[..., 1:3], axis=-1), 0, 1)))
        print(
            f"{name:12s} compile {t1 - t0:6.1f} s  run {t2 - t1:7.2f} s  {args.worlds * args.steps / (t2 - t1):9.0f} "
            f"world-steps/s | max |pos err| {err.max() * 100:.1f} cm, last 1 s {err[:, -500:].max() * 100:.1f} cm, "
            f"max tilt {tilt.max():.1f} deg, contact {np.abs(np.asarray(traj.constraint_force)).max():.2g} N, "
            f"diverged {int(np.asarray(traj.diverged).any(axis=1).sum())}, "
            f"saturated {np.asarray(traj.saturated).mean() * 100:.2f} %, "
            f"min margin {np.asarray(traj.control_margin).min():.2f}, "
            f"pitch [{np.degrees(np.asarray(params.scene.wall_pitch)).min():.1f}, "
            f"{np.degrees(np.asarray(params.scene.wall_pitch)).max():.1f}] deg",
            flush=True,
        )


if __name__ == "__main__":
    main()
