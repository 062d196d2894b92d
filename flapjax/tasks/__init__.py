"""Aerial-manipulation tasks: functional environments, randomization, noise.

``make(name, robot=..., **overrides)`` builds an environment with
``reset(key) -> EnvState`` and ``step(state, action) -> EnvState``
(jit- and vmap-able); see :mod:`flapjax.tasks.base` for the contract.

For RL libraries (``pip install -e ".[rl]"``): ``brax_env(name, **overrides)``
(a Brax ``Env`` for ``brax.training.agents.ppo.train``), ``gym_env`` and
``gym_vector_env`` (Gymnasium), ``sb3_vec_env`` (Stable-Baselines3, ``".[sb3]"``);
see :mod:`flapjax.tasks.adapters`. ``ppo_config(name)`` holds learner
settings that work on each task, ``save_policy`` / ``load_policy`` a trained
policy (:mod:`flapjax.tasks.learning`). Importing this package registers
the tasks with Gymnasium (``gymnasium.make("flapjax/near_ground-v0")``) and
Brax (``brax.envs.get_environment("flapjax_near_ground")``) when those are
installed (:mod:`flapjax.tasks.rl_registry`).
"""

from flapjax.tasks.actions import make_for_learning
from flapjax.tasks.adapters import brax_env, gym_env, gym_vector_env, sb3_vec_env
from flapjax.tasks.base import EnvState, TaskEnv
from flapjax.tasks.config import (ACTION_MODES, EFFECTS, NoiseConfig, RandomizationConfig, TaskConfig,
                                  config_to_dict, replace_config)
from flapjax.tasks.learning import PPOConfig, load_policy, policy_controller, ppo_config, save_policy
from flapjax.tasks.near_ground import NearGround, NearGroundConfig
from flapjax.tasks.object_push import ObjectPush, ObjectPushConfig
from flapjax.tasks.registry import default_config, get_class, make, names, register
from flapjax.tasks.rl_registry import register_brax_environments, register_gymnasium_envs
from flapjax.tasks.wall_contact import WallContact, WallContactConfig

__all__ = [
    "EnvState", "TaskEnv", "ACTION_MODES", "EFFECTS", "NoiseConfig", "RandomizationConfig", "TaskConfig",
    "config_to_dict", "replace_config", "NearGround", "NearGroundConfig", "ObjectPush", "ObjectPushConfig",
    "WallContact", "WallContactConfig", "default_config", "get_class", "make", "names", "register",
    "brax_env", "gym_env", "gym_vector_env", "sb3_vec_env", "make_for_learning", "PPOConfig", "ppo_config",
    "policy_controller", "save_policy", "load_policy",
]

register_gymnasium_envs()
register_brax_environments()
