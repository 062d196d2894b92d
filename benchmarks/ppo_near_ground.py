"""PPO on near-ground tracking: a residual policy on the reference controller.

Brax's PPO trains on :func:`flapjax.tasks.brax_env` (rigid backend, residual
actions in [-1, 1], domain randomization on); the trained policy (deterministic
actions) and the reference controller (a residual of zeros) then fly the same
evaluation worlds. Writes ``<out>/ppo_near_ground.json`` (success, height
RMSE, environment steps per second with and without the learner, training
time) and ``<out>/ppo_near_ground.png`` (the learning curve).

    python -m benchmarks.ppo_near_ground                     # the full budget (about 15 min on 2 CPU cores)
    python -m benchmarks.ppo_near_ground --quick             # a tiny budget: checks the pipeline end to end

Run from the repository root with flapjax's environment and the ``rl`` extra.
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np

OUT = pathlib.Path(__file__).parent / "results"


def env_steps_per_second(task_env, n_worlds: int, n_steps: int) -> dict:
    """Steady env-steps/s of ``jit(vmap(step))`` over ``n_worlds`` (compile apart)."""
    keys = jax.random.split(jax.random.key(0), n_worlds)
    states = jax.jit(jax.vmap(task_env.reset))(keys)
    actions = jnp.zeros((n_worlds, task_env.action_size))

    @jax.jit
    def run(s):
        return jax.lax.scan(lambda s, _: (jax.vmap(task_env.step)(s, actions), None), s, None, length=n_steps)[0]

    t0 = time.perf_counter()
    jax.block_until_ready(run(states).obs)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(run(states).obs)
    steady = time.perf_counter() - t0
    return dict(worlds=n_worlds, steps=n_steps, compile_s=compile_s, env_steps_per_s=n_worlds * n_steps / steady)


def evaluate_policy(task_env, controller, n_worlds: int, seed: int) -> dict:
    from flapjax.evaluate import run_episodes

    result = run_episodes(task_env, n_worlds, seed=seed, controller=controller)
    s = result["summary"]
    return dict(success_rate=float(np.mean(s["success"])), height_rmse_mean=float(np.mean(s["height_rmse"])),
                touched=float(np.mean(s.get("touched", np.zeros(1)))), seconds=result["seconds"])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny budget (pipeline check, no learning claim)")
    parser.add_argument("--timesteps", type=int, default=20_000_000)
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--eval-worlds", type=int, default=256)
    parser.add_argument("--robot", default="quad_x")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)

    from brax.training.agents.ppo import networks as ppo_networks
    from brax.training.agents.ppo import train as ppo

    from flapjax import tasks

    overrides = {"robot": args.robot, "randomization.enabled": True}
    env = tasks.brax_env("near_ground", **overrides)
    if args.quick:
        train_cfg = dict(num_timesteps=2 * 16 * 8 * 4, num_envs=16, batch_size=16, num_minibatches=4,
                         unroll_length=8, num_updates_per_batch=1, num_evals=2, num_eval_envs=16)
        hidden, eval_worlds, bench = (16,), min(args.eval_worlds, 16), (16, 10)
    else:
        train_cfg = dict(num_timesteps=args.timesteps, num_envs=args.num_envs, batch_size=512, num_minibatches=16,
                         unroll_length=20, num_updates_per_batch=4, num_evals=10, num_eval_envs=128,
                         learning_rate=3e-4, entropy_cost=1e-3, discounting=0.97, reward_scaling=1.0)
        hidden, eval_worlds, bench = (64, 64), args.eval_worlds, (1024, 100)
    network = functools.partial(ppo_networks.make_ppo_networks, policy_hidden_layer_sizes=hidden,
                                value_hidden_layer_sizes=hidden)
    curve = []
    t_start = time.perf_counter()

    def progress(step, metrics):
        curve.append((int(step), float(metrics.get("eval/episode_reward", np.nan)), time.perf_counter() - t_start))
        print(f"step {step:>10d}  eval reward {curve[-1][1]:8.3f}  ({curve[-1][2]:.0f} s)", flush=True)

    with jax.enable_x64(False):  # Brax's PPO mixes float32 networks with default-float counters
        make_policy, params, _ = ppo.train(environment=env, episode_length=env.episode_length,
                                           normalize_observations=True, seed=args.seed, network_factory=network,
                                           progress_fn=progress, **train_cfg)
        train_s = time.perf_counter() - t_start
        policy = make_policy(params, deterministic=True)
        task_env = env.task_env

        def learned(state):
            return policy(state.obs, jax.random.PRNGKey(0))[0]

        def reference(state):
            return jnp.zeros(task_env.action_size, jnp.float32)

        ppo_eval = evaluate_policy(task_env, learned, eval_worlds, seed=args.seed + 1000)
        ref_eval = evaluate_policy(task_env, reference, eval_worlds, seed=args.seed + 1000)
        speed = dict(rigid=env_steps_per_second(task_env, *bench),
                     mjx=env_steps_per_second(tasks.make_for_learning("near_ground", backend="mjx", **overrides),
                                              min(bench[0], 256), 20),
                     with_learner=dict(env_steps_per_s=train_cfg["num_timesteps"] / train_s))

    result = dict(quick=args.quick, robot=args.robot, train=dict(train_cfg, hidden=list(hidden), seconds=train_s),
                  eval_worlds=eval_worlds, ppo=ppo_eval, reference=ref_eval, speed=speed,
                  curve=[dict(step=s, eval_reward=r, seconds=t) for s, r, t in curve],
                  jax=dict(version=jax.__version__, backend=jax.default_backend()))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "ppo_near_ground_quick" if args.quick else "ppo_near_ground"
    (out / f"{name}.json").write_text(json.dumps(result, indent=2))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot([c[0] for c in curve], [c[1] for c in curve], "o-")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("eval episode reward")
    ax.set_title(f"PPO, near_ground / {args.robot}, rigid, randomized")
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=120)
    plt.close(fig)
    print(f"PPO: success {ppo_eval['success_rate']:.3f}, height RMSE {ppo_eval['height_rmse_mean']:.4f} m; "
          f"reference: success {ref_eval['success_rate']:.3f}, height RMSE {ref_eval['height_rmse_mean']:.4f} m "
          f"({eval_worlds} worlds); train {train_s:.0f} s; rigid {speed['rigid']['env_steps_per_s']:.3g} env-steps/s, "
          f"mjx {speed['mjx']['env_steps_per_s']:.3g}, with learner {speed['with_learner']['env_steps_per_s']:.3g}")
    print(f"wrote {out / (name + '.json')}, {out / (name + '.png')}")
    return result


if __name__ == "__main__":
    main()
