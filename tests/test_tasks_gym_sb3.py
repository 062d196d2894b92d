"""Gymnasium ids and the Stable-Baselines3 VecEnv: ``gymnasium.make`` and
``make_vec`` build the flapjax adapters; the SB3 adapter follows SB3's
auto-reset convention and steps the same worlds as the task itself."""

import gymnasium
import jax
import numpy as np
import pytest

from flapjax import tasks
from flapjax.tasks import rl_registry, rl_gym
from flapjax.validation import ConfigError

SMALL = dict(episode_length=3, substeps=1)


def test_gymnasium_make_and_make_vec_build_the_adapters():
    assert rl_registry.register_gymnasium_envs() == [rl_registry.gym_id(n) for n in tasks.names()]
    env = gymnasium.make("flapjax/near_ground-v0", **SMALL)
    assert isinstance(env.unwrapped, rl_gym.GymTaskEnv)
    assert env.unwrapped.task_env.config.episode_length == 3 and env.unwrapped.task_env.config.backend == "rigid"
    obs, _ = env.reset(seed=0)
    assert obs.shape == (22,)
    venv = gymnasium.make_vec("flapjax/near_ground-v0", num_envs=4, **SMALL)
    assert isinstance(venv, rl_gym.GymVectorTaskEnv) and venv.num_envs == 4
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (4, 22)
    # the module:id form imports flapjax.tasks by itself
    assert gymnasium.make("flapjax.tasks:flapjax/near_ground-v0", **SMALL).unwrapped.task_env.name == "near_ground"


def test_sb3_vec_env_restarts_finished_worlds_in_the_same_step():
    """Rewards and observations are those of the task's own step; after
    ``episode_length`` steps every world is done, truncated (not failed),
    its last observation in the info and a new world's first observation
    returned."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import VecEnv

    venv = tasks.sb3_vec_env("near_ground", 2, seed=7, **SMALL)
    assert isinstance(venv, VecEnv) and venv.observation_space.shape == (22,)
    obs0 = venv.reset()
    env = venv.task_env
    states = jax.vmap(env.reset)(jax.random.split(jax.random.split(jax.random.key(7))[1], 2))
    np.testing.assert_allclose(obs0, states.obs, rtol=1e-6)
    zeros = np.zeros((2, 10), np.float32)
    for k in range(3):
        states = jax.vmap(env.step)(states, zeros)
        obs, reward, done, infos = venv.step(zeros)
        np.testing.assert_allclose(reward, states.reward, rtol=1e-6)
        if k < 2:
            assert not done.any() and infos == [{}, {}]
            np.testing.assert_allclose(obs, states.obs, rtol=1e-6)
    assert done.all() and all(i["TimeLimit.truncated"] for i in infos)
    np.testing.assert_allclose(np.stack([i["terminal_observation"] for i in infos]), states.obs, rtol=1e-6)
    assert np.all(np.abs(obs - states.obs).max(axis=1) > 1e-3)  # a new world's first observation
    np.testing.assert_allclose(obs[:, 18], 0.0)  # its phase restarts at 0
    with pytest.raises(ConfigError, match="actions"):
        venv.step(np.zeros((3, 10), np.float32))


def test_sb3_ppo_runs_on_the_vec_env():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    venv = tasks.sb3_vec_env("near_ground", 4, **SMALL)
    model = PPO("MlpPolicy", venv, n_steps=8, batch_size=16, n_epochs=1, seed=0, verbose=0,
                policy_kwargs=dict(net_arch=[8]))
    model.learn(64)
    assert model.num_timesteps == 64


@pytest.mark.slow
def test_a_short_sb3_ppo_run_improves_the_episode_return():
    """SB3's PPO on ``sb3_vec_env`` with the tuned task settings: 300 k steps
    raise the mean deterministic episode return over 256 worlds above the
    untrained policy's (SB3 starts the action layer near zero, so the
    untrained policy is the reference controller)."""
    pytest.importorskip("stable_baselines3")
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecMonitor

    torch.set_num_threads(1)
    over = tasks.ppo_config("near_ground").env_overrides()
    venv = VecMonitor(tasks.sb3_vec_env("near_ground", 256, **over))
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=4096, n_epochs=4, seed=0, verbose=0)
    before, _ = evaluate_policy(model, venv, n_eval_episodes=256, deterministic=True)
    model.learn(300_000)
    after, _ = evaluate_policy(model, venv, n_eval_episodes=256, deterministic=True)
    assert after > before + 10.0, (before, after)
