"""Learner settings that work on each task, and saving a trained policy.

``ppo_config(name)`` is the Brax PPO setup measured on task ``name``
(``benchmarks/ppo_near_ground.py`` uses it); Brax's defaults do not learn
these tasks (a wide exploration noise and a randomly initialised last layer
hide the sharp reward):

    from brax.training.agents.ppo import train as ppo
    from flapjax import tasks
    cfg = tasks.ppo_config("near_ground")
    env = cfg.make_env()
    make_policy, params, metrics = ppo.train(environment=env, **cfg.brax_kwargs())
    controller = tasks.policy_controller(make_policy, params)   # state -> action, for run_episodes
    tasks.save_policy("out/policy", cfg, params)
    make_policy, params, cfg = tasks.load_policy("out/policy")

What makes them work on ``near_ground``: the residual acts on the
feed-forward force only (``residual_scale`` = (0 m, 0 m/s, 2 N, 0 rad)), so
the reference controller keeps the position and velocity setpoints and the
policy learns the force the reference does not know (ground effect,
randomized mass and thrust); a Gaussian policy whose mean starts near zero
(last layer at a small variance scale), so the untrained policy flies the
reference controller; a small exploration std (0.3); observation
normalization; 512 environments. Only ``near_ground`` has been tuned and
measured; the other tasks get the same learner as a starting point.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib
import pickle
from typing import Any, Callable

import jax
import numpy as np

from flapjax.tasks import registry
from flapjax.validation import ConfigError

#: Files of a saved policy (:func:`save_policy`).
POLICY_FILE, CONFIG_FILE = "params.pkl", "ppo_config.json"


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Brax PPO settings for one task.

    Attributes:
      task: task name (:func:`flapjax.tasks.names`).
      robot: robot preset or profile file.
      randomization: train on randomized worlds.
      residual_scale: (4,) setpoint change of a residual action of 1:
        position [m], velocity [m/s], force [N], yaw [rad]; ``None``: the task's.
      num_timesteps: environment steps of training.
      num_envs, unroll_length, batch_size, num_minibatches,
        num_updates_per_batch, learning_rate, entropy_cost, discounting,
        reward_scaling, normalize_observations, num_evals, num_eval_envs,
        seed: as ``brax.training.agents.ppo.train``.
      hidden: hidden layer sizes of the policy and value networks.
      init_noise_std: initial exploration standard deviation (in action units).
      mean_init_scale: variance scale of the policy's last layer (small:
        the untrained policy is the reference controller).
    """

    task: str = "near_ground"
    robot: str = "quad_x"
    randomization: bool = True
    residual_scale: tuple[float, float, float, float] | None = (0.0, 0.0, 2.0, 0.0)
    num_timesteps: int = 2_097_152
    num_envs: int = 512
    unroll_length: int = 16
    batch_size: int = 512
    num_minibatches: int = 8
    num_updates_per_batch: int = 4
    learning_rate: float = 1e-3
    entropy_cost: float = 1e-3
    discounting: float = 0.97
    reward_scaling: float = 1.0
    normalize_observations: bool = True
    num_evals: int = 9
    num_eval_envs: int = 128
    seed: int = 0
    hidden: tuple[int, ...] = (64, 64)
    init_noise_std: float = 0.3
    mean_init_scale: float = 0.01

    def __post_init__(self):
        registry.get_class(self.task)
        for name in ("num_timesteps", "num_envs", "unroll_length", "batch_size", "num_minibatches",
                     "num_updates_per_batch", "num_evals", "num_eval_envs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigError(f"{name}: must be an integer >= 1, got {v!r}")
        if (self.batch_size * self.num_minibatches) % self.num_envs:
            raise ConfigError(f"batch_size * num_minibatches: must be a multiple of num_envs = {self.num_envs}, "
                              f"got {self.batch_size} * {self.num_minibatches}")
        if self.residual_scale is not None and len(self.residual_scale) != 4:
            raise ConfigError(f"residual_scale: must have 4 entries (position, velocity, force, yaw), "
                              f"got {self.residual_scale!r}")
        for name in ("learning_rate", "init_noise_std", "mean_init_scale"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name}: must be > 0, got {getattr(self, name)!r}")

    def replace(self, **changes: Any) -> "PPOConfig":
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    def env_overrides(self) -> dict[str, Any]:
        """Task overrides of the training environment."""
        out: dict[str, Any] = {"robot": self.robot, "randomization.enabled": self.randomization}
        if self.residual_scale is not None:
            out["residual_scale"] = tuple(float(x) for x in self.residual_scale)
        return out

    def make_env(self, **overrides: Any):
        """The Brax environment to train on (:func:`flapjax.tasks.brax_env`), plus ``overrides``."""
        from flapjax.tasks.adapters import brax_env

        return brax_env(self.task, **{**self.env_overrides(), **overrides})

    def network_factory(self) -> Callable:
        """Brax's ``make_ppo_networks`` with this configuration's policy (see the module docstring)."""
        from brax.training.agents.ppo import networks as ppo_networks

        return functools.partial(
            ppo_networks.make_ppo_networks, policy_hidden_layer_sizes=tuple(self.hidden),
            value_hidden_layer_sizes=tuple(self.hidden), distribution_type="normal", noise_std_type="log",
            init_noise_std=self.init_noise_std, mean_kernel_init_fn=jax.nn.initializers.variance_scaling,
            mean_kernel_init_kwargs=dict(scale=self.mean_init_scale, mode="fan_in", distribution="uniform"))

    def brax_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``brax.training.agents.ppo.train`` (all but ``environment``)."""
        from flapjax.tasks.rl_brax import wrap_for_brax_training

        names = ("num_timesteps", "num_envs", "unroll_length", "batch_size", "num_minibatches",
                 "num_updates_per_batch", "learning_rate", "entropy_cost", "discounting", "reward_scaling",
                 "normalize_observations", "num_evals", "num_eval_envs", "seed")
        out = {k: getattr(self, k) for k in names}
        episode_length = registry.default_config(self.task).episode_length
        out.update(episode_length=episode_length, network_factory=self.network_factory(),
                   wrap_env_fn=wrap_for_brax_training)
        return out


#: Per task: the settings measured on it (near_ground) or the same learner as a start.
_CONFIGS = {
    "near_ground": PPOConfig(),
    "wall_contact": PPOConfig(task="wall_contact", residual_scale=None, num_envs=64, batch_size=64),
    "object_push": PPOConfig(task="object_push", residual_scale=None),
}


def ppo_config(name: str) -> PPOConfig:
    """The Brax PPO settings of task ``name`` (see the module docstring)."""
    registry.get_class(name)
    return _CONFIGS.get(name, PPOConfig(task=name, residual_scale=None))


def policy_controller(make_policy: Callable, params) -> Callable:
    """``controller(state) -> action`` flying the deterministic policy of
    ``make_policy(params)`` (Brax's PPO result) on a task state, for
    :func:`flapjax.evaluate.run_episodes` on ``env.task_env``."""
    policy = make_policy(params, deterministic=True)

    def controller(state):
        return policy(state.obs, jax.random.key_data(jax.random.key(0)))[0]

    return controller


def save_policy(path: str | pathlib.Path, config: PPOConfig, params) -> pathlib.Path:
    """Write ``params`` (Brax PPO's ``(normalizer, policy, value)``) and
    ``config`` into the directory ``path``; returns it."""
    if not isinstance(config, PPOConfig):
        raise ConfigError(f"config: must be a PPOConfig, got {type(config).__name__}")
    from flapjax.tasks.actions import make_for_learning

    env = make_for_learning(config.task, **config.env_overrides())
    path = pathlib.Path(path)
    path.mkdir(parents=True, exist_ok=True)
    host = jax.tree.map(np.asarray, jax.device_get(params))
    with open(path / POLICY_FILE, "wb") as f:
        pickle.dump(host, f)
    meta = dict(config=dataclasses.asdict(config), observation_size=env.observation_size,
                action_size=env.action_size)
    (path / CONFIG_FILE).write_text(json.dumps(meta, indent=2))
    return path


def load_policy(path: str | pathlib.Path):
    """``(make_policy, params, config)`` of a policy written by :func:`save_policy`:
    ``make_policy(params, deterministic=True)(obs, key) -> (action, extras)``."""
    from brax.training.acme import running_statistics
    from brax.training.agents.ppo import networks as ppo_networks

    path = pathlib.Path(path)
    for name in (POLICY_FILE, CONFIG_FILE):
        if not (path / name).is_file():
            raise ConfigError(f"path: {str(path)!r} holds no saved policy ({name} missing; see save_policy)")
    meta = json.loads((path / CONFIG_FILE).read_text())
    raw = meta["config"]
    for key in ("hidden", "residual_scale"):
        if raw.get(key) is not None:
            raw[key] = tuple(raw[key])
    config = PPOConfig(**raw)
    with open(path / POLICY_FILE, "rb") as f:
        params = pickle.load(f)
    obs_size, action_size = int(meta["observation_size"]), int(meta["action_size"])
    normalize = running_statistics.normalize if config.normalize_observations else (lambda x, y: x)
    networks = config.network_factory()((obs_size,), action_size, preprocess_observations_fn=normalize)
    return ppo_networks.make_inference_fn(networks), params, config
