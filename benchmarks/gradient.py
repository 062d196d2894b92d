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

Identification gradients (goal <= 3x the forward pass), each with the mode
``flapjax identify`` uses (``flapjax.identify.fit.value_and_grad``, forward
mode for a few parameters) beside reverse mode:

* physical: cycle-mean F_z of fixed-base per-wing worlds at 20/30/40 Hz,
  0.6 s each, against the seed's table, as a function of ``lift_scale``
  (1 parameter) and of ``lift_scale, hinge_stiffness`` (2 parameters): the
  gradient passes through the rollout of the identification's fixed-base
  robot (the pure-JAX joint tree), and in the same run through the MJX
  robot's;
* lift (k_f) and moments (k_roll, k_pitch): the loss of the averaged model's
  closed-form prediction on the sweep's measurements (the sweep rollouts run
  once to make the measurements and are not differentiated).

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
from flapjax.identify.fit import choose_grad_mode, value_and_grad
from flapjax.sim import tree
from flapjax.sim.flapper import stand as P
from flapjax.identify.flapper.lift import predict_lift
from flapjax.identify.flapper.moments import predict_moments
from flapjax.identify.losses import Measurements, least_squares
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


def measure_case(label: str, loss, params, n_steps: int, n_worlds: int, repeats: int,
                 checkpoints=(True, False)) -> dict:
    """Forward rollout loss and its reverse-mode gradient with (and, when
    ``checkpoints`` holds False, without) ``jax.checkpoint``."""
    ws = n_steps * n_worlds
    fwd = C.measure(lambda p: loss(p, True), (params,), world_steps=ws, repeats=repeats)
    C.log(f"{label}: forward {fwd['steady_s']:.3f} s (compile {fwd['compile_s']:.1f} s)")
    out = dict(case=label, n_worlds=n_worlds, n_steps=n_steps, forward=C.strip_private(fwd))
    out["forward"]["hlo_ops"] = C.hlo_op_counts(fwd["_compiled"])
    for ck in checkpoints:
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
    best = min(out[k]["ratio"] for k in ("gradient_checkpoint", "gradient_no_checkpoint") if k in out)
    out["goal_ratio"] = 4.0
    out["goal_met"] = out["gradient_checkpoint"]["ratio"] <= 4.0
    out["best_ratio"] = best
    jax.clear_caches()
    return out


def identification_cases(quick: bool):
    """``(label, objective, params, n_params)`` of the identification losses
    (``quick``: 0.3 s rollouts, and without the MJX robot's reference cases,
    whose reverse-mode programs take the longest to compile of the section)."""
    freqs = sorted(fl.SEED_SWEEP)
    duration, discard = (0.3, 0.15) if quick else (0.6, 0.3)
    target = jnp.asarray([fl.SEED_SWEEP[f] for f in freqs])
    cases = []
    # The identification's fixed-base robot (the pure-JAX joint tree), then
    # the MJX robot as a reference (no goal: the identification does not use it).
    robots = (("", None),) if quick else (("", None), ("_mjx_robot", fl.make_robot("fixed", "wing")))
    for suffix, robot in robots:
        rollout = P.LiftRollout.make(freqs, duration=duration, discard=discard, robot=robot)
        nominal = P.nominal_physical(rollout.robot)

        def physical(values, rollout=rollout):
            return 0.5 * jnp.mean((rollout(values) / target - 1.0) ** 2)

        one = {"lift_scale": jnp.asarray(nominal["lift_scale"])}
        two = dict(one, hinge_stiffness=jnp.asarray(nominal["hinge_stiffness"]))
        steps = rollout.n_steps * len(freqs)
        cases += [(f"physical_lift_scale_{duration}s{suffix}", physical, one, steps),
                  (f"physical_lift_scale_hinge_{duration}s{suffix}", physical, two, steps)]
    f = jnp.linspace(20.0, 45.0, 6)
    lift = Measurements(inputs=f, targets=1.65e-4 * f**2, scale=1.0)
    cases.append(("lift_k_f", lambda p: least_squares(predict_lift)(p, lift), {"k_f": jnp.asarray(1.6e-4)}, 0))
    plate = jnp.stack([jnp.linspace(-0.2, 0.2, 9), jnp.linspace(0.2, -0.2, 9)], axis=-1)
    fm = jnp.full(9, 42.0)
    moments = Measurements(inputs=(fm, plate), targets=jnp.stack([5e-4 * plate[:, 0], -5.5e-4 * plate[:, 1]], -1),
                           scale=1e-4)
    p0 = {"k_roll": jnp.asarray(5e-4), "k_pitch": jnp.asarray(5e-4), "f_ref": jnp.asarray(42.0)}
    cases.append(("moments_k_roll_k_pitch",
                  lambda p: least_squares(predict_moments)(dict(p, f_ref=p0["f_ref"]), moments),
                  {k: p0[k] for k in ("k_roll", "k_pitch")}, 0))
    return cases


def measure_identification(label: str, objective, params, n_steps: int, repeats: int,
                           modes=("auto", "reverse")) -> dict:
    """Forward loss vs ``fit.value_and_grad`` in auto (forward) and, when
    ``modes`` holds it, reverse mode, every program compiled with the
    options the identification's programs use
    (:func:`flapjax.sim.tree.compiler_options`)."""
    options = tree.compiler_options()
    fwd = C.measure(objective, (params,), world_steps=max(n_steps, 1), repeats=repeats,
                    jitted=jax.jit(objective, compiler_options=options))
    out = dict(case=label, n_params=len(params), n_steps=n_steps, forward=C.strip_private(fwd))
    C.log(f"{label}: forward {fwd['steady_s'] * 1e3:.2f} ms (compile {fwd['compile_s']:.1f} s)")
    for mode in modes:
        fn = lambda p, mode=mode: value_and_grad(objective, p, mode)  # noqa: E731
        g = C.measure(fn, (params,), world_steps=max(n_steps, 1), repeats=repeats,
                      jitted=jax.jit(fn, compiler_options=options))
        value, grad = g["_out"]
        entry = C.strip_private(g)
        entry.update(ratio=g["steady_s"] / fwd["steady_s"],
                     finite=bool(all(jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(grad))),
                     mode=choose_grad_mode(len(params)) if mode == "auto" else mode)
        out[f"gradient_{mode}"] = entry
        C.log(f"  {entry['mode']} mode ({mode}): {g['steady_s'] * 1e3:.2f} ms = {entry['ratio']:.2f}x forward, "
              f"compile {g['compile_s']:.1f} s")
    out["goal_ratio"] = 3.0
    out["goal_met"] = out["gradient_auto"]["ratio"] <= 3.0
    if label.endswith("_mjx_robot"):  # a reference, not what the identification runs
        out["reference"] = True
        out["goal_met"] = None
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
    # --quick leaves out the comparisons whose programs take longest to
    # compile: the flapper's gradient without checkpointing (the rigid
    # multirotor still shows what checkpointing saves) and the reverse mode
    # of the rollout losses the identification differentiates forward.
    cases.append(measure_case("flapper_fixed_wing_0.6s", loss, params, n, n_flap, repeats,
                              checkpoints=(True,) if quick else (True, False)))
    # The rigid backend compiles fast: the full run measures it at a second
    # batch size to show how the ratio depends on the batch.
    for nr in ((256,) if quick else (n_rot, 256)):
        loss, params, n = multirotor_case(nr, "rigid")
        cases.append(measure_case("multirotor_rigid_2s", loss, params, n, nr, repeats))
    if mjx_multirotor if mjx_multirotor is not None else not quick:
        loss, params, n = multirotor_case(n_rot, "mjx")
        cases.append(measure_case("multirotor_mjx_2s", loss, params, n, n_rot, repeats))
    identification = [measure_identification(*c, repeats, modes=("auto",) if quick and c[3] else ("auto", "reverse"))
                      for c in identification_cases(quick)]
    return dict(env=C.env_info(), quick=quick, repeats=repeats, cases=cases, identification=identification)


def main(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--mjx-multirotor", action=argparse.BooleanOptionalAction, default=None)
    a = p.parse_args(argv)
    C.print_header("gradient cost")
    C.log("wrote", C.write_json("gradient", run(a.quick, a.repeats, a.mjx_multirotor)))


if __name__ == "__main__":
    main()
