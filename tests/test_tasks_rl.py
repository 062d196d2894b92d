"""RL adapters: Brax PPO trains on a task unchanged, Gymnasium's checks pass
on the single and the vector environment, residual actions and the rigid
backend behave as the task contract says."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import tasks
from flapjax.tasks import adapters
from flapjax.validation import ConfigError

NOISE_OFF = dict(sensor_position_std=0.0, sensor_velocity_std=0.0, sensor_attitude_std=0.0, sensor_rate_std=0.0,
                 command_thrust_std=0.0)
SMALL = dict(episode_length=12, substeps=1, noise=NOISE_OFF)


def test_brax_ppo_two_iterations_without_touching_jax():
    """``ppo.train`` accepts the adapter unchanged and runs two training
    iterations with the fresh-world auto-reset; the device_put_replicated
    shim lives in Brax's modules only."""
    import jax as jax_module
    from brax.envs.base import Env, State
    from brax.training.agents.ppo import networks as ppo_networks
    from brax.training.agents.ppo import train as ppo

    from flapjax.tasks import rl_brax

    env = tasks.brax_env("near_ground", **SMALL)
    assert isinstance(env, Env) and env.backend == "rigid"
    assert (env.observation_size, env.action_size) == (22, 10)
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    assert isinstance(state, State)
    assert set(state.info) >= {"truncation", "terminated"} and state.obs.shape == (22,)
    # JAX itself is untouched; only Brax's trainer sees the shim.
    assert not hasattr(jax_module, "device_put_replicated")
    assert ppo.jax is not jax_module and ppo.jax.device_put_replicated is rl_brax.device_put_replicated
    rep = rl_brax.device_put_replicated({"a": jnp.arange(3.0)}, jax.local_devices()[:1])
    np.testing.assert_array_equal(rep["a"], np.arange(3.0)[None])

    steps = []
    net = functools.partial(ppo_networks.make_ppo_networks, policy_hidden_layer_sizes=(8,),
                            value_hidden_layer_sizes=(8,))
    # 8 envs x 4 unroll x 2 minibatches = 64 env steps per iteration; 128 -> two iterations.
    # Brax's PPO mixes its float32 networks with default-float counters: it runs with x64 off.
    with jax.enable_x64(False):
        make_policy, params, metrics = ppo.train(
            environment=env, num_timesteps=128, episode_length=env.episode_length, num_envs=8, batch_size=8,
            num_minibatches=2, unroll_length=4, num_updates_per_batch=1, num_evals=1, run_evals=False, seed=0,
            network_factory=net, progress_fn=lambda step, m: steps.append(step),
            wrap_env_fn=rl_brax.wrap_for_brax_training)
    assert steps == [128]
    assert np.isfinite(float(metrics["training/policy_loss"]))
    policy = make_policy(params, deterministic=True)
    action, _ = policy(state.obs[None], jax.random.PRNGKey(1))
    assert action.shape == (1, 10) and bool(jnp.all(jnp.abs(action) <= 1.0))


def test_brax_truncation_apart_from_termination():
    """The time limit is a truncation, not a failure: the unwrapped step
    reports it in ``info["truncation"]`` with ``done`` 0, and through Brax's
    training wrappers (as PPO sees it) ``done`` and ``truncation`` are both 1
    at the limit, so the value is bootstrapped there."""
    from flapjax.tasks import rl_brax

    env = tasks.brax_env("near_ground", **SMALL)

    @jax.jit
    def episode(key):
        s0 = env.reset(key)
        return s0, jax.lax.scan(lambda s, _: (env.step(s, jnp.zeros(10)), s.done), s0, None, length=12)

    s0, (last, done_before) = episode(jax.random.PRNGKey(1))
    assert float(s0.done) == 0.0 and float(s0.info["truncation"]) == 0.0
    assert not np.any(np.asarray(done_before))
    assert float(last.done) == 0.0 and float(last.info["truncation"]) == 1.0
    assert float(last.info["terminated"]) == 0.0 and float(last.reward) > 0.5

    wrapped = rl_brax.wrap_for_brax_training(env)

    @jax.jit
    def wrapped_episode(keys):
        s0 = wrapped.reset(keys)
        step = lambda s, _: (wrapped.step(s, jnp.zeros((2, 10))), (s.done, s.info["truncation"]))  # noqa: E731
        return jax.lax.scan(step, s0, None, length=12)

    final, (done_before, trunc_before) = wrapped_episode(jax.random.split(jax.random.PRNGKey(2), 2))
    assert not np.any(np.asarray(done_before)) and not np.any(np.asarray(trunc_before))
    np.testing.assert_array_equal(final.done, [1.0, 1.0])
    np.testing.assert_array_equal(final.info["truncation"], [1.0, 1.0])
    np.testing.assert_array_equal(final.info["terminated"], [0.0, 0.0])


def test_brax_fresh_world_auto_reset_draws_a_new_world_each_episode():
    """Through ``wrap_for_brax_training`` a finished slot restarts in a new
    randomized world: exactly ``env.reset`` with the second half of the
    slot's split reset key (mass and observation equal it), while Brax's
    own auto-reset (``fresh_worlds=False``) replays the first world."""
    from flapjax.tasks import rl_brax

    env = tasks.brax_env("near_ground", **{**SMALL, "randomization.enabled": True})
    keys = jax.random.split(jax.random.PRNGKey(3), 2)

    def run(wrapped):
        @jax.jit
        def go(keys):
            s0 = wrapped.reset(keys)
            step = lambda s, _: (wrapped.step(s, jnp.zeros((2, 10))),  # noqa: E731
                                 (s.pipeline_state.params.profile.mass, s.info["steps"], s.obs))
            last, trace = jax.lax.scan(step, s0, None, length=8)
            return s0, last, trace
        return go(keys)

    fresh = rl_brax.wrap_for_brax_training(env, episode_length=3)
    assert isinstance(fresh, rl_brax.FreshWorldAutoReset)
    s0, last, (mass, steps, obs) = run(fresh)
    mass, steps = np.asarray(mass), np.asarray(steps)
    # trace[k] is the state before step k; the step that finishes an episode
    # (steps reaches 3) already holds the next episode's world
    np.testing.assert_array_equal(steps[:, 0], [0, 1, 2, 3, 1, 2, 3, 1])
    first, second, third = mass[0], mass[3], mass[6]
    np.testing.assert_array_equal(mass[:3], np.broadcast_to(first, (3, 2)))
    np.testing.assert_array_equal(mass[3:6], np.broadcast_to(second, (3, 2)))
    assert np.all(np.abs(second - first) > 1e-6) and np.all(np.abs(third - second) > 1e-6)
    # the restart is env.reset with the split key of the step that finished
    k = keys
    for _ in range(3):
        k_next = jax.vmap(jax.random.split)(k)
        reset_keys, k = k_next[:, 1], k_next[:, 0]
    expected = jax.jit(jax.vmap(env.reset))(reset_keys)
    np.testing.assert_allclose(second, expected.pipeline_state.params.profile.mass, rtol=0, atol=0)
    np.testing.assert_allclose(np.asarray(obs)[3], expected.obs, rtol=1e-6, atol=1e-9)

    replay = rl_brax.wrap_for_brax_training(env, episode_length=3, fresh_worlds=False)
    _, _, (mass_replay, _, _) = run(replay)
    np.testing.assert_array_equal(np.asarray(mass_replay)[3], np.asarray(mass_replay)[0])
    with pytest.raises(ValueError, match="episode_length"):
        rl_brax.wrap_for_brax_training(env, episode_length=0)


def test_gym_env_passes_gymnasium_checker():
    from gymnasium.utils.env_checker import check_env

    env = tasks.gym_env("near_ground", **SMALL)
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=3)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)
    total, truncated = 0.0, False
    for _ in range(12):
        obs, reward, terminated, truncated, info = env.step(np.zeros(10, np.float32))
        total += reward
        assert not terminated
    assert truncated and total > 0.5 * 12  # the reference controller (zero residual) tracks
    assert "height_error" in info
    with pytest.raises(ConfigError, match=r"action: expected shape \(10,\), got shape \(3,\)"):
        env.step(np.zeros(3, np.float32))


def test_gym_vector_env_spaces_autoreset_and_determinism():
    """Gymnasium has no checker for vector environments: its passive space and
    observation checks, plus seeding and NEXT_STEP auto-reset."""
    from gymnasium.utils.passive_env_checker import check_action_space, check_obs, check_observation_space
    from gymnasium.vector import AutoresetMode, VectorEnv

    venv = tasks.gym_vector_env("near_ground", 2, **SMALL)
    assert isinstance(venv, VectorEnv) and venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    check_observation_space(venv.single_observation_space)
    check_action_space(venv.single_action_space)
    obs, _ = venv.reset(seed=5)
    check_obs(obs, venv.observation_space, "reset")
    again, _ = venv.reset(seed=5)
    np.testing.assert_array_equal(obs, again)
    single = tasks.gym_env("near_ground", **SMALL)
    for _ in range(12):
        obs, reward, terminated, truncated, _ = venv.step(venv.action_space.sample())
        check_obs(obs, venv.observation_space, "step")
        assert reward.shape == (2,) and terminated.dtype == bool
    assert truncated.all() and not terminated.any()
    obs, reward, terminated, truncated, _ = venv.step(np.zeros((2, 10), np.float32))
    assert (reward == 0).all() and not (terminated | truncated).any()
    np.testing.assert_allclose(obs[:, -4], 0.0)  # phase of a fresh episode
    assert single.observation_space == venv.single_observation_space
    with pytest.raises(ConfigError, match=r"actions: expected shape \(2, 10\) \(num_envs, action_size\), got shape \(20,\)"):
        venv.step(np.zeros(20, np.float32))
    # a second adapter of the same task and configuration reuses the compiled functions
    other = tasks.gym_vector_env("near_ground", 3, **SMALL)
    assert (other._reset_all, other._step_all) == (venv._reset_all, venv._step_all)
    assert tasks.gym_env("near_ground", **SMALL)._step is single._step
    assert tasks.gym_env("near_ground", **{**SMALL, "episode_length": 13})._step is not single._step


def test_residual_zero_equals_reference_setpoint():
    """A residual of zeros flies exactly the reference controller's setpoint."""
    res = tasks.make("near_ground", action_mode="residual", backend="rigid", **SMALL)
    ref = tasks.make("near_ground", backend="rigid", **SMALL)
    s_res = s_ref = res.reset(jax.random.key(2))
    s_res = res.step(s_res, jnp.zeros(10))
    s_ref = ref.step(s_ref, ref.scripted_action(s_ref))
    np.testing.assert_array_equal(s_res.obs, s_ref.obs)
    one = res.residual_to_setpoint(s_res, jnp.ones(10) * 2.0)  # clipped to 1
    np.testing.assert_allclose(one - ref.scripted_action(s_res), res.residual_scale(), rtol=1e-6)


def test_rigid_backend_touch_ends_episode_as_failure():
    """Commanding the end-effector below the ground: the rigid world touches,
    the episode ends, reward stops and the summary counts a failure."""
    env = tasks.make("near_ground", backend="rigid", cruise_height=0.1, min_height=0.05, episode_length=50,
                     noise=NOISE_OFF)
    state = env.reset(jax.random.key(0))
    step = jax.jit(lambda s: env.step(s, env.scripted_action(s).at[2].set(-0.5)))
    for _ in range(50):
        state = step(state)
        if bool(state.done):
            break
    assert bool(state.info["touched"]) and float(state.done) == 1.0 and int(state.info["step"]) < 50
    assert float(state.reward) == 0.0
    summary = env.summarize(state)
    assert bool(summary["touched"]) and not bool(summary["success"])
    assert bool(adapters.terminated(env, state))


def test_contact_tasks_refuse_rigid_and_actions_map_to_bounds():
    with pytest.raises(ConfigError, match="needs contacts"):
        tasks.make("wall_contact", backend="rigid")
    with pytest.raises(ConfigError, match="backend"):
        tasks.make("near_ground", backend="warp")
    env = tasks.make("near_ground", action_mode="wrench", backend="rigid")
    low, high = adapters.action_bounds(env)
    np.testing.assert_allclose(adapters.to_task_action(env, -np.ones(6)), low)
    np.testing.assert_allclose(adapters.to_task_action(env, np.ones(6)), high)
    # Inside a jitted step too (the adapters jit it), and a = 0 asks half the summed maximum thrust.
    mapped = jax.jit(lambda a: adapters.to_task_action(env, a))(jnp.zeros(6))
    thrust = float(np.sum(np.asarray(env.profile.thrust_max)))
    assert low[2] == 0.0 and high[2] == pytest.approx(thrust)
    np.testing.assert_allclose(mapped[:3], [0.0, 0.0, 0.5 * thrust], rtol=1e-6, atol=1e-6)
