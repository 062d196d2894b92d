"""Task registry: names -> environment classes, with per-task default configs.

    env = flapjax.tasks.make("wall_contact", robot="hexa", **{"randomization.enabled": True})
"""

from __future__ import annotations

from typing import Any

from flapjax.tasks.base import TaskEnv
from flapjax.tasks.config import TaskConfig, replace_config
from flapjax.tasks.near_ground import NearGround
from flapjax.tasks.object_push import ObjectPush
from flapjax.tasks.wall_contact import WallContact
from flapjax.validation import ConfigError

_REGISTRY: dict[str, type[TaskEnv]] = {}


def register(env_class: type[TaskEnv]) -> type[TaskEnv]:
    """Add an environment class under its ``name``."""
    _REGISTRY[env_class.name] = env_class
    return env_class


for _cls in (NearGround, WallContact, ObjectPush):
    register(_cls)


def names() -> list[str]:
    """Registered task names."""
    return sorted(_REGISTRY)


def get_class(name: str) -> type[TaskEnv]:
    if name not in _REGISTRY:
        raise ConfigError(f"task: must be one of {names()}, got {name!r}")
    return _REGISTRY[name]


def default_config(name: str) -> TaskConfig:
    """The default configuration of task ``name``."""
    return get_class(name).default_config()


def make(name: str, config: TaskConfig | None = None, overrides: dict[str, Any] | None = None,
         **kwargs: Any) -> TaskEnv:
    """Build task ``name`` from ``config`` (default: its default config) with
    ``overrides`` / keyword overrides (dotted keys reach nested settings)."""
    cls = get_class(name)
    cfg = cls.default_config() if config is None else config
    if overrides or kwargs:
        cfg = replace_config(cfg, overrides, **kwargs)
    return cls(cfg)
