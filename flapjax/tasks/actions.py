"""What the RL adapters, the evaluation and the renderer share about a
task's actions: a task built for learning, the map from a policy's [-1, 1]
action to the task's action, the end of an episode, the reference
controller in each action mode, and the keys of evaluation worlds.

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

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.math import GRAVITY
from flapjax.tasks import registry
from flapjax.tasks.base import EnvState, TaskEnv
from flapjax.validation import ConfigError, check_shape


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


def terminated(env: TaskEnv, state: EnvState) -> Array:
    """() bool: the episode ended by failure (divergence; on the rigid backend, a touch)."""
    failed = state.info["diverged"]
    if "touched" in state.info:
        failed = failed | state.info["touched"]
    return failed


def time_limit(env: TaskEnv, state: EnvState) -> Array:
    """() bool: the episode reached ``config.episode_length`` steps."""
    return state.info["step"] >= env.config.episode_length


def zero_residual(env: TaskEnv) -> Callable[[EnvState], Array]:
    """The reference controller of a ``"residual"`` task: a residual of zeros."""
    size = env.action_size

    def reference(state: EnvState) -> Array:
        return jnp.zeros(size, jnp.float32)

    return reference


def resolve_controller(env: TaskEnv, controller: Callable | None) -> Callable[[EnvState], Array]:
    """``controller(state) -> action`` checked against ``env``'s action mode.

    ``None`` gives the reference controller in that mode (``"setpoint"``:
    :meth:`TaskEnv.scripted_action`; ``"residual"``: a residual of zeros,
    which flies the same setpoint); ``"wrench"`` has none. The task's
    setpoint controller handed to a task that reads residuals or wrenches,
    or a controller whose action is not (action_size,), raises
    :class:`~flapjax.validation.ConfigError`."""
    mode = env.config.action_mode
    if controller is None:
        if mode == "setpoint":
            return env.scripted_action
        if mode == "residual":
            return zero_residual(env)
        raise ConfigError("controller: a task with action_mode='wrench' has no reference controller; pass "
                          "controller=lambda state: <(6,) body wrench [N, N m]>")
    if mode != "setpoint" and getattr(controller, "__func__", None) is getattr(type(env), "scripted_action", None):
        raise ConfigError(f"controller: env.scripted_action returns setpoints, but this task reads "
                          f"action_mode={mode!r} actions; pass controller=None for the reference controller "
                          "or build the task with action_mode='setpoint'")
    state = jax.eval_shape(env.reset, jax.random.key(0))
    out = jax.eval_shape(controller, state)
    shape = getattr(out, "shape", None)
    if shape != (env.action_size,):
        raise ConfigError(f"controller: must return a ({env.action_size},) action for action_mode={mode!r}, "
                          f"got {shape if shape is not None else type(out).__name__}")
    return controller


def world_keys(n_worlds: int, seed: int, noise_seed: int | None = None):
    """``(keys, noise_keys)`` (n_worlds,) typed keys of an evaluation's worlds:
    world ``i`` draws from key ``i`` of ``split(key(seed))``, its noise from
    ``split(key(noise_seed))`` (default: the same keys)."""
    keys = jax.random.split(jax.random.key(seed), n_worlds)
    noise_keys = keys if noise_seed is None else jax.random.split(jax.random.key(noise_seed), n_worlds)
    return keys, noise_keys
