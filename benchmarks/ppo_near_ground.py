"""PPO on near-ground tracking: a residual policy on the reference controller.

Brax's PPO trains on :func:`flapjax.tasks.brax_env` (rigid backend, residual
actions in [-1, 1], domain randomization on); the trained policy
(deterministic actions) and the reference controller (a residual of zeros)
then fly the same evaluation worlds. Writes ``<out>/ppo_near_ground.json``
(success, height RMSE, environment steps per second with and without the
learner, training time) and ``<out>/ppo_near_ground.png`` (the learning
curve).

    python -m benchmarks.ppo_near_ground                     # the full budget (at most 15 min on 2 CPU cores)
    python -m benchmarks.ppo_near_ground --quick             # a tiny budget: checks the pipeline end to end
    python -m benchmarks.ppo_near_ground --readme            # only rewrite the PPO section of benchmarks/README.md

A full run (not ``--quick``, default ``--out``) also rewrites the section of
``benchmarks/README.md`` between ``<!-- ppo:begin -->`` and ``<!-- ppo:end -->``.

Learner setup: :func:`flapjax.tasks.ppo_config` ("near_ground"), the
settings a user gets (each is also a flag here):

* the residual acts on the feed-forward force only (``residual_scale`` =
  (0 m, 0 m/s, 2 N, 0 rad)): the reference controller keeps the position and
  velocity setpoints, the policy learns the force the reference does not
  know (ground effect, randomized mass and thrust);
* a Gaussian policy (``distribution_type="normal"``; the environment clips
  to [-1, 1]) whose mean starts near zero (last layer initialised with a
  small scale) so the untrained policy flies the reference controller, with
  a small initial exploration noise (``init_noise_std``): the task's reward
  ``exp(-(e / 2 cm)^2)`` is sharp and a wide exploration noise hides it;
* observation normalization on; Brax's advantage estimate drops the
  steps where an episode was truncated by the time limit (the adapter's
  ``info["truncation"]``, kept apart from termination).

Run from the repository root with flapjax's environment and the ``rl`` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np

OUT = pathlib.Path(__file__).parent / "results"
README = pathlib.Path(__file__).parent / "README.md"
BEGIN, END = "<!-- ppo:begin -->", "<!-- ppo:end -->"
COMMAND = "nice -n 5 python -m benchmarks.ppo_near_ground"


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
    return dict(worlds=n_worlds, steps=n_steps, compile_s=compile_s, seconds=steady,
                env_steps_per_s=n_worlds * n_steps / steady)


def evaluate_policy(task_env, controller, n_worlds: int, seed: int) -> dict:
    from flapjax.evaluate import run_episodes

    result = run_episodes(task_env, n_worlds=n_worlds, seed=seed, controller=controller)
    s = result.summary
    return dict(success_rate=float(np.mean(s["success"])), height_rmse_mean=float(np.mean(s["height_rmse"])),
                height_rmse_median=float(np.median(s["height_rmse"])),
                touched=float(np.mean(s.get("touched", np.zeros(1)))), seconds=result.seconds)


def _load_sentence(la: dict) -> str:
    """What the load average says about the machine during the run."""
    before, after = la.get("before"), la.get("after_training")
    if not before or not after:
        return "Load average not available."
    cores = os.cpu_count() or 1
    shared = max(before[0], after[0]) > cores
    state = ("other jobs shared the machine (1-min load above its core count), so the rates and wall times are low "
             "and varied" if shared else "the machine was otherwise idle")
    return (f"Load average on the {cores} cores: {before} before training, {after} after (1, 5 and 15 min): "
            f"{state}.")


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def plot(result: dict, path: pathlib.Path) -> None:
    """The learning curve (training-time evaluation reward vs environment
    steps, wall time on a second axis) with the final evaluation in the corner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve, p, ref = result["curve"], result["ppo"], result["reference"]
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    steps = [c["step"] for c in curve]
    ax.plot(steps, [c["eval_reward"] for c in curve], "o-", label="PPO, training-time evaluation (stochastic)")
    ax.set_xlabel("environment steps")
    ax.set_ylabel(f"episode reward (max {result.get('episode_length', 250)})")
    ax.set_title(f"PPO residual, near_ground / {result['robot']}, rigid, randomized", fontsize=9)
    top = ax.secondary_xaxis("top", functions=(lambda x: x, lambda x: x))
    top.set_ticks(steps[::2], labels=[f"{c['seconds']:.0f} s" for c in curve[::2]], fontsize=7)
    top.set_xlabel("wall time since the start of training", fontsize=7)
    text = (f"{result['eval_worlds']} worlds, deterministic:\nPPO success {p['success_rate']:.2f}, "
            f"RMSE {1000 * p['height_rmse_mean']:.1f} mm\n"
            f"reference success {ref['success_rate']:.2f}, RMSE {1000 * ref['height_rmse_mean']:.1f} mm")
    ax.text(0.98, 0.04, text, transform=ax.transAxes, fontsize=7, ha="right", va="bottom")
    ax.legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _k(x: float) -> str:
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.1f} k"


def readme_section(r: dict) -> str:
    """The PPO section of ``benchmarks/README.md`` from a result of :func:`main`."""
    t, sp, p, ref = r["train"], r["speed"], r["ppo"], r["reference"]
    learner = sp["with_learner"]
    la = r.get("load_average") or {}
    sps = learner["brax_training_sps"] or [float("nan")]
    sps_range = f"{_k(min(sps))}-{_k(max(sps))}"
    # Wall time of the same run had every epoch gone at the slowest epoch's rate.
    worst = learner.get("compile_and_first_eval_s", 0.0) + t["env_steps"] / min(sps)
    lines = [
        "## PPO on near-ground tracking", "",
        f"`benchmarks/ppo_near_ground.py` trains a residual policy with Brax's PPO on `flapjax.tasks.brax_env(\"near_ground\")` "
        f"({r['robot']}, rigid backend, domain randomization on: mass, inertia, thrust, torque and time constants of the "
        "rotors, start position, sensor and command noise) and flies it (deterministic actions) and the reference "
        f"controller (a residual of zeros) on the same {r['eval_worlds']} evaluation worlds (seed {r['eval_seed']}, not "
        "seen in training; every training episode draws a new world; learner settings: "
        "`flapjax.tasks.ppo_config(\"near_ground\")`). The reference controller does not know the ground effect or "
        "the randomized mass.", "",
        "| controller | success | height RMSE, mean | median | touched |", "|---|---|---|---|---|",
        f"| PPO residual | {p['success_rate']:.3f} | {1000 * p['height_rmse_mean']:.1f} mm | "
        f"{1000 * p['height_rmse_median']:.1f} mm | {p['touched']:.3f} |",
        f"| reference | {ref['success_rate']:.3f} | {1000 * ref['height_rmse_mean']:.1f} mm | "
        f"{1000 * ref['height_rmse_median']:.1f} mm | {ref['touched']:.3f} |", "",
        f"Goal: success at least 10 points above the reference's and a lower height RMSE: "
        f"{'met' if p['success_rate'] >= ref['success_rate'] + 0.10 and p['height_rmse_mean'] < ref['height_rmse_mean'] else 'missed'} "
        f"(+{100 * (p['success_rate'] - ref['success_rate']):.1f} points, RMSE "
        f"{p['height_rmse_mean'] / ref['height_rmse_mean']:.2f}x the reference's).", "",
        f"**Training.** {t['env_steps']:,} environment steps in {t['seconds']:.0f} s wall time "
        f"({t['seconds'] / 60:.1f} min, compilation and the {t['num_evals']} training-time evaluations included; "
        f"the first report, after compilation and a first evaluation, came at {learner.get('compile_and_first_eval_s', float('nan')):.0f} s). "
        f"The learner (acting, advantage estimate and SGD together) ran {_k(learner.get('env_steps_per_s', float('nan')))} "
        f"env-steps/s between the first and the last report; Brax's own per-epoch figures (training epochs without the "
        f"evaluations) were {', '.join(_k(x) for x in learner['brax_training_sps'])} env-steps/s. "
        f"{_load_sentence(la)}", "",
    ]
    if "rigid" in sp:
        lines += [
            "| environment steps/s, same run | worlds | env-steps/s | physics steps/s |", "|---|---|---|---|",
            f"| rigid backend, env only (`jit(vmap(step))`, zero residual) | {sp['rigid']['worlds']} | "
            f"{_k(sp['rigid']['env_steps_per_s'])} | {_k(sp['rigid']['env_steps_per_s'] * r.get('substeps', 5))} |",
            f"| MJX backend, env only | {sp['mjx']['worlds']} | {_k(sp['mjx']['env_steps_per_s'])} | "
            f"{_k(sp['mjx']['env_steps_per_s'] * r.get('substeps', 5))} |",
            f"| rigid backend with the PPO learner, first to last report (per epoch: {sps_range}) | {t['num_envs']} | "
            f"{_k(learner.get('env_steps_per_s', float('nan')))} | "
            f"{_k(learner.get('env_steps_per_s', float('nan')) * r.get('substeps', 5))} |", "",
            "An environment step is 5 physics steps (20 ms). The MJX figure is without the learner: at its rate the "
            "same training would take about "
            f"{t['env_steps'] / sp['mjx']['env_steps_per_s'] / 60:.0f} min of environment stepping alone.", "",
        ]
    n = r["network"]
    lines += [
        f"**Learner setup.** Residual on the feed-forward force only (`residual_scale` = {tuple(r['residual_scale'])}: "
        "position, velocity, force [N], yaw); Gaussian policy (`distribution_type=\"normal\"`, the environment clips to "
        f"[-1, 1]), initial exploration std {n['init_noise_std']}, last policy layer initialised at variance scale "
        f"{n['mean_init_scale']} (the untrained policy flies the reference controller); hidden layers {n['hidden']} "
        f"(policy and value); {t['num_envs']} environments, unroll {t['unroll_length']}, batch {t['batch_size']} x "
        f"{t['num_minibatches']} minibatches, {t['num_updates_per_batch']} updates per batch, learning rate "
        f"{t['learning_rate']:g}, entropy cost {t['entropy_cost']:g}, discount {t['discounting']}, reward scaling "
        f"{t['reward_scaling']:g}, observation normalization on. The task's reward and success are unchanged.", "",
        "![PPO learning curve](results/ppo_near_ground.png)", "",
        f"Command (repository root, `rl` extra installed): `{COMMAND}` ({t['seconds'] / 60:.1f} min of training in this "
        f"run; had every epoch run at the slowest epoch's rate, about {worst / 60:.0f} min; evaluation and the "
        "env-steps/s measurements add a few minutes; `--quick` checks the pipeline; `--help` lists the learner "
        "settings). Results: `results/ppo_near_ground.json`.",
    ]
    return "\n".join(lines) + "\n"


def write_readme(result: dict, path: pathlib.Path = README) -> None:
    """Rewrite the part of ``path`` between :data:`BEGIN` and :data:`END`
    (added before the ``<!-- results:begin -->`` marker when absent)."""
    text = path.read_text()
    block = BEGIN + "\n" + readme_section(result) + END
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        anchor = "<!-- results:begin -->"
        head, tail = text.split(anchor, 1) if anchor in text else (text.rstrip() + "\n\n", "")
        text = head + block + "\n\n" + (anchor + tail if tail or anchor in text else "")
    path.write_text(text)


def _parser():
    from flapjax.tasks import ppo_config

    d = ppo_config("near_ground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny budget (pipeline check, no learning claim)")
    parser.add_argument("--timesteps", type=int, default=d.num_timesteps)
    parser.add_argument("--num-envs", type=int, default=d.num_envs)
    parser.add_argument("--unroll-length", type=int, default=d.unroll_length)
    parser.add_argument("--batch-size", type=int, default=d.batch_size)
    parser.add_argument("--num-minibatches", type=int, default=d.num_minibatches)
    parser.add_argument("--updates-per-batch", type=int, default=d.num_updates_per_batch)
    parser.add_argument("--learning-rate", type=float, default=d.learning_rate)
    parser.add_argument("--entropy-cost", type=float, default=d.entropy_cost)
    parser.add_argument("--discounting", type=float, default=d.discounting)
    parser.add_argument("--reward-scaling", type=float, default=d.reward_scaling)
    parser.add_argument("--hidden", default=",".join(map(str, d.hidden)), help="hidden layer sizes of both networks")
    parser.add_argument("--init-noise-std", type=float, default=d.init_noise_std)
    parser.add_argument("--mean-init-scale", type=float, default=d.mean_init_scale,
                        help="variance scale of the policy's last layer (small: the untrained policy is the reference)")
    parser.add_argument("--residual-scale", default=",".join(f"{x:g}" for x in d.residual_scale),
                        help="what an action of 1 adds: position [m], velocity [m/s], force [N], yaw [rad]")
    parser.add_argument("--no-normalize", action="store_true", help="no observation normalization")
    parser.add_argument("--num-evals", type=int, default=d.num_evals)
    parser.add_argument("--eval-worlds", type=int, default=256)
    parser.add_argument("--no-speed", action="store_true", help="skip the env-steps/s measurements")
    parser.add_argument("--robot", default=d.robot)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--readme", action="store_true",
                        help="only rewrite the PPO section of benchmarks/README.md from the saved results")
    return parser


def learner_config(args):
    """The :class:`flapjax.tasks.PPOConfig` of the command line (``--quick``: a tiny budget)."""
    from flapjax.tasks import ppo_config

    cfg = ppo_config("near_ground").replace(
        robot=args.robot, residual_scale=tuple(float(x) for x in args.residual_scale.split(",")),
        num_timesteps=args.timesteps, num_envs=args.num_envs, batch_size=args.batch_size,
        num_minibatches=args.num_minibatches, unroll_length=args.unroll_length,
        num_updates_per_batch=args.updates_per_batch, num_evals=args.num_evals, learning_rate=args.learning_rate,
        entropy_cost=args.entropy_cost, discounting=args.discounting, reward_scaling=args.reward_scaling,
        hidden=tuple(int(x) for x in args.hidden.split(",")), init_noise_std=args.init_noise_std,
        mean_init_scale=args.mean_init_scale, normalize_observations=not args.no_normalize, seed=args.seed)
    if args.quick:
        cfg = cfg.replace(num_timesteps=2 * 16 * 8 * 4, num_envs=16, batch_size=16, num_minibatches=4,
                          unroll_length=8, num_updates_per_batch=1, num_evals=2, num_eval_envs=16, hidden=(16,))
    return cfg


def main(argv=None) -> dict:
    args = _parser().parse_args(argv)
    if args.readme:
        result = json.loads((OUT / "ppo_near_ground.json").read_text())
        write_readme(result)
        plot(result, OUT / "ppo_near_ground.png")
        print(f"wrote {README}, {OUT / 'ppo_near_ground.png'}")
        return result

    from brax.training.agents.ppo import train as ppo

    from flapjax import tasks

    cfg = learner_config(args)
    residual_scale, hidden = cfg.residual_scale, cfg.hidden
    overrides = cfg.env_overrides()
    env = cfg.make_env()
    eval_worlds, bench = (min(args.eval_worlds, 16), (16, 10)) if args.quick else (args.eval_worlds, (1024, 50))
    brax_kwargs = cfg.brax_kwargs()
    train_cfg = {k: brax_kwargs[k] for k in ("num_timesteps", "num_envs", "batch_size", "num_minibatches",
                                             "unroll_length", "num_updates_per_batch", "num_evals", "num_eval_envs",
                                             "learning_rate", "entropy_cost", "discounting", "reward_scaling",
                                             "normalize_observations")}
    curve = []
    t_start = time.perf_counter()

    def progress(step, metrics):
        curve.append(dict(step=int(step), eval_reward=float(metrics.get("eval/episode_reward", np.nan)),
                          seconds=time.perf_counter() - t_start,
                          sps=float(metrics.get("training/sps", np.nan))))
        print(f"step {step:>10d}  eval reward {curve[-1]['eval_reward']:8.3f}  ({curve[-1]['seconds']:.0f} s, "
              f"learner {curve[-1]['sps']:.0f} env-steps/s)", flush=True)

    load_before = load_average()
    with jax.enable_x64(False):  # Brax's PPO mixes float32 networks with default-float counters
        make_policy, params, _ = ppo.train(environment=env, progress_fn=progress, **brax_kwargs)
        train_s = time.perf_counter() - t_start
        load_after = load_average()
        task_env = env.task_env
        ppo_eval = evaluate_policy(task_env, tasks.policy_controller(make_policy, params), eval_worlds,
                                   seed=args.seed + 1000)
        # the reference controller: a residual of zeros (run_episodes' default in residual mode)
        ref_eval = evaluate_policy(task_env, None, eval_worlds, seed=args.seed + 1000)
        # Learner throughput: env steps between the first and the last progress report over the
        # wall time between them (the first report comes after compilation and a first evaluation).
        learner = dict(env_steps_per_s_overall=train_cfg["num_timesteps"] / train_s,
                       brax_training_sps=[c["sps"] for c in curve if np.isfinite(c["sps"])])
        if len(curve) >= 2 and curve[-1]["seconds"] > curve[0]["seconds"]:
            learner["env_steps_per_s"] = (curve[-1]["step"] - curve[0]["step"]) / (
                curve[-1]["seconds"] - curve[0]["seconds"])
            learner["compile_and_first_eval_s"] = curve[0]["seconds"]
        speed = dict(with_learner=learner)
        if not args.no_speed:
            speed["rigid"] = env_steps_per_second(task_env, *bench)
            mjx_env = tasks.make_for_learning("near_ground", backend="mjx", **overrides)
            speed["mjx"] = env_steps_per_second(mjx_env, min(bench[0], 256), 10)

    result = dict(quick=args.quick, robot=args.robot, residual_scale=list(residual_scale),
                  substeps=task_env.config.substeps, episode_length=env.episode_length,
                  train=dict(train_cfg, seconds=train_s,  # Brax rounds num_timesteps up to whole epochs
                             env_steps=curve[-1]["step"] if curve else train_cfg["num_timesteps"]),
                  network=dict(hidden=list(hidden), distribution_type="normal", noise_std_type="log",
                               init_noise_std=cfg.init_noise_std, mean_init_scale=cfg.mean_init_scale),
                  eval_worlds=eval_worlds, eval_seed=args.seed + 1000, ppo=ppo_eval, reference=ref_eval,
                  speed=speed, curve=curve, load_average=dict(before=load_before, after_training=load_after),
                  cpu_count=os.cpu_count(), jax=dict(version=jax.__version__, backend=jax.default_backend()))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "ppo_near_ground_quick" if args.quick else "ppo_near_ground"
    (out / f"{name}.json").write_text(json.dumps(result, indent=2))
    plot(result, out / f"{name}.png")
    msg = (f"PPO: success {ppo_eval['success_rate']:.3f}, height RMSE {ppo_eval['height_rmse_mean']:.4f} m; "
           f"reference: success {ref_eval['success_rate']:.3f}, height RMSE {ref_eval['height_rmse_mean']:.4f} m "
           f"({eval_worlds} worlds); train {train_s:.0f} s for {result['train']['env_steps']} env steps; "
           f"learner {learner.get('env_steps_per_s', float('nan')):.3g} env-steps/s")
    if "rigid" in speed:
        msg += (f"; rigid {speed['rigid']['env_steps_per_s']:.3g} env-steps/s, "
                f"mjx {speed['mjx']['env_steps_per_s']:.3g}")
    print(msg)
    print(f"wrote {out / (name + '.json')}, {out / (name + '.png')}")
    if not args.quick and out.resolve() == OUT.resolve():
        write_readme(result)
        print(f"wrote {README}")
    return result


if __name__ == "__main__":
    main()
