"""Entry points of the RL adapters and what they share: a task built for
learning and its [-1, 1] actions.

* :func:`brax_env` -> :class:`flapjax.tasks.rl_brax.BraxTaskEnv`, a Brax
  ``Env`` that ``brax.training.agents.ppo.train`` accepts unchanged;
* :func:`gym_env` -> :class:`flapjax.tasks.rl_gym.GymTaskEnv`, a
  ``gymnasium.Env``; :func:`gym_vector_env` ->
  :class:`flapjax.tasks.rl_gym.GymVectorTaskEnv`, a
  ``gymnasium.vector.VectorEnv``.

They import Brax or Gymnasium only when called (``pip install -e ".[rl]"``).

Reinforcement-learning libraries expect actions in [-1, 1]. The adapters build a task
with :func:`make_for_learning` and map a policy's action ``a`` in [-1, 1]
to the task's action by :func:`to_task_action`:

* ``"residual"`` (the adapters' default): passed through; the task scales it
  by ``config.residual_scale`` around the reference controller's setpoint;
* ``"setpoint"``: ``low + (a + 1) (high - low) / 2`` with the bounds of
  :func:`action_bounds` (end-effector position within 2 m horizontally and
  0-2 m up, velocity within 2 m/s, feed-forward force within the weight,
  yaw within pi);
* ``"wrench"``: the same affine map, body force within the summed maximum
  thrust (``F_z`` from 0, so ``a = 0`` asks half of it) and torque within
  that thrust at the longest arm.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.math import GRAVITY
from flapjax.tasks import registry
from flapjax.tasks.base import TaskEnv
from flapjax.validation import check_shape


def make_for_learning(name: str, **overrides: Any) -> TaskEnv:
    """Task ``name`` with ``overrides`` (dotted keys allowed); unless given,
    ``action_mode="residual"`` and, for tasks that need no contact,
    ``backend="rigid"`` (the fast contact-free body)."""
    cls = registry.get_class(name)
    overrides.setdefault("action_mode", "residual")
    if not cls.needs_contact:
        overrides.setdefault("backend", "rigid")
    return registry.make(name, **overrides)


def action_bounds(env: TaskEnv) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` (action_size,) of the task action a policy's -1 and +1 map to."""
    prof = env.profile
    if env.config.action_mode == "residual":
        one = np.ones(env.action_size, np.float32)
        return -one, one
    if env.config.action_mode == "setpoint":
        weight = float(np.asarray(prof.mass)) * GRAVITY
        high = np.array([2.0, 2.0, 2.0, 2.0, 2.0, 2.0, weight, weight, weight, np.pi], np.float32)
        low = -high.copy()
        low[2] = 0.0
        return low, high
    # numpy on the concrete profile: these are constants even inside a jitted step
    thrust = float(np.sum(np.asarray(prof.thrust_max)))
    arm = float(np.max(np.linalg.norm(np.asarray(prof.positions), axis=1)))
    high = np.array([thrust] * 3 + [thrust * arm] * 3, np.float32)
    low = -high.copy()
    low[2] = 0.0  # rotors push along +z: a = 0 asks half the summed maximum thrust, near hover
    return low, high


def to_task_action(env: TaskEnv, action: Float[Array, " a"]) -> Float[Array, " a"]:
    """Policy action in [-1, 1] (clipped) -> the task's action (see the module docstring)."""
    check_shape("action", action, (env.action_size,))
    action = jnp.clip(jnp.asarray(action, jnp.float32), -1.0, 1.0)
    if env.config.action_mode == "residual":
        return action
    low, high = action_bounds(env)
    return jnp.asarray(low) + 0.5 * (action + 1.0) * jnp.asarray(high - low)


def terminated(env: TaskEnv, state) -> Array:
    """() bool: the episode ended by failure (divergence; on the rigid backend, a touch)."""
    failed = state.info["diverged"]
    if "touched" in state.info:
        failed = failed | state.info["touched"]
    return failed


def time_limit(env: TaskEnv, state) -> Array:
    """() bool: the episode reached ``config.episode_length`` steps."""
    return state.info["step"] >= env.config.episode_length


def brax_env(name: str, **overrides: Any):
    """A Brax environment of task ``name`` (:class:`flapjax.tasks.rl_brax.BraxTaskEnv`);
    ``overrides`` as :func:`make_for_learning`."""
    from flapjax.tasks.rl_brax import BraxTaskEnv

    return BraxTaskEnv(make_for_learning(name, **overrides))


def gym_env(name: str, render_mode: str | None = None, **overrides: Any):
    """A ``gymnasium.Env`` of task ``name`` (:class:`flapjax.tasks.rl_gym.GymTaskEnv`);
    ``render_mode="rgb_array"`` makes ``render()`` return a frame of the world."""
    from flapjax.tasks.rl_gym import GymTaskEnv

    return GymTaskEnv(make_for_learning(name, **overrides), render_mode=render_mode)


def gym_vector_env(name: str, num_envs: int, **overrides: Any):
    """A ``gymnasium.vector.VectorEnv`` of ``num_envs`` worlds of task ``name``
    (:class:`flapjax.tasks.rl_gym.GymVectorTaskEnv`)."""
    from flapjax.tasks.rl_gym import GymVectorTaskEnv

    return GymVectorTaskEnv(make_for_learning(name, **overrides), num_envs)
