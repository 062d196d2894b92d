"""Stable-Baselines3 PPO on near_ground: the batched VecEnv against SB3's own vectorization.

Both runs train SB3's PPO (``MlpPolicy``, the learner included in the
time) on the same task with the same learner settings:

* flapjax: :func:`flapjax.tasks.sb3_vec_env` (``--worlds`` worlds, one
  jitted, vmapped step for all of them);
* baseline: SB3's ``make_vec_env`` over single Gymnasium worlds
  (:func:`flapjax.tasks.gym_env`, ``--baseline-worlds`` of them in a
  ``DummyVecEnv``, stepped one by one in Python), which is what SB3's
  documentation tells a user to do with a Gymnasium environment.

Each run is timed after a first short ``learn`` call (compilation, SB3's
set-up); env-steps/s is environment steps over the wall time of the second
``learn`` call. With ``--improve N`` the flapjax run then trains N more
steps and reports the mean deterministic episode return over ``--worlds``
episodes before and after (the untrained policy is the reference
controller: SB3 initialises the action layer near zero).

    python -m benchmarks.sb3_speed                 # speed only (about 2 min on 2 CPU cores)
    python -m benchmarks.sb3_speed --improve 400000

Writes ``<out>/sb3_speed.json``. Needs the ``sb3`` extra (``make install-sb3``).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

from benchmarks.common import env_info

OUT = pathlib.Path(__file__).parent / "results"


def _ppo(venv, n_steps: int, batch_size: int, seed: int):
    from stable_baselines3 import PPO

    return PPO("MlpPolicy", venv, n_steps=n_steps, batch_size=batch_size, n_epochs=4, seed=seed, verbose=0)


def timed_learning(venv, num_envs: int, rollouts: int, seed: int) -> dict:
    """Env-steps/s of SB3 PPO on ``venv`` over ``rollouts`` rollouts of 64 steps
    (after one warm-up rollout, not timed)."""
    n_steps = 64
    model = _ppo(venv, n_steps, min(4096, n_steps * num_envs), seed)
    t0 = time.perf_counter()
    model.learn(n_steps * num_envs)
    warmup_s = time.perf_counter() - t0
    steps = n_steps * num_envs * rollouts
    t0 = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    wall = time.perf_counter() - t0
    return dict(num_envs=num_envs, env_steps=steps, wall_s=wall, warmup_s=warmup_s,
                env_steps_per_s=steps / wall, _model=model)


def mean_return(model, venv, episodes: int) -> float:
    """Mean deterministic episode return over ``episodes`` episodes."""
    from stable_baselines3.common.evaluation import evaluate_policy

    mean, _ = evaluate_policy(model, venv, n_eval_episodes=episodes, deterministic=True)
    return float(mean)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, default=256)
    ap.add_argument("--baseline-worlds", type=int, default=8)
    ap.add_argument("--rollouts", type=int, default=4, help="timed rollouts of 64 steps per world (flapjax)")
    ap.add_argument("--baseline-rollouts", type=int, default=2)
    ap.add_argument("--improve", type=int, default=0, help="extra PPO steps, then returns before and after")
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch threads for the learner (both runs; 1 keeps it steady on a shared machine)")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.torch_threads)
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecMonitor

    from flapjax import tasks

    over = tasks.ppo_config("near_ground").env_overrides()
    fast = VecMonitor(tasks.sb3_vec_env("near_ground", args.worlds, **over))
    ours = timed_learning(fast, args.worlds, args.rollouts, seed=0)
    slow = make_vec_env(lambda: tasks.gym_env("near_ground", **over), n_envs=args.baseline_worlds, seed=0)
    base = timed_learning(slow, args.baseline_worlds, args.baseline_rollouts, seed=0)
    result = dict(env=env_info(), task="near_ground", torch_threads=args.torch_threads,
                  learner="SB3 PPO MlpPolicy, n_steps 64, n_epochs 4",
                  flapjax={k: v for k, v in ours.items() if not k.startswith("_")},
                  baseline={k: v for k, v in base.items() if not k.startswith("_")},
                  ratio=ours["env_steps_per_s"] / base["env_steps_per_s"])
    print(f"sb3_vec_env ({args.worlds} worlds): {ours['env_steps_per_s']:.0f} env-steps/s; "
          f"make_vec_env ({args.baseline_worlds} single worlds): {base['env_steps_per_s']:.0f} env-steps/s; "
          f"ratio {result['ratio']:.1f}x")
    if args.improve > 0:
        model = ours["_model"]
        before = mean_return(_ppo(fast, 64, 4096, seed=1), fast, args.worlds)
        t0 = time.perf_counter()
        model.learn(args.improve, reset_num_timesteps=False)
        after = mean_return(model, fast, args.worlds)
        result["improve"] = dict(extra_steps=args.improve, wall_s=time.perf_counter() - t0,
                                 return_untrained=before, return_trained=after)
        print(f"mean episode return over {args.worlds} episodes: untrained {before:.1f}, "
              f"after {args.improve} more steps {after:.1f}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sb3_speed.json").write_text(json.dumps(result, indent=2, default=float))
    return result


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
