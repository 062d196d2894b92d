"""Gymnasium adapters: a task as a ``gymnasium.Env`` (one world) and as a
``gymnasium.vector.VectorEnv`` (``num_envs`` worlds in one jitted, vmapped
call). NumPy in and out, JAX inside.

    env = flapjax.tasks.gym_env("near_ground")                 # residual actions, rigid backend
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

    venv = flapjax.tasks.gym_vector_env("near_ground", num_envs=64)

Spaces: ``Box(-1, 1, (action_size,), float32)`` actions
(:func:`flapjax.tasks.actions.to_task_action`) and ``Box(-inf, inf,
(observation_size,), float32)`` observations (the vector environment's
spaces are the batched ones; ``single_*_space`` the per-world ones).
``terminated``: the episode ended by failure (divergence; on the rigid
backend, a touch); ``truncated``: it reached ``episode_length`` steps.

Keys: ``reset(seed=s)`` seeds the environment's NumPy generator, which draws
the JAX key of every episode (the vector environment: one key per
``reset``, split inside the jitted step for the worlds it restarts), so the
same seed gives the same worlds. The vector environment resets a finished
world at its next ``step`` (Gymnasium's ``AutoresetMode.NEXT_STEP``: that
step returns the new episode's first observation, reward 0 and neither flag
set); the restart runs only on steps where some world needs it.

Compilation: the jitted reset and step are shared by every adapter of the
same task and configuration, so a second environment (an evaluation copy,
a new vector environment) compiles nothing.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from flapjax.programs import ProgramCache
from flapjax.tasks import actions
from flapjax.tasks.base import TaskEnv
from flapjax.validation import ConfigError


def _spaces(env: TaskEnv) -> tuple[spaces.Box, spaces.Box]:
    obs = spaces.Box(-np.inf, np.inf, (env.observation_size,), np.float32)
    act = spaces.Box(-1.0, 1.0, (env.action_size,), np.float32)
    return obs, act


def _step_fn(env: TaskEnv):
    def step(state, action):
        new = env.step(state, actions.to_task_action(env, action))
        term = actions.terminated(env, new)
        trunc = actions.time_limit(env, new) & ~term
        return new, new.obs, new.reward, term, trunc, new.metrics

    return step


def _episode_key(generator: np.random.Generator) -> int:
    return int(generator.integers(0, 2**31 - 1))


_COMPILED = ProgramCache()


def _single_functions(env: TaskEnv):
    """``(reset, step)`` of one world, jitted once per task and configuration."""
    return _COMPILED.get((env.program_key, "single"), lambda: (jax.jit(env.reset), jax.jit(_step_fn(env))))


def _vector_functions(env: TaskEnv):
    """``(reset_all, step_all)`` of a batch of worlds, jitted once per task and
    configuration (the batch size is the arrays' leading axis)."""
    return _COMPILED.get((env.program_key, "vector"), lambda: _build_vector_functions(env))


def _build_vector_functions(env: TaskEnv):
    step = _step_fn(env)

    def reset_all(key, num_envs):
        key, sub = jax.random.split(key)
        return jax.vmap(env.reset)(jax.random.split(sub, num_envs)), key

    def step_all(states, actions, needs_reset, key):
        stepped, _, reward, term, trunc, _ = jax.vmap(step)(states, actions)
        key, sub = jax.random.split(key)

        def restart(_):
            fresh = jax.vmap(env.reset)(jax.random.split(sub, actions.shape[0]))

            def pick(a, b):
                mask = needs_reset.reshape(needs_reset.shape + (1,) * (a.ndim - 1))
                return jnp.where(mask, a, b)

            return jax.tree.map(pick, fresh, stepped)

        new = jax.lax.cond(jnp.any(needs_reset), restart, lambda _: stepped, None)
        zero = jnp.zeros_like(term)
        # a restarted world returns its new episode's first observation
        return (new, new.obs, jnp.where(needs_reset, 0.0, reward),
                jnp.where(needs_reset, zero, term), jnp.where(needs_reset, zero, trunc), key)

    return jax.jit(reset_all, static_argnums=1), jax.jit(step_all)


def make_gym_env(task: str, render_mode: str | None = None, **overrides: Any) -> "GymTaskEnv":
    """Gymnasium entry point of ``flapjax/<task>-v0`` (:mod:`flapjax.tasks.rl_registry`)."""
    return GymTaskEnv(actions.make_for_learning(task, **overrides), render_mode=render_mode)


def make_gym_vector_env(task: str, num_envs: int = 1, render_mode: str | None = None,
                        **overrides: Any) -> "GymVectorTaskEnv":
    """Gymnasium vector entry point of ``flapjax/<task>-v0`` (``gymnasium.make_vec``)."""
    if render_mode is not None:
        raise ConfigError(f"render_mode: the vector environment does not render, got {render_mode!r}")
    return GymVectorTaskEnv(actions.make_for_learning(task, **overrides), num_envs)


class GymTaskEnv(gym.Env):
    """One world of a task as a ``gymnasium.Env`` (see the module docstring).

    Args:
      env: the task (build it with :func:`flapjax.tasks.gym_env`).
      render_mode: ``None`` or ``"rgb_array"`` (a frame of the current world,
        :func:`flapjax.tasks.view.task_frame`).
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, env: TaskEnv, render_mode: str | None = None):
        if render_mode not in (None, "rgb_array"):
            from flapjax.validation import ConfigError

            raise ConfigError(f"render_mode: must be None or 'rgb_array', got {render_mode!r}")
        self.task_env = env
        self.observation_space, self.action_space = _spaces(env)
        self.render_mode = render_mode
        self.metadata = dict(self.metadata, render_fps=int(round(1.0 / env.dt)))
        self._reset, self._step = _single_functions(env)
        self._state = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._state = self._reset(jax.random.key(_episode_key(self.np_random)))
        return np.asarray(self._state.obs, np.float32), {}

    def step(self, action):
        if self._state is None:
            raise RuntimeError("step: call reset() first")
        action = jnp.asarray(np.asarray(action, np.float32))
        self._state, obs, reward, term, trunc, metrics = self._step(self._state, action)
        info = {k: float(v) for k, v in metrics.items()}
        return np.asarray(obs, np.float32), float(reward), bool(term), bool(trunc), info

    @property
    def state(self):
        """The task's :class:`~flapjax.tasks.base.EnvState` of the current world."""
        return self._state

    def render(self):
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        from flapjax.tasks.view import task_frame

        return task_frame(self.task_env, self._state)


class GymVectorTaskEnv(VectorEnv):
    """``num_envs`` worlds of a task as a ``gymnasium.vector.VectorEnv``
    (see the module docstring).

    Args:
      env: the task (build it with :func:`flapjax.tasks.gym_vector_env`).
      num_envs: number of worlds.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, env: TaskEnv, num_envs: int):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            from flapjax.validation import ConfigError

            raise ConfigError(f"num_envs: must be an integer >= 1, got {num_envs!r}")
        self.task_env = env
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = _spaces(env)
        self.observation_space = spaces.Box(-np.inf, np.inf, (num_envs, env.observation_size), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (num_envs, env.action_size), np.float32)
        self.metadata = dict(self.metadata, render_fps=int(round(1.0 / env.dt)))
        self._reset_all, self._step_all = _vector_functions(env)
        self._states = None
        self._key = None
        self._needs_reset = np.zeros(num_envs, bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._states, self._key = self._reset_all(jax.random.key(_episode_key(self.np_random)), self.num_envs)
        self._needs_reset = np.zeros(self.num_envs, bool)
        return np.asarray(self._states.obs, np.float32), {}

    def step(self, actions):
        if self._states is None:
            raise RuntimeError("step: call reset() first")
        actions = np.asarray(actions, np.float32)
        if actions.shape != self.action_space.shape:
            raise ConfigError(f"actions: expected shape {self.action_space.shape} (num_envs, action_size), "
                              f"got shape {actions.shape}")
        actions = jnp.asarray(actions)
        self._states, obs, reward, term, trunc, self._key = self._step_all(
            self._states, actions, jnp.asarray(self._needs_reset), self._key)
        term, trunc = np.asarray(term, bool), np.asarray(trunc, bool)
        self._needs_reset = term | trunc
        return (np.asarray(obs, np.float32), np.asarray(reward, np.float64), term, trunc, {})

    @property
    def states(self):
        """The task's batched :class:`~flapjax.tasks.base.EnvState` of the worlds."""
        return self._states
