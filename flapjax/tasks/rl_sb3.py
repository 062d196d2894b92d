"""Stable-Baselines3 adapter: ``num_envs`` worlds of a task as one SB3
``VecEnv``, stepped by one jitted, vmapped call (``pip install -e ".[sb3]"``).

    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor
    venv = VecMonitor(flapjax.tasks.sb3_vec_env("near_ground", num_envs=256))
    PPO("MlpPolicy", venv, n_steps=64, batch_size=4096).learn(200_000)

SB3's ``make_vec_env`` over single Gymnasium worlds steps them one by one
in Python; this adapter runs them together, as
:class:`~flapjax.tasks.rl_gym.GymVectorTaskEnv` does for Gymnasium.

SB3's conventions: actions (num_envs, action_size) in [-1, 1]
(:func:`flapjax.tasks.actions.to_task_action`); ``step_wait`` returns
``(obs, rewards, dones, infos)`` with ``dones`` = terminated or truncated;
a finished world restarts in the same step with a new world (its key split
from the adapter's key), its last observation in
``infos[i]["terminal_observation"]`` and ``infos[i]["TimeLimit.truncated"]``
set when the time limit (not a failure) ended it. ``seed(s)`` fixes the
worlds of the next ``reset``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from flapjax.programs import ProgramCache
from flapjax.tasks import actions
from flapjax.tasks.base import TaskEnv
from flapjax.validation import ConfigError

_COMPILED = ProgramCache()


def _build(env: TaskEnv):
    """``(reset_all, step_all)`` jitted: a finished world restarts within the step."""

    def step_one(state, action):
        new = env.step(state, actions.to_task_action(env, action))
        term = actions.terminated(env, new)
        return new, term, actions.time_limit(env, new) & ~term

    def reset_all(key, num_envs):
        key, sub = jax.random.split(key)
        return jax.vmap(env.reset)(jax.random.split(sub, num_envs)), key

    def step_all(states, acts, key):
        stepped, term, trunc = jax.vmap(step_one)(states, acts)
        done = term | trunc
        key, sub = jax.random.split(key)

        def restart(_):
            fresh = jax.vmap(env.reset)(jax.random.split(sub, acts.shape[0]))
            pick = lambda a, b: jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b)  # noqa: E731
            return jax.tree.map(pick, fresh, stepped)

        new = jax.lax.cond(jnp.any(done), restart, lambda _: stepped, None)
        return new, new.obs, stepped.obs, stepped.reward, term, trunc, key

    return jax.jit(reset_all, static_argnums=1), jax.jit(step_all)


class SB3VecTaskEnv(VecEnv):
    """``num_envs`` worlds of a task as a Stable-Baselines3 ``VecEnv`` (see
    the module docstring).

    Args:
      env: the task (build it with :func:`flapjax.tasks.sb3_vec_env`).
      num_envs: number of worlds.
      seed: seed of the first ``reset``'s worlds.
    """

    def __init__(self, env: TaskEnv, num_envs: int, *, seed: int = 0):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ConfigError(f"num_envs: must be an integer >= 1, got {num_envs!r}")
        obs_space = spaces.Box(-np.inf, np.inf, (env.observation_size,), np.float32)
        act_space = spaces.Box(-1.0, 1.0, (env.action_size,), np.float32)
        self.render_mode = None
        super().__init__(num_envs, obs_space, act_space)
        self.task_env = env
        self._reset_all, self._step_all = _COMPILED.get((env.program_key, "sb3"), lambda: _build(env))
        self._seed = int(seed)
        self._states = None
        self._key = None
        self._actions = None

    def seed(self, seed: int | None = None) -> list[int | None]:
        if seed is not None:
            self._seed = int(seed)
        return [self._seed] * self.num_envs

    def reset(self) -> np.ndarray:
        self._states, self._key = self._reset_all(jax.random.key(self._seed), self.num_envs)
        self._seed += 1  # the next reset draws new worlds
        return np.array(self._states.obs, np.float32)  # a writable copy, as SB3 expects

    def step_async(self, acts: np.ndarray) -> None:
        acts = np.asarray(acts, np.float32).reshape(self.num_envs, -1)
        if acts.shape != (self.num_envs, self.task_env.action_size):
            raise ConfigError(f"actions: expected shape ({self.num_envs}, {self.task_env.action_size}), "
                              f"got {acts.shape}")
        self._actions = jnp.asarray(acts)

    def step_wait(self):
        if self._states is None:
            raise RuntimeError("step: call reset() first")
        self._states, obs, last_obs, reward, term, trunc, self._key = self._step_all(
            self._states, self._actions, self._key)
        # writable copies: SB3 edits rewards and observations in place
        obs, term, trunc = np.array(obs, np.float32), np.array(term, bool), np.array(trunc, bool)
        done = term | trunc
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if done.any():
            last_obs = np.array(last_obs, np.float32)
            for i in np.flatnonzero(done):
                infos[i] = {"terminal_observation": last_obs[i], "TimeLimit.truncated": bool(trunc[i])}
        return obs, np.array(reward, np.float32), done, infos

    def close(self) -> None:
        self._states = None

    def _indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        return [indices] if isinstance(indices, int) else list(indices)

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        return [getattr(self, attr_name) for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise ConfigError(f"set_attr: the worlds share one jitted program; {attr_name!r} cannot be set per world")

    def env_method(self, method_name: str, *args, indices=None, **kwargs) -> list[Any]:
        return [getattr(self, method_name)(*args, **kwargs) for _ in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._indices(indices)]
