"""Learning on the tasks: the tuned PPO settings, Brax's conventions
(bootstrap on time-out, episode metrics, registry), saving and loading a
policy, the named observation layout, and the reference controller in each
action mode."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import tasks
from flapjax.tasks import actions
from flapjax.validation import ConfigError

NOISE_OFF = dict(sensor_position_std=0.0, sensor_velocity_std=0.0, sensor_attitude_std=0.0, sensor_rate_std=0.0,
                 command_thrust_std=0.0)
SMALL = dict(episode_length=12, substeps=1, noise=NOISE_OFF)
TINY_PPO = dict(num_timesteps=128, num_envs=8, batch_size=8, num_minibatches=2, unroll_length=4,
                num_updates_per_batch=1, num_evals=2, num_eval_envs=8, hidden=(8,))


def test_observation_spec_names_the_entries_of_the_vector():
    """The named slices tile the observation, and each names what is there:
    the end-effector position is the state's (noise off), the phase is
    step / episode_length, near_ground's height error is reference minus
    measured height."""
    env = tasks.make("near_ground", **SMALL)
    spec = env.observation_spec()
    assert spec["ee_position"] == slice(0, 3) and max(s.stop for s in spec.values()) == env.observation_size
    covered = np.zeros(env.observation_size, int)
    for s in spec.values():
        covered[s] += 1
    np.testing.assert_array_equal(covered, 1)
    s0 = env.reset(jax.random.key(0))
    s1 = env.step(s0, env.scripted_action(s0))
    obs = np.asarray(s1.obs)
    np.testing.assert_allclose(obs[spec["ee_position"]], env.ee_position(s1), atol=1e-5)
    np.testing.assert_allclose(obs[spec["phase"]], [1 / 12], rtol=1e-6)
    z_ref = obs[spec["reference_height"]][0]
    np.testing.assert_allclose(obs[spec["height_error"]], [z_ref - obs[spec["ee_position"]][2]], atol=1e-6)
    for name in ("wall_contact", "object_push"):
        cls = tasks.get_class(name)
        assert max(s.stop for s in tasks.make(name).observation_spec().values()) == \
            19 + sum(n for _, n in cls.task_obs_fields)


def test_reference_controller_follows_the_action_mode():
    """``controller=None`` is the reference in every mode: in residual mode a
    residual of zeros (which flies the setpoint); the setpoint controller
    handed to a residual task, a wrong-size action and a wrench task without
    controller are refused by name."""
    env = actions.make_for_learning("near_ground", **SMALL)
    ref = actions.resolve_controller(env, None)
    s0 = env.reset(jax.random.key(1))
    np.testing.assert_array_equal(ref(s0), np.zeros(10))
    with pytest.raises(ConfigError, match="controller: env.scripted_action returns setpoints"):
        actions.resolve_controller(env, env.scripted_action)
    with pytest.raises(ConfigError, match=r"controller: must return a \(10,\) action"):
        actions.resolve_controller(env, lambda s: jnp.zeros(6))
    wrench = tasks.make("near_ground", action_mode="wrench", backend="rigid", **SMALL)
    with pytest.raises(ConfigError, match="controller: a task with action_mode='wrench'"):
        actions.resolve_controller(wrench, None)
    setpoint = tasks.make("near_ground", backend="rigid", **SMALL)
    assert actions.resolve_controller(setpoint, None) == setpoint.scripted_action


def test_summary_of_an_episode_without_steps_is_no_success():
    env = tasks.make("near_ground", backend="rigid", **SMALL)
    s0 = env.reset(jax.random.key(2))
    assert not bool(env.summarize(s0)["success"])
    s = s0
    for _ in range(12):
        s = env.step(s, env.scripted_action(s))
    assert bool(env.summarize(s)["success"])  # noise off, 12 steps at cruise height


def test_brax_time_out_and_episode_metrics():
    """``info["time_out"]`` is 1 on the step the time limit ends (not on a
    failure) and ``success`` / ``height_rmse`` appear in ``state.metrics``
    on that step only, equal to the task's summary."""
    from flapjax.tasks import rl_brax

    env = tasks.brax_env("near_ground", **SMALL)
    wrapped = rl_brax.wrap_for_brax_training(env)

    @jax.jit
    def episode(keys):
        s0 = wrapped.reset(keys)
        step = lambda s, _: (wrapped.step(s, jnp.zeros((2, 10))), None)  # noqa: E731
        return s0, jax.lax.scan(step, s0, None, length=12)[0]

    s0, last = episode(jax.random.split(jax.random.PRNGKey(3), 2))
    np.testing.assert_array_equal(s0.info["time_out"], [0.0, 0.0])
    np.testing.assert_array_equal(last.info["time_out"], [1.0, 1.0])
    np.testing.assert_array_equal(s0.metrics["success"], [0.0, 0.0])
    np.testing.assert_array_equal(last.metrics["success"], [1.0, 1.0])

    @jax.jit
    def unwrapped(key):
        s = env.reset(key)
        seen = []
        for _ in range(12):
            seen.append(s.metrics["success"])
            s = env.step(s, jnp.zeros(10))
        return s, jnp.stack(seen)

    final, before = unwrapped(jax.random.PRNGKey(4))
    assert not np.any(np.asarray(before)) and float(final.metrics["success"]) == 1.0
    summary = env.task_env.summarize(final.pipeline_state)
    np.testing.assert_allclose(final.metrics["height_rmse"], summary["height_rmse"], rtol=1e-6)
    assert 0.0 < float(final.metrics["height_rmse"]) < 0.02
    with pytest.raises(ConfigError, match="randomization_fn"):
        rl_brax.wrap_for_brax_training(env, randomization_fn=lambda sys: (sys, None))


def test_brax_registry_and_ppo_config():
    import brax.envs

    from flapjax.tasks import rl_brax, rl_registry

    env = brax.envs.get_environment(rl_registry.brax_name("near_ground"), **SMALL)
    assert isinstance(env, rl_brax.BraxTaskEnv) and env.task_env.config.episode_length == 12
    cfg = tasks.ppo_config("near_ground")
    kw = cfg.brax_kwargs()
    assert kw["wrap_env_fn"] is rl_brax.wrap_for_brax_training and kw["episode_length"] == 250
    assert cfg.make_env().task_env.config.residual_scale == (0.0, 0.0, 2.0, 0.0)
    with pytest.raises(ConfigError, match="num_envs"):
        cfg.replace(num_envs=0)
    with pytest.raises(ConfigError, match="task"):
        tasks.ppo_config("hover")


def test_saved_policy_loads_back_to_the_same_actions(tmp_path):
    """A policy written by ``save_policy`` loads back with its settings and
    acts as before (networks at their initial parameters, with a non-trivial
    observation normalizer so that part of the file is checked too)."""
    from brax.training.acme import running_statistics
    from brax.training.agents.ppo import networks as ppo_networks

    cfg = tasks.ppo_config("near_ground").replace(hidden=(8,), mean_init_scale=1.0)
    obs_size = tasks.make_for_learning("near_ground").observation_size
    nets = cfg.network_factory()((obs_size,), 10, preprocess_observations_fn=running_statistics.normalize)
    key_p, key_v = jax.random.split(jax.random.PRNGKey(0))
    norm = running_statistics.init_state(jax.ShapeDtypeStruct((obs_size,), jnp.float32))
    norm = running_statistics.update(norm, jax.random.normal(jax.random.PRNGKey(5), (64, obs_size)))
    params = (norm, nets.policy_network.init(key_p), nets.value_network.init(key_v))
    path = tasks.save_policy(tmp_path / "policy", cfg, params)
    make2, params2, cfg2 = tasks.load_policy(path)
    assert cfg2 == cfg
    obs = jax.random.normal(jax.random.PRNGKey(6), (3, obs_size))
    a1 = ppo_networks.make_inference_fn(nets)(params, deterministic=True)(obs, jax.random.PRNGKey(1))[0]
    a2 = make2(params2, deterministic=True)(obs, jax.random.PRNGKey(1))[0]
    np.testing.assert_allclose(a1, a2, rtol=1e-6)
    assert float(jnp.max(jnp.abs(a1))) > 1e-3
    with pytest.raises(ConfigError, match="no saved policy"):
        tasks.load_policy(tmp_path)


@pytest.mark.slow
def test_short_ppo_run_with_the_tuned_settings_beats_the_untrained_policy():
    """Brax's PPO with ``ppo_config("near_ground")`` (a short budget,
    ``bootstrap_on_timeout=True``) reports the success rate among its
    metrics, and its policy tracks the height better than the untrained
    one (the reference controller) on 64 fresh worlds."""
    from brax.training.agents.ppo import train as ppo

    from flapjax.evaluate import run_episodes

    # 1.3 M of the 2.1 M steps: where the benchmark's learning curve has clearly left the reference's reward
    cfg = tasks.ppo_config("near_ground").replace(num_timesteps=1_310_720, num_evals=2, num_eval_envs=64)
    with jax.enable_x64(False):
        env = cfg.make_env()
        make_policy, params, metrics = ppo.train(environment=env, bootstrap_on_timeout=True, **cfg.brax_kwargs())
        assert 0.0 <= float(metrics["eval/episode_success"]) <= 1.0 and "eval/episode_height_rmse" in metrics
        trained = run_episodes(env.task_env, n_worlds=64, seed=1000,
                               controller=tasks.policy_controller(make_policy, params))
        untrained = run_episodes(env.task_env, n_worlds=64, seed=1000)
    rmse_trained, rmse_untrained = (np.mean(r.summary["height_rmse"]) for r in (trained, untrained))
    assert rmse_trained < 0.85 * rmse_untrained
    assert np.mean(trained.summary["success"]) > np.mean(untrained.summary["success"])


def test_missing_extras_are_named_before_any_work(monkeypatch, tmp_path):
    """Without imageio, ``evaluate(video=...)`` fails at once naming the
    ``render`` extra (no episode is run); without SB3 the adapter names ``sb3``."""
    import importlib.util

    from flapjax import evaluate as ev

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("imageio", "stable_baselines3") else real(name, *a))
    monkeypatch.setattr(ev, "_evaluate", lambda *a, **k: pytest.fail("the evaluation ran"))
    with pytest.raises(ImportError, match=r'pip install -e "\.\[render\]"'):
        ev.evaluate("near_ground", n_worlds=2, video=1, out_dir=tmp_path / "out")
    with pytest.raises(ImportError, match=r"stable_baselines3 not installed.*\.\[sb3\]"):
        tasks.sb3_vec_env("near_ground", 2)
