"""Brax adapter: a task as a ``brax.envs.base.Env`` that
``brax.training.agents.ppo.train`` accepts unchanged.

    from brax.training.agents.ppo import train as ppo
    env = flapjax.tasks.brax_env("near_ground")       # residual actions, rigid backend
    make_policy, params, metrics = ppo.train(environment=env, num_timesteps=..., episode_length=env.episode_length, ...)

The Brax ``State`` carries the task's :class:`~flapjax.tasks.base.EnvState`
as ``pipeline_state`` (Brax's auto-reset wrapper restores it leaf by leaf),
the observation (``observation_size``,), the reward, ``done``, the task's
per-step ``metrics`` and ``info``. As in Brax's own environments, ``done``
is 1 on failure only (divergence; on the rigid backend, the robot reaching
a surface; also ``info["terminated"]``): the time limit belongs to Brax's
``EpisodeWrapper`` (``ppo.train(episode_length=env.episode_length)`` or
:func:`wrap_for_brax_training`), which sets ``done`` and
``info["truncation"]`` = 1 there, so PPO bootstraps the value at the limit
instead of treating it as a terminal state. (Had ``done`` already been 1 at
the limit, the wrapper would report no truncation.) The unwrapped step also
reports ``info["truncation"]`` at the task's own limit. Actions are in
[-1, 1] (:func:`flapjax.tasks.adapters.to_task_action`).

Brax's ``AutoResetWrapper`` restores each environment's first state: every
episode of one environment slot replays the same randomized world and the
same noise draws, so training sees ``num_envs`` worlds (use many
environments, or Brax's ``randomization_fn``, for more). The gymnasium
adapters draw a new world at every reset.

Compatibility shim. Brax 0.14.2's trainers call ``jax.device_put_replicated``,
which JAX 0.10 removed. :func:`install_brax_shim` (run when this module is
imported) gives the Brax training modules that call it, and only those, a
``jax`` namespace with an equivalent ``device_put_replicated`` (the pytree
stacked once per device and placed with :func:`jax.device_put` on a sharding
along the leading axis); every other name is JAX's own, and JAX itself is not
modified, so the rest of flapjax never sees the shim. With a JAX that still
has the function, nothing is replaced.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from brax.envs import base as brax_base
from brax.envs.wrappers import training as brax_training

from flapjax.tasks import adapters
from flapjax.tasks.base import TaskEnv

#: Brax modules that call ``jax.device_put_replicated``.
SHIMMED_MODULES = ("brax.training.pmap", "brax.training.agents.ppo.train", "brax.training.agents.sac.train",
                   "brax.training.agents.apg.train")


def device_put_replicated(x: Any, devices) -> Any:
    """``jax.device_put_replicated`` of JAX < 0.10: each leaf of ``x`` stacked
    ``len(devices)`` times along a new leading axis, one slice per device."""
    devices = list(devices)
    mesh = jax.sharding.Mesh(np.array(devices), ("devices",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("devices"))
    stacked = jax.tree.map(lambda a: jnp.stack([jnp.asarray(a)] * len(devices)), x)
    return jax.device_put(stacked, sharding)


class _JaxForBrax(types.ModuleType):
    """JAX's namespace plus :func:`device_put_replicated` (for Brax's modules only)."""

    def __init__(self):
        super().__init__("jax", "JAX with device_put_replicated, for Brax's trainers")
        self.device_put_replicated = device_put_replicated

    def __getattr__(self, name: str):
        return getattr(jax, name)


def install_brax_shim() -> list[str]:
    """Give the Brax modules in :data:`SHIMMED_MODULES` the ``jax`` namespace
    of :class:`_JaxForBrax` when JAX lacks ``device_put_replicated``; returns
    the modules changed (none with an older JAX). Idempotent."""
    if hasattr(jax, "device_put_replicated"):
        return []
    changed = []
    for name in SHIMMED_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "jax", None) is jax:
            module.jax = _JaxForBrax()
            changed.append(name)
    return changed


install_brax_shim()


def _as_key(rng: jax.Array) -> jax.Array:
    """Brax passes raw uint32 (2,) keys; the tasks take typed keys."""
    if jnp.issubdtype(rng.dtype, jax.dtypes.prng_key):
        return rng
    return jax.random.wrap_key_data(rng)


class BraxTaskEnv(brax_base.Env):
    """A flapjax task as a Brax environment (see the module docstring).

    Args:
      env: the task (build it with :func:`flapjax.tasks.brax_env` or
        :func:`flapjax.tasks.adapters.make_for_learning`).
    """

    def __init__(self, env: TaskEnv):
        self.task_env = env

    def __repr__(self):
        return f"BraxTaskEnv({self.task_env!r}, action_mode={self.task_env.config.action_mode!r})"

    @property
    def episode_length(self) -> int:
        """Steps per episode (pass it to ``ppo.train(episode_length=...)``)."""
        return self.task_env.config.episode_length

    @property
    def dt(self) -> float:
        """Environment step [s]."""
        return self.task_env.dt

    @property
    def observation_size(self) -> int:
        return self.task_env.observation_size

    @property
    def action_size(self) -> int:
        return self.task_env.action_size

    @property
    def backend(self) -> str:
        return self.task_env.config.backend

    def _wrap(self, inner, reward, done, truncation, terminated) -> brax_base.State:
        # JAX's default float (float64 under x64), as Brax's wrappers make their counters.
        f = jnp.result_type(float)
        return brax_base.State(
            pipeline_state=inner, obs=inner.obs, reward=jnp.asarray(reward, f), done=jnp.asarray(done, f),
            metrics=dict(inner.metrics),
            info=dict(truncation=jnp.asarray(truncation, f), terminated=jnp.asarray(terminated, f)),
        )

    def reset(self, rng: jax.Array) -> brax_base.State:
        inner = self.task_env.reset(_as_key(rng))
        zero = jnp.zeros((), jnp.float32)
        return self._wrap(inner, zero, zero, zero, zero)

    def step(self, state: brax_base.State, action: jax.Array) -> brax_base.State:
        env = self.task_env
        inner = env.step(state.pipeline_state, adapters.to_task_action(env, action))
        term = adapters.terminated(env, inner)
        limit = adapters.time_limit(env, inner)
        new = self._wrap(inner, inner.reward, term, limit & ~term, term)
        info = dict(state.info)  # keep what Brax's wrappers added
        info.update(new.info)
        metrics = dict(state.metrics)
        metrics.update(new.metrics)
        return new.replace(info=info, metrics=metrics)


def wrap_for_brax_training(env: BraxTaskEnv, episode_length: int | None = None, action_repeat: int = 1,
                           randomization_fn=None):
    """Brax's training wrappers (vmap, episode, auto-reset) around ``env``, as
    ``ppo.train`` applies them (``episode_length`` defaults to the task's)."""
    length = env.episode_length if episode_length is None else episode_length
    return brax_training.wrap(env, episode_length=length, action_repeat=action_repeat,
                              randomization_fn=randomization_fn)
