"""The tasks in Gymnasium's and Brax's registries (done when
:mod:`flapjax.tasks` is imported, for the libraries that are installed).

Gymnasium: ``flapjax/<task>-v0``.

    import flapjax.tasks                                # registers (when Gymnasium is installed)
    env = gymnasium.make("flapjax/near_ground-v0")      # a GymTaskEnv: one world
    venv = gymnasium.make_vec("flapjax/near_ground-v0", num_envs=256)   # one jitted batch
    env = gymnasium.make("flapjax.tasks:flapjax/near_ground-v0")       # imports flapjax.tasks itself

Keyword arguments of ``make`` / ``make_vec`` are task overrides as in
:func:`flapjax.tasks.gym_env` (dotted keys through ``**{...}``).
``make_vec`` uses the vector entry point (:class:`~flapjax.tasks.rl_gym.GymVectorTaskEnv`,
every world in one jitted, vmapped step), not a list of single worlds.

Brax: ``flapjax_<task>``; ``brax.envs.get_environment("flapjax_near_ground",
**overrides)`` is ``flapjax.tasks.brax_env("near_ground", **overrides)``.

The entries load the adapters (:mod:`flapjax.tasks.rl_gym`,
:mod:`flapjax.tasks.rl_brax`) only when an environment is made, so
registering imports nothing but the two registries.
"""

from __future__ import annotations

import importlib.util

from flapjax.tasks import registry

NAMESPACE, VERSION = "flapjax", "v0"


def gym_id(task: str) -> str:
    """Gymnasium id of task ``task``: ``flapjax/<task>-v0``."""
    return f"{NAMESPACE}/{task}-{VERSION}"


def register_gymnasium_envs() -> list[str]:
    """Register every task with Gymnasium (nothing when Gymnasium is not
    installed); returns the ids. Idempotent."""
    if importlib.util.find_spec("gymnasium") is None:
        return []
    from gymnasium.envs.registration import register
    from gymnasium.envs.registration import registry as gym_registry

    ids = []
    for task in registry.names():
        env_id = gym_id(task)
        if env_id not in gym_registry:
            register(id=env_id, entry_point="flapjax.tasks.rl_gym:make_gym_env",
                     vector_entry_point="flapjax.tasks.rl_gym:make_gym_vector_env", kwargs={"task": task})
        ids.append(env_id)
    return ids


def brax_name(task: str) -> str:
    """Brax registry name of task ``task``: ``flapjax_<task>``."""
    return f"flapjax_{task}"


def _brax_factory(task: str):
    def make(**overrides):
        from flapjax.tasks.actions import make_for_learning
        from flapjax.tasks.rl_brax import BraxTaskEnv

        return BraxTaskEnv(make_for_learning(task, **overrides))

    make.__name__ = f"make_{task}"
    return make


def register_brax_environments() -> list[str]:
    """Register every task with ``brax.envs`` as :func:`brax_name` (nothing
    when Brax is not installed); returns the names. Idempotent."""
    if importlib.util.find_spec("brax") is None:
        return []
    from brax.envs import register_environment

    names = []
    for task in registry.names():
        register_environment(brax_name(task), _brax_factory(task))
        names.append(brax_name(task))
    return names
