"""Compile time of the public rollout entry points and retrace checks.

Each entry point is called once (compile + run, timed) and then again with
new parameter values of the same shapes; the second call must not compile
anything. Compilations are counted with ``jax.monitoring`` backend-compile
events, so a silent retrace shows up as a number, not as a slow run.

    python -m benchmarks.retrace [--quick]
"""

from __future__ import annotations

import time

import equinox as eqx
import jax

from benchmarks import common as C
from benchmarks import workloads as W
from benchmarks.baseline_flapsim import compile_counter

GOAL_COMPILE_S = 20.0


def _timed(fn):
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - t0


def run(quick: bool) -> dict:
    from flapjax.sim import sharding

    compiles = compile_counter()
    checks = []

    def check(name, first, second):
        c0 = compiles[0]
        _, t_first = _timed(first)
        c1 = compiles[0]
        _, t_second = _timed(second)
        c2 = compiles[0]
        entry = dict(entry_point=name, first_call_s=t_first, second_call_s=t_second,
                     compilations_first=c1 - c0, recompilations_second=c2 - c1,
                     goal_compile_s=GOAL_COMPILE_S, goal_met=(t_first <= GOAL_COMPILE_S) and (c2 == c1))
        checks.append(entry)
        C.log(f"{name:44s} first call {t_first:6.1f} s ({c1 - c0} compilations), "
              f"second call with new values {t_second:6.2f} s ({c2 - c1} compilations)")

    n, k = 16, 50
    world = W.multirotor_world()
    params, state, ref = W.multirotor_batch(world, n)
    params2 = eqx.tree_at(lambda p: p.profile.mass, params, params.profile.mass * 1.05)
    check("MultirotorWorld.batched_rollout",
          lambda: world.batched_rollout(params, state, ref, k),
          lambda: world.batched_rollout(params2, state, ref, k))

    robot, fparams, fstate = W.flapper_batch("fixed", "wing", n)
    fparams2 = eqx.tree_at(lambda p: p.stroke.frequency, fparams, fparams.stroke.frequency + 1.0)
    check("sharding.flapper_rollout (fixed, per-wing)",
          lambda: sharding.flapper_rollout(robot, fparams, fstate, k),
          lambda: sharding.flapper_rollout(robot, fparams2, fstate, k))

    robot_a, aparams, astate = W.flapper_batch("free", "averaged", n)
    aparams2 = eqx.tree_at(lambda p: p.plate, aparams, aparams.plate + 0.01)
    check("sharding.flapper_rollout (free, averaged)",
          lambda: sharding.flapper_rollout(robot_a, aparams, astate, k),
          lambda: sharding.flapper_rollout(robot_a, aparams2, astate, k))

    import jax.numpy as jnp

    from flapjax import tasks
    from flapjax.sim import flapper as fl

    env = tasks.make("near_ground", backend="rigid")
    s0 = env.reset(jax.random.key(0))
    check("TaskEnv.step (eager calls, near_ground)",
          lambda: env.step(s0, jnp.zeros(env.action_size)).obs,
          lambda: env.step(env.step(s0, jnp.zeros(env.action_size)), jnp.ones(env.action_size)).obs)

    lumped = fl.make_robot("lumped", "averaged", backend="rigid")
    lparams = fl.default_params(lumped)
    lstate = fl.init_state(lumped, lparams, position=jnp.array([0.0, 0.0, 0.5]))
    lparams2 = eqx.tree_at(lambda p: p.averaged.lift_coefficient, lparams, lparams.averaged.lift_coefficient * 1.05)
    target = jnp.array([0.0, 0.0, 0.5])
    check("flapper.hover_rollout (lumped, averaged)",
          lambda: fl.hover_rollout(lumped, lparams, lstate, 10 * k, target=target, hover_frequency=42.0)[1].position,
          lambda: fl.hover_rollout(lumped, lparams2, lstate, 10 * k, target=target, hover_frequency=43.0)[1].position)
    return dict(env=C.env_info(), quick=quick, n_worlds=n, n_steps=k, checks=checks)


def main(argv=None):
    a = C.parser(__doc__).parse_args(argv)
    C.print_header("compile time and retrace checks")
    C.log("wrote", C.write_json("retrace", run(a.quick)))


if __name__ == "__main__":
    main()
