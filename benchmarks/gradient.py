"""Cost of reverse-mode gradients through rollouts, with and without
``jax.checkpoint`` on the step.

* flapper: fixed base, per-wing aero, 0.6 s (6000 steps of 1e-4 s); loss =
  cycle-mean vertical force after 0.3 s (the seed's sweep quantity), gradient
  with respect to every float parameter (hinge, aero options, stroke, ...).
* multirotor: X-quad near a wall, full chain, 2 s (1000 steps of 2 ms) from
  a 5 cm offset; loss = mean squared distance to the hover point, gradient
  with respect to every float world parameter (scene, airframe, chain,
  gains). Rigid-body backend (``MultirotorWorld(backend="rigid")``);
  in full mode also the MJX backend with one constraint-solver iteration
  (reverse mode cannot pass MJX's iterative solver loop).

Reports forward time, gradient time (steady, median), their ratio (goal
<= 4x), compile times, and XLA temporary memory with and without
checkpointing.

    python -m benchmarks.gradient [--quick]
"""

from __future__ import annotations

import argparse
import gc

import equinox as eqx
import jax
import jax.numpy as jnp

from benchmarks import common as C
from benchmarks import workloads as W
from flapjax import rotor
from flapjax.sim import flapper as fl
from flapjax.sim.multirotor import MultirotorWorld

FLAPPER_DURATION, FLAPPER_DISCARD = 0.6, 0.3
MULTIROTOR_DURATION = 2.0


def flapper_case(n_worlds: int):
    robot, params, _ = W.flapper_batch("fixed", "wing", n_worlds)
    n = int(round(FLAPPER_DURATION / robot.dt))
    discard = int(round(FLAPPER_DISCARD / robot.dt))

    def loss(params, checkpoint):
        cm = jax.vmap(lambda p: fl.cycle_mean(robot, p, n, discard, checkpoint=checkpoint))(params)
        return jnp.mean(cm.force[:, 2])

    return loss, params, n


def multirotor_case(n_worlds: int, backend: str, steps=None):
    # Reverse mode cannot pass MJX's iterative solver loop (docs/mjx_notes.md):
    # one solver iteration makes it a straight-line computation.
    if backend == "mjx":
        world = W.multirotor_world(iterations=1)
    else:
        world = MultirotorWorld(rotor.profile.quad_x(), options=rotor.ChainOptions(), dt=0.002, backend="rigid")
    params, state, ref = W.multirotor_batch(world, n_worlds)
    # Start 5 cm off the hover point so the controller works.
    if backend == "rigid":
        state = eqx.tree_at(lambda s: s.data.position, state, state.data.position.at[:, 0].add(-0.05))
    else:
        state = eqx.tree_at(lambda s: s.data.qpos, state, state.data.qpos.at[:, 0].add(-0.05))
    n = int(round(MULTIROTOR_DURATION / world.dt)) if steps is None else steps

    def loss(params, checkpoint):
        def one(p, s, r):
            positions = world.rollout(p, s, r, n, checkpoint=checkpoint)[1].position
            return jnp.mean(jnp.sum((positions - r.position) ** 2, axis=-1))
        return jnp.mean(jax.vmap(one)(params, state, ref))

    return loss, params, n


def measure_case(label: str, loss, params, n_steps: int, n_worlds: int, repeats: int) -> dict:
    ws = n_steps * n_worlds
    fwd = C.measure(lambda p: loss(p, True), (params,), world_steps=ws, repeats=repeats)
    C.log(f"{label}: forward {fwd['steady_s']:.3f} s (compile {fwd['compile_s']:.1f} s)")
    out = dict(case=label, n_worlds=n_worlds, n_steps=n_steps, forward=C.strip_private(fwd))
    out["forward"]["hlo_ops"] = C.hlo_op_counts(fwd["_compiled"])
    for ck in (True, False):
        g = C.measure(lambda p: eqx.filter_grad(lambda q: loss(q, ck))(p), (params,), world_steps=ws,
                      repeats=repeats)
        paths = [(jax.tree_util.keystr(k), x) for k, x in jax.tree_util.tree_leaves_with_path(g["_out"])
                 if eqx.is_inexact_array(x)]
        leaves = [x for _, x in paths]
        nonfinite = [k for k, x in paths if not bool(jnp.all(jnp.isfinite(x)))]
        finite = not nonfinite
        nonzero = sum(int(jnp.any(x != 0)) for x in leaves)
        key = "gradient_checkpoint" if ck else "gradient_no_checkpoint"
        entry = C.strip_private(g)
        entry["hlo_ops"] = C.hlo_op_counts(g["_compiled"])
        entry.update(ratio=g["steady_s"] / fwd["steady_s"], finite=finite, nonfinite_leaves=nonfinite,
                     nonzero_leaves=nonzero,
                     n_leaves=len(leaves))
        out[key] = entry
        C.log(f"  gradient {'with' if ck else 'without'} checkpoint: {g['steady_s']:.3f} s "
              f"= {entry['ratio']:.2f}x forward, compile {g['compile_s']:.1f} s, XLA temp {g['temp_mb']:.1f} MiB, "
              f"finite={finite}, nonzero leaves {nonzero}/{len(leaves)}")
        gc.collect()
    best = min(out["gradient_checkpoint"]["ratio"], out["gradient_no_checkpoint"]["ratio"])
    out["goal_ratio"] = 4.0
    out["goal_met"] = out["gradient_checkpoint"]["ratio"] <= 4.0
    out["best_ratio"] = best
    jax.clear_caches()
    return out


def run(quick: bool, repeats=None, mjx_multirotor: bool | None = None) -> dict:
    """``mjx_multirotor`` (default: full mode only) adds the MJX multirotor
    gradient, whose compilation alone takes minutes on a 2-core CPU."""
    repeats = repeats or (3 if quick else 5)
    n_flap = 4 if quick else 16
    n_rot = 4 if quick else 16
    cases = []
    loss, params, n = flapper_case(n_flap)
    cases.append(measure_case("flapper_fixed_wing_0.6s", loss, params, n, n_flap, repeats))
    # The rigid backend compiles fast: the full run measures it at a second
    # batch size to show how the ratio depends on the batch.
    for nr in ((256,) if quick else (n_rot, 256)):
        loss, params, n = multirotor_case(nr, "rigid")
        cases.append(measure_case("multirotor_rigid_2s", loss, params, n, nr, repeats))
    if mjx_multirotor if mjx_multirotor is not None else not quick:
        loss, params, n = multirotor_case(n_rot, "mjx")
        cases.append(measure_case("multirotor_mjx_2s", loss, params, n, n_rot, repeats))
    return dict(env=C.env_info(), quick=quick, repeats=repeats, cases=cases)


def main(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--mjx-multirotor", action=argparse.BooleanOptionalAction, default=None)
    a = p.parse_args(argv)
    C.print_header("gradient cost")
    C.log("wrote", C.write_json("gradient", run(a.quick, a.repeats, a.mjx_multirotor)))


if __name__ == "__main__":
    main()
