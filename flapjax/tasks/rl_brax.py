"""Brax adapter: a task as a ``brax.envs.base.Env`` that
``brax.training.agents.ppo.train`` accepts unchanged.

    from brax.training.agents.ppo import train as ppo
    from flapjax.tasks import rl_brax
    env = flapjax.tasks.brax_env("near_ground")       # residual actions, rigid backend
    make_policy, params, metrics = ppo.train(environment=env, num_timesteps=..., episode_length=env.episode_length,
                                             wrap_env_fn=rl_brax.wrap_for_brax_training, ...)

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
reports ``info["truncation"]`` at the task's own limit. ``info["time_out"]``
is 1 on the step that ends an episode by the time limit (0 on a failure),
so ``ppo.train(bootstrap_on_timeout=True)`` works. Actions are in
[-1, 1] (:func:`flapjax.tasks.actions.to_task_action`).

Episode metrics. Besides the task's per-step metrics, ``state.metrics``
holds ``success`` and the task's primary metric (``near_ground``:
``height_rmse`` [m]) on the step that ends an episode, 0 on every other
step: Brax sums metrics over an episode, so its training log reports
``episode/success`` (the success rate of the episodes that ended) and its
evaluation ``eval/episode_success``, with the same definition as
:meth:`flapjax.tasks.base.TaskEnv.summarize`.

Registry. Importing :mod:`flapjax.tasks` registers every task with Brax as
``flapjax_<task>`` (:mod:`flapjax.tasks.rl_registry`):
``brax.envs.get_environment("flapjax_near_ground", **overrides)``.

New worlds at every episode. Brax's own ``AutoResetWrapper`` restores each
environment's first state, so every episode of one environment slot would
replay the same randomized world and the same noise draws, and training
would see only ``num_envs`` worlds. :func:`wrap_for_brax_training` uses
:class:`FreshWorldAutoReset` instead: a finished slot is reset with a new
key, so it draws a new world (airframe, start, goal, disturbances) and new
noise streams, as the gymnasium adapters do. Hand it to PPO as
``ppo.train(..., wrap_env_fn=rl_brax.wrap_for_brax_training)``; without
``wrap_env_fn`` Brax applies its own wrappers and the replay. The new world
costs a batched reset on the steps where some slot finished (near_ground,
rigid backend, 512 worlds, 2 CPU cores: 3.1 ms for the reset against
5.6 ms for the step).

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

from flapjax.tasks import actions
from flapjax.tasks.base import EnvState, TaskEnv
from flapjax.validation import ConfigError

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
        :func:`flapjax.tasks.actions.make_for_learning`).
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

    def observation_spec(self) -> dict[str, slice]:
        """``{name: slice}`` of the observation vector (:meth:`TaskEnv.observation_spec`)."""
        return self.task_env.observation_spec()

    @property
    def episode_metric_names(self) -> tuple[str, ...]:
        """Metrics set only on the step that ends an episode (see the module docstring)."""
        primary = self.task_env.primary_metric
        return ("success",) + ((primary,) if primary else ())

    def _episode_metrics(self, inner: EnvState, ended) -> dict:
        summary = self.task_env.summarize(inner)
        return {k: jnp.where(ended, jnp.asarray(summary[k], jnp.float32), 0.0) for k in self.episode_metric_names}

    def _wrap(self, inner, reward, done, truncation, terminated, ended) -> brax_base.State:
        # JAX's default float (float64 under x64), as Brax's wrappers make their counters.
        f = jnp.result_type(float)
        metrics = dict(inner.metrics)
        metrics.update(self._episode_metrics(inner, ended))
        return brax_base.State(
            pipeline_state=inner, obs=inner.obs, reward=jnp.asarray(reward, f), done=jnp.asarray(done, f),
            metrics=metrics,
            info=dict(truncation=jnp.asarray(truncation, f), time_out=jnp.asarray(truncation, f),
                      terminated=jnp.asarray(terminated, f)),
        )

    def reset(self, rng: jax.Array) -> brax_base.State:
        inner = self.task_env.reset(_as_key(rng))
        zero = jnp.zeros((), jnp.float32)
        return self._wrap(inner, zero, zero, zero, zero, jnp.zeros((), bool))

    def step(self, state: brax_base.State, action: jax.Array) -> brax_base.State:
        env = self.task_env
        inner = env.step(state.pipeline_state, actions.to_task_action(env, action))
        term = actions.terminated(env, inner)
        limit = actions.time_limit(env, inner)
        new = self._wrap(inner, inner.reward, term, limit & ~term, term, term | limit)
        info = dict(state.info)  # keep what Brax's wrappers added
        info.update(new.info)
        metrics = dict(state.metrics)
        metrics.update(new.metrics)
        return new.replace(info=info, metrics=metrics)


class FreshWorldAutoReset(brax_base.Wrapper):
    """Auto-reset that draws a new world for every episode.

    Wraps a batched environment (Brax's vmap and episode wrappers). Each
    slot keeps a key in ``info["reset_rng"]`` ((batch, 2) raw key words);
    every step splits it in two, the first half kept for the next step and
    the second the reset key of a slot that has just finished (``done``):
    its pipeline state and observation are replaced by those of
    ``env.reset`` with that key, so the new episode has a new randomized
    world and new noise streams. The reset runs (for the whole batch, inside
    a ``lax.cond``) only on steps where some slot finished. Episode
    counters behave as in Brax's ``AutoResetWrapper`` (``steps`` restarts at
    the step after ``done``; ``done`` and ``truncation`` stay visible on the
    step that finished).
    """

    def reset(self, rng: jax.Array) -> brax_base.State:
        state = self.env.reset(rng)
        state.info["reset_rng"] = rng
        return state

    def step(self, state: brax_base.State, action: jax.Array) -> brax_base.State:
        info = dict(state.info)  # the caller's state is left as it was
        if "steps" in info:
            info["steps"] = jnp.where(state.done, jnp.zeros_like(info["steps"]), info["steps"])
        state = self.env.step(state.replace(info=info, done=jnp.zeros_like(state.done)), action)
        pairs = jax.vmap(jax.random.split)(state.info["reset_rng"])
        keep_keys, reset_keys = pairs[:, 0], pairs[:, 1]
        done = state.done

        def fresh(_):
            new = self.env.reset(reset_keys)
            return jax.tree.map(lambda a, b: jnp.asarray(a, b.dtype), (new.pipeline_state, new.obs),
                                (state.pipeline_state, state.obs))

        restarted = jax.lax.cond(jnp.any(done > 0), fresh, lambda _: (state.pipeline_state, state.obs), None)

        def where_done(x, y):
            if done.shape and (not x.shape or x.shape[0] != done.shape[0]):
                return y
            d = jnp.reshape(done, done.shape + (1,) * (x.ndim - done.ndim)) if done.shape else done
            return jnp.where(d > 0, x, y)

        pipeline_state, obs = jax.tree.map(where_done, restarted, (state.pipeline_state, state.obs))
        # the episode wrapper's limit, which may differ from the task's own
        info = {**state.info, "reset_rng": keep_keys, "time_out": state.info["truncation"]}
        return state.replace(pipeline_state=pipeline_state, obs=obs, info=info)


def wrap_for_brax_training(env: BraxTaskEnv, episode_length: int | None = None, action_repeat: int = 1,
                           randomization_fn=None, *, fresh_worlds: bool = True):
    """Brax's vmap and episode wrappers around ``env`` and an auto-reset on
    top, the wrapping ``ppo.train`` applies: pass this function as
    ``ppo.train(wrap_env_fn=...)`` (its signature is Brax's ``wrap``).

    Args:
      env: the task as a Brax environment.
      episode_length: steps per episode; default the task's.
      action_repeat: steps per action.
      randomization_fn: must be ``None`` (``ppo.train`` passes it): the
        tasks randomize their own worlds (``randomization.*`` in the task
        configuration); Brax's ``System`` randomization has no system to act on.
      fresh_worlds: ``True`` (default): :class:`FreshWorldAutoReset`, every
        episode a new world; ``False``: Brax's ``AutoResetWrapper``, every
        episode of a slot replays its first world.
    """
    length = env.episode_length if episode_length is None else episode_length
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise ValueError(f"episode_length: expected a positive integer, got {length!r}")
    if randomization_fn is not None:
        raise ConfigError("randomization_fn: flapjax tasks randomize their own worlds; switch it on with the "
                          "task override {'randomization.enabled': True} and leave randomization_fn=None")
    if not fresh_worlds:
        return brax_training.wrap(env, episode_length=length, action_repeat=action_repeat)
    inner = brax_training.VmapWrapper(env)
    return FreshWorldAutoReset(brax_training.EpisodeWrapper(inner, int(length), action_repeat))
