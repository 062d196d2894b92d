"""Entry points of the RL adapters.

* :func:`brax_env` -> :class:`flapjax.tasks.rl_brax.BraxTaskEnv`, a Brax
  ``Env`` that ``brax.training.agents.ppo.train`` accepts unchanged;
* :func:`gym_env` -> :class:`flapjax.tasks.rl_gym.GymTaskEnv`, a
  ``gymnasium.Env``; :func:`gym_vector_env` ->
  :class:`flapjax.tasks.rl_gym.GymVectorTaskEnv`, a
  ``gymnasium.vector.VectorEnv``;
* :func:`sb3_vec_env` -> :class:`flapjax.tasks.rl_sb3.SB3VecTaskEnv`, a
  Stable-Baselines3 ``VecEnv`` over the same jitted batch.

They import Brax, Gymnasium or Stable-Baselines3 only when called, and say
which extra to install when it is missing (``pip install -e ".[rl]"``,
``".[sb3]"``). The tasks are built by
:func:`flapjax.tasks.actions.make_for_learning` (residual actions in [-1, 1],
the rigid backend where the task needs no contact; see
:mod:`flapjax.tasks.actions` for the action map).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from flapjax.tasks.actions import (action_bounds, make_for_learning, terminated, time_limit,  # noqa: F401
                                   to_task_action)
from flapjax.validation import ConfigError


def require(extra: str, *modules: str) -> None:
    """Raise ``ImportError`` naming ``pip install -e ".[<extra>]"`` when one of
    ``modules`` is not installed (checked before any work is done)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"{', '.join(missing)} not installed: this needs flapjax's {extra!r} extra; "
                          f'from the repository root run: pip install -e ".[{extra}]"')


def brax_env(name: str, **overrides: Any):
    """A Brax environment of task ``name`` (:class:`flapjax.tasks.rl_brax.BraxTaskEnv`);
    ``overrides`` as :func:`make_for_learning`."""
    require("rl", "brax")
    from flapjax.tasks.rl_brax import BraxTaskEnv

    return BraxTaskEnv(make_for_learning(name, **overrides))


def gym_env(name: str, render_mode: str | None = None, **overrides: Any):
    """A ``gymnasium.Env`` of task ``name`` (:class:`flapjax.tasks.rl_gym.GymTaskEnv`);
    ``render_mode="rgb_array"`` makes ``render()`` return a frame of the world
    (needs the ``render`` side of flapjax: :func:`flapjax.render.task_frame`)."""
    require("rl", "gymnasium")
    from flapjax.tasks.rl_gym import GymTaskEnv

    return GymTaskEnv(make_for_learning(name, **overrides), render_mode=render_mode)


def gym_vector_env(name: str, num_envs: int, **overrides: Any):
    """A ``gymnasium.vector.VectorEnv`` of ``num_envs`` worlds of task ``name``
    (:class:`flapjax.tasks.rl_gym.GymVectorTaskEnv`)."""
    require("rl", "gymnasium")
    from flapjax.tasks.rl_gym import GymVectorTaskEnv

    return GymVectorTaskEnv(make_for_learning(name, **overrides), num_envs)


def sb3_vec_env(name: str, num_envs: int, *, seed: int = 0, **overrides: Any):
    """A Stable-Baselines3 ``VecEnv`` of ``num_envs`` worlds of task ``name``
    (:class:`flapjax.tasks.rl_sb3.SB3VecTaskEnv`: one jitted, vmapped step
    for the batch)."""
    require("sb3", "stable_baselines3", "gymnasium")
    from flapjax.tasks.rl_sb3 import SB3VecTaskEnv

    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ConfigError(f"num_envs: must be an integer >= 1, got {num_envs!r}")
    return SB3VecTaskEnv(make_for_learning(name, **overrides), num_envs, seed=seed)
