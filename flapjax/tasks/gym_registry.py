"""Gymnasium's registry entries of the tasks: ``flapjax/<task>-v0``.

    import flapjax.tasks                                # registers (when Gymnasium is installed)
    env = gymnasium.make("flapjax/near_ground-v0")      # a GymTaskEnv: one world
    venv = gymnasium.make_vec("flapjax/near_ground-v0", num_envs=256)   # one jitted batch
    env = gymnasium.make("flapjax.tasks:flapjax/near_ground-v0")       # imports flapjax.tasks itself

Keyword arguments of ``make`` / ``make_vec`` are task overrides as in
:func:`flapjax.tasks.gym_env` (dotted keys through ``**{...}``).
``make_vec`` uses the vector entry point (:class:`~flapjax.tasks.rl_gym.GymVectorTaskEnv`,
every world in one jitted, vmapped step), not a list of single worlds.
The entries point at :mod:`flapjax.tasks.rl_gym` by name, so registering
imports nothing but Gymnasium's registry.
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
