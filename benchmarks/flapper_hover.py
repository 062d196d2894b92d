"""Hover of the per-wing flapping-wing robot (MJX, free flight) under the
designed controller: the cycle-averaged estimate (notches at f, 2f, 3f), LQR
gains on the linear hover model, optionally refined by gradient through
short per-wing rollouts.

Run: ``python -m benchmarks.flapper_hover [--worlds 256] [--chunk 16]
[--duration 2.0] [--refine 0] [--coupling-scale S] [--weights P,V,T,W,U] [--altitude-pole P]``
(the last three try a design other than :func:`design_gains`' default).

``--robot robot.toml --averaged cycle_averaged.json`` flies the per-wing
free robot of a description instead (pure-JAX tree backend), with the
gains designed through its channels on its identified averaged model
(:func:`flapjax.sim.flapper.channel_gains.channel_gains`, frequency within
its range); the start spreads (position, velocity) and the altitude bound
are the seed's times the size ratio (wing length over the seed's 70 mm),
the tilt spread and tilt bounds are the seed's.

Acceptance measured (over the last 0.5 s of a 2 s hover from z = 0.5 m):
cycle-mean tilt under 1 deg, instantaneous tilt RMS under 3 deg, altitude
error under 5 mm, for the nominal start (on the periodic orbit, at rest) and
for randomized starts (+/-5 cm, tilt up to 0.1 rad, +/-0.1 m/s); at least
90 % of those must meet the bounds. Prints the numbers, writes
``benchmarks/results/flapper_hover.json`` and a PNG of a few trajectories.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
TARGET = (0.0, 0.0, 0.5)


def described(robot_path: str, averaged_path: str):
    """``(robot, params, f_h, gains, size ratio)`` of a described robot's
    per-wing free robot, with gains designed through its channels."""
    from flapjax.aero.cycle_averaged import CycleAveragedParams
    from flapjax.identify.flapper.channel_validation import size_ratio
    from flapjax.sim import flapper as fl
    from flapjax.sim.flapper.channel_gains import channel_gains

    desc = fl.load_robot_description(robot_path)
    avg = CycleAveragedParams.from_json(averaged_path)
    robot = fl.make_robot("free", "wing", description=desc, backend="rigid")
    f_h = float(avg.hover_frequency)
    params = fl.default_params(robot, description=desc, frequency=f_h, averaged=avg)
    return robot, params, f_h, channel_gains(robot, params, frequency_limits=desc.frequency_range), size_ratio(desc)


def build(duration: float, record_every: int, gains, setup=None):
    """A jitted ``fly(offset, quat, velocity) -> (records, quality)`` of one
    world; ``setup`` ``(robot, params, f_h)``, default the seed's per-wing free robot."""
    import jax.numpy as jnp

    from flapjax.math import quat_to_mat
    from flapjax.sim import flapper as fl
    from flapjax.sim.flapper.hover import hover_quality

    if setup is None:
        robot = fl.make_robot("free", "wing")
        f_h = 42.2213
        params = fl.default_params(robot, frequency=f_h)
    else:
        robot, params, f_h = setup
    target = jnp.asarray(TARGET)
    n = int(round(duration / robot.dt)) // record_every * record_every

    def fly(offset, quat, velocity):
        st = fl.init_state(robot, params, position=target + offset, quat=quat, velocity=velocity, periodic=True)
        # The estimate starts from the cycle means asked of the periodic start.
        prior = fl.BasePose(position=target + offset, velocity=velocity, rot_world_body=quat_to_mat(quat),
                            w_body=jnp.zeros(3))
        _, rec = fl.hover_rollout(robot, params, st, n, gains=gains, target=target, record_every=record_every,
                                  checkpoint=False, prior=prior)
        q = hover_quality(rec, target, frequency=f_h, record_dt=robot.dt * record_every)
        return rec, q

    return robot, params, fly


def _inertia_pair(robot) -> tuple[float, float]:
    """(I_yy, I_xx) of the robot's base subtree [kg m^2]."""
    from flapjax.sim.flapper.channel_gains import base_inertia

    i = np.diag(base_inertia(robot))
    return float(i[1]), float(i[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=256)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--record-every", type=int, default=10)
    ap.add_argument("--refine", type=int, default=0, help="optax iterations of the gradient refinement (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--coupling-scale", type=float, default=None,
                    help="design on this share of the identified coupling (default: design_gains' own)")
    ap.add_argument("--weights", default=None,
                    help="LQR weights position,velocity,tilt,rate,plate (default: design_gains' own)")
    ap.add_argument("--out", default=str(RESULTS / "flapper_hover.json"))
    ap.add_argument("--altitude-pole", type=float, default=None,
                    help="altitude poles at -P rad/s (default: design_gains' own)")
    ap.add_argument("--robot", default=None, help="a robot description .toml (default: the seed robot)")
    ap.add_argument("--averaged", default=None, help="with --robot: its cycle_averaged.json (flapjax identify --robot)")
    args = ap.parse_args(argv)
    if (args.robot is None) != (args.averaged is None):
        ap.error("--robot and --averaged go together")
    if args.robot is not None and (args.refine or args.coupling_scale is not None or args.weights is not None
                                   or args.altitude_pole is not None):
        ap.error("--robot flies its channel design; --refine, --coupling-scale, --weights, --altitude-pole are the seed's")

    import jax
    import jax.numpy as jnp

    from flapjax.control import design
    from flapjax.sim.flapper.hover import random_starts

    model = design.LinearHoverModel.per_wing(estimate_lag=design.notch_delay(42.2213))
    variant = {}
    if args.coupling_scale is not None:
        variant["coupling_scale"] = args.coupling_scale
    if args.weights is not None:
        w = [float(v) for v in args.weights.split(",")]
        variant["weights"] = design.LqrWeights(*w)
    if args.altitude_pole is not None:
        variant["altitude_pole"] = args.altitude_pole
    gains = design.design_gains(model, **variant)
    setup, ratio = None, 1.0
    if args.robot is not None:
        robot, params, f_h, gains, ratio = described(args.robot, args.averaged)
        setup = (robot, params, f_h)
        model = design.LinearHoverModel.from_averaged(params.averaged, inertia=_inertia_pair(robot), plate_lag=0.0,
                                                      estimate_lag=design.notch_delay(f_h))
    bounds = {"cycle_mean_tilt": np.radians(1.0), "tilt_rms": np.radians(3.0), "altitude_error": 0.005 * ratio}
    out: dict = {"robot": args.robot or "seed", "size_ratio": ratio,
                 "bounds": {k: float(v) for k, v in bounds.items()},
                 "design": {k: (dataclasses.asdict(v) if k == "weights" else v) for k, v in variant.items()},
                 "gains": {k: np.asarray(getattr(gains, k)).tolist() for k in
                           ("position_p", "position_d", "attitude_p", "attitude_d", "altitude_p", "altitude_i", "altitude_d")},
                 # the linear closed loop of the gains flown, on the identified model with its lags
                 "closed_loop_eigenvalues_max_real": float(np.max(design.closed_loop_eigenvalues(
                     model, design.feedback_from_gains(gains, model.gravity)).real))}
    if args.refine > 0:
        t0 = time.perf_counter()
        from flapjax.sim.flapper.gain_refinement import refine_gains

        gains, hist = refine_gains(gains, iterations=args.refine)
        out["refine"] = {"loss_before": hist[0], "loss_after": hist[-1], "history": hist,
                         "wall_s": time.perf_counter() - t0}
        print(f"refine: loss {hist[0]:.4g} -> {hist[-1]:.4g} in {args.refine} iterations "
              f"({out['refine']['wall_s']:.0f} s)")

    _, _, fly = build(args.duration, args.record_every, gains, setup)
    fly_batch = jax.jit(jax.vmap(fly))

    # Nominal start: on the periodic orbit at the target, at rest.
    t0 = time.perf_counter()
    rec0, q0 = jax.jit(fly)(jnp.zeros(3), jnp.array([1.0, 0.0, 0.0, 0.0]), jnp.zeros(3))
    jax.block_until_ready(q0)
    nominal = {k: float(getattr(q0, k)) for k in ("cycle_mean_tilt", "tilt_rms", "altitude_error", "position_error")}
    nominal["healthy"] = bool(q0.healthy)
    nominal["meets"] = bool(q0.meets(**bounds))
    out["nominal"] = nominal
    out["nominal_wall_s"] = time.perf_counter() - t0
    print(f"nominal: cycle-mean tilt {np.degrees(nominal['cycle_mean_tilt']):.3f} deg, tilt RMS "
          f"{np.degrees(nominal['tilt_rms']):.3f} deg, altitude error {1e3 * nominal['altitude_error']:.2f} mm, "
          f"meets: {nominal['meets']} ({out['nominal_wall_s']:.0f} s incl. compile)")

    # Randomized starts.
    spreads = {"position_m": 0.05 * ratio, "tilt_rad": 0.1, "velocity_m_s": 0.1 * ratio}
    offset, quat, velocity, _ = random_starts(jax.random.PRNGKey(args.seed), args.worlds,
                                              position_spread=spreads["position_m"], tilt_spread=spreads["tilt_rad"],
                                              velocity_spread=spreads["velocity_m_s"], rate_spread=0.0)
    quals, trajs = [], []
    t0 = time.perf_counter()
    for i in range(0, args.worlds, args.chunk):
        sl = slice(i, min(i + args.chunk, args.worlds))
        rec, q = fly_batch(offset[sl], quat[sl], velocity[sl])
        jax.block_until_ready(q)
        quals.append(jax.tree.map(np.asarray, q))
        if not trajs:
            trajs = [np.asarray(rec.time[0]), np.asarray(rec.position[:4]), np.asarray(rec.tilt[:4])]
        done = sl.stop
        el = time.perf_counter() - t0
        print(f"  {done}/{args.worlds} worlds, {el:.0f} s", flush=True)
    wall = time.perf_counter() - t0
    q = jax.tree.map(lambda *x: np.concatenate(x), *quals)
    meets = np.asarray(q.meets(**bounds))
    out["random"] = {
        "worlds": args.worlds, "chunk": args.chunk, "duration_s": args.duration, "wall_s": wall,
        "success_rate": float(meets.mean()), "healthy_rate": float(np.mean(q.healthy)),
        "cycle_mean_tilt_deg_median": float(np.degrees(np.median(q.cycle_mean_tilt))),
        "cycle_mean_tilt_deg_p90": float(np.degrees(np.percentile(q.cycle_mean_tilt, 90))),
        "tilt_rms_deg_median": float(np.degrees(np.median(q.tilt_rms))),
        "tilt_rms_deg_p90": float(np.degrees(np.percentile(q.tilt_rms, 90))),
        "altitude_error_mm_median": float(1e3 * np.median(q.altitude_error)),
        "altitude_error_mm_p90": float(1e3 * np.percentile(q.altitude_error, 90)),
        "position_error_mm_median": float(1e3 * np.median(q.position_error)),
        "position_error_mm_max": float(1e3 * np.max(q.position_error)),
        "spreads": spreads,
    }
    r = out["random"]
    print(f"random starts: {args.worlds} worlds in {wall:.0f} s: {100 * r['success_rate']:.1f} % meet the bounds "
          f"(healthy {100 * r['healthy_rate']:.1f} %); median / p90 cycle-mean tilt {r['cycle_mean_tilt_deg_median']:.2f} / "
          f"{r['cycle_mean_tilt_deg_p90']:.2f} deg, tilt RMS {r['tilt_rms_deg_median']:.2f} / {r['tilt_rms_deg_p90']:.2f} deg, "
          f"altitude error {r['altitude_error_mm_median']:.2f} / {r['altitude_error_mm_p90']:.2f} mm, horizontal error "
          f"median / max {r['position_error_mm_median']:.2f} / {r['position_error_mm_max']:.2f} mm; bounds: cycle-mean "
          f"tilt {np.degrees(bounds['cycle_mean_tilt']):g} deg, tilt RMS {np.degrees(bounds['tilt_rms']):g} deg, "
          f"altitude {1e3 * bounds['altitude_error']:.3g} mm")
    out["accepted"] = bool(nominal["meets"] and r["success_rate"] >= 0.9)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    _plot(Path(args.out).with_suffix(".png"), rec0, trajs)
    print(f"wrote {args.out}")
    return 0


def _plot(path: Path, rec0, trajs) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    t = np.asarray(rec0.time)
    ax[0].plot(t, 1e3 * (np.asarray(rec0.position[:, 2]) - TARGET[2]), "k", label="nominal")
    ax[1].plot(t, np.degrees(np.linalg.norm(np.asarray(rec0.tilt), axis=1)), "k", lw=0.5)
    if trajs:
        tt, pos, tilt = trajs
        for i in range(pos.shape[0]):
            ax[0].plot(tt, 1e3 * (pos[i, :, 2] - TARGET[2]), lw=0.8, label=f"random {i}")
            ax[1].plot(tt, np.degrees(np.linalg.norm(tilt[i], axis=1)), lw=0.5)
    ax[0].set_ylabel("z - z* [mm]")
    ax[0].axhspan(-5, 5, color="g", alpha=0.1)
    ax[0].set_ylim(-50, 50)
    ax[1].set_ylabel("|tilt| [deg]")
    ax[1].set_ylim(0, 20)
    ax[1].set_xlabel("t [s]")
    ax[0].legend(fontsize=7)
    fig.suptitle("per-wing robot, MJX free flight, designed hover controller")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
