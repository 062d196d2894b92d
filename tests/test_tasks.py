"""Task environments: configuration, per-world randomization and key streams,
jit(vmap(step)) against a loop, reference controllers, a long large batch."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import tasks
from flapjax.evaluate import run_episodes
from flapjax.validation import ConfigError

N_SUCCESS = 32  # worlds per in-suite success check (256 in the evaluation runs)


def _leaves_equal(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# ----------------------------------------------------------------------------- configuration


def test_registry_lists_tasks_and_builds_with_overrides():
    assert tasks.names() == ["near_ground", "object_push", "wall_contact"]
    env = tasks.make("wall_contact", robot="hexa", **{"randomization.enabled": True, "noise.sensor_position_std": 0.01})
    assert env.config.robot == "hexa" and env.profile.n_rotors == 6
    assert env.config.randomization.enabled and env.config.randomization.wall_pitch == (-0.35, 0.35)
    assert env.config.noise.sensor_position_std == 0.01
    assert env.action_size == 10
    assert tasks.make("near_ground", action_mode="wrench").action_size == 6
    assert isinstance(tasks.default_config("object_push"), tasks.ObjectPushConfig)


@pytest.mark.parametrize("overrides, field", [
    ({"robot": "octo"}, "robot"),
    ({"bogus": 1}, "bogus"),
    ({"noise.sensor_position_std": -0.1}, "sensor_position_std"),
    ({"randomization.wall_pitch": (-1.0, 0.2)}, "wall_pitch"),
    ({"randomization.mass_scale": (1.2, 0.8)}, "mass_scale"),
    ({"disabled_effects": ("gravity",)}, "disabled_effects"),
    ({"substeps": 0}, "substeps"),
    ({"min_height": 0.8}, "min_height"),
])
def test_bad_configuration_names_the_field(overrides, field):
    with pytest.raises(ConfigError, match=field):
        tasks.make("near_ground", **overrides)


def test_disabled_effects_reach_the_chain_and_command_noise_follows_its_std():
    env = tasks.make("near_ground", disabled_effects=("ground_effect", "actuator"), noise=tasks.NoiseConfig.off())
    opts = env.world.options
    assert not opts.ground_effect and not opts.actuator and opts.saturation and opts.wall_effect
    assert not opts.command_noise
    assert tasks.make("near_ground").world.options.command_noise


# ----------------------------------------------------------------------------- keys and randomization


@pytest.fixture(scope="module")
def push_env():
    return tasks.make("object_push", **{"randomization.enabled": True})


def test_randomization_draws_every_listed_parameter_within_its_range(push_env):
    env = push_env
    r = env.config.randomization
    keys = jax.random.split(jax.random.key(3), 64)
    s = jax.jit(jax.vmap(env.reset))(keys)
    p, nominal = s.params, env.nominal_params
    mass = np.asarray(p.profile.mass) / float(nominal.profile.mass)
    assert r.mass_scale[0] <= mass.min() < mass.max() <= r.mass_scale[1] and mass.std() > 0.02
    thrust = np.asarray(p.profile.thrust_max) / np.asarray(nominal.profile.thrust_max)
    assert thrust.min() >= r.thrust_scale[0] and thrust.max() <= r.thrust_scale[1] and thrust.std() > 0.02
    kappa = np.asarray(p.profile.torque_coeff) / np.asarray(nominal.profile.torque_coeff)
    assert kappa.min() >= r.torque_scale[0] and kappa.max() <= r.torque_scale[1]
    c_t = np.asarray(p.chain.proximity.wall_thrust_coeff)
    assert r.wall_thrust_coeff[0] <= c_t.min() < c_t.max() <= r.wall_thrust_coeff[1]
    fr = np.asarray(p.scene.box_friction) / env.config.box_friction
    assert r.friction_scale[0] - 1e-9 <= fr.min() < fr.max() <= r.friction_scale[1] + 1e-9
    box_xy = np.asarray(s.world.data.qpos[:, 7:9])
    off = box_xy - np.array([env.config.box_x, 0.0])
    assert np.all(off >= r.object_position[0] - 1e-6) and np.all(off <= r.object_position[1] + 1e-6)
    assert off.std(axis=0).min() > 0.03
    box_yaw = np.asarray(jax.vmap(env.box_pose)(s)[1])
    assert box_yaw.min() >= r.object_yaw[0] - 1e-6 and box_yaw.max() <= r.object_yaw[1] + 1e-6 and box_yaw.std() > 0.1
    rgba = np.asarray(s.task.common.rgba)
    assert rgba.std(axis=0)[:, :3].min() > 0.05  # every geom's colour varies
    np.testing.assert_array_equal(rgba[:, :, 3], np.broadcast_to(env.nominal_rgba[:, 3], rgba[:, :, 3].shape))
    # The colours are written into the world's MJX model.
    one = jax.tree.map(lambda x: x[5], s)
    np.testing.assert_allclose(np.asarray(env.world_model(one).geom_rgba), rgba[5], rtol=1e-6)


def test_wall_pitch_is_randomized_and_nominal_worlds_are_nominal():
    env = tasks.make("wall_contact", **{"randomization.enabled": True})
    s = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 64))
    pitch = np.asarray(s.params.scene.wall_pitch)
    assert -0.35 <= pitch.min() < -0.2 and 0.2 < pitch.max() <= 0.35
    # The end-effector starts on the wall normal through the contact point.
    ee0 = np.asarray(s.task.ee_start - s.task.contact_point)
    n = np.asarray(s.task.normal)
    assert np.all(np.einsum("ij,ij->i", ee0, n) > 0.2)
    nominal = tasks.make("wall_contact")
    s0 = jax.vmap(nominal.reset)(jax.random.split(jax.random.key(0), 4))
    np.testing.assert_array_equal(np.asarray(s0.params.scene.wall_pitch), 0.0)
    np.testing.assert_array_equal(np.asarray(s0.params.profile.mass), float(nominal.profile.mass))


def test_same_key_same_world_and_noise_key_leaves_the_world_unchanged(push_env):
    env = push_env
    reset = jax.jit(env.reset)
    k = jax.random.key(7)
    _leaves_equal(reset(k), reset(k))
    a = reset(k, jax.random.key(100))
    b = reset(k, jax.random.key(200))
    # Same randomized world: parameters, colours, goal, object pose, start.
    _leaves_equal(a.params, b.params)
    _leaves_equal((a.task.goal, a.task.box_start, a.task.common.rgba, a.task.common.start),
                  (b.task.goal, b.task.box_start, b.task.common.rgba, b.task.common.start))
    np.testing.assert_array_equal(np.asarray(a.world.data.qpos), np.asarray(b.world.data.qpos))
    # ... but different noise streams (and a different noisy observation).
    assert not np.array_equal(a.world.noise_key, b.world.noise_key)
    assert not np.array_equal(np.asarray(a.obs), np.asarray(b.obs))
    # A different world key changes the world.
    c = reset(jax.random.key(8), jax.random.key(100))
    assert not np.array_equal(np.asarray(a.params.profile.mass), np.asarray(c.params.profile.mass))


# ----------------------------------------------------------------------------- stepping


def test_jit_vmap_step_equals_a_loop_of_steps():
    # The task logic (randomization, key streams, noise, controller, reward)
    # does not depend on the physics backend: the contact-free rigid body
    # compiles in seconds where the MJX step takes tens of seconds. Batched
    # MJX worlds are checked against single ones in test_sim_multirotor.
    env = tasks.make("near_ground", substeps=2, backend="rigid", **{"randomization.enabled": True})
    n = 3
    keys = jax.random.split(jax.random.key(1), n)
    step1 = jax.jit(lambda s: env.step(s, env.scripted_action(s)))
    stepn = jax.jit(jax.vmap(lambda s: env.step(s, env.scripted_action(s))))
    batch = jax.jit(jax.vmap(env.reset))(keys)  # one program, not op by op
    reset = jax.jit(env.reset)
    singles = [reset(k) for k in keys]
    for _ in range(3):
        batch = stepn(batch)
        singles = [step1(s) for s in singles]
    for i, s in enumerate(singles):
        b = jax.tree.map(lambda x: x[i], batch)
        # float32 physics: batching changes summation order, hence float32-level tolerances.
        np.testing.assert_allclose(np.asarray(b.world.data.qpos), np.asarray(s.world.data.qpos), atol=2e-4)
        np.testing.assert_allclose(np.asarray(b.obs), np.asarray(s.obs), atol=2e-3)
        np.testing.assert_allclose(float(b.reward), float(s.reward), atol=1e-3)
        assert int(b.info["step"]) == int(s.info["step"]) == 3
    # The worlds differ (randomized) and the step did something: the
    # controllers' integrators and the clocks moved.
    assert np.ptp(np.asarray(batch.params.profile.mass)) > 0.0
    assert np.abs(np.asarray(batch.world.controller.integral)).max() > 0.0
    assert int(batch.world.step[0]) == 3 * env.config.substeps


# ----------------------------------------------------------------------------- reference controllers


@pytest.mark.parametrize("task", ["near_ground", "wall_contact",
                                  pytest.param("object_push", marks=pytest.mark.slow)])
def test_reference_controller_succeeds_in_nominal_worlds(task):
    env = tasks.make(task)
    # Box contacts need more solver iterations: fewer worlds keep object_push affordable here.
    res = run_episodes(env, n_worlds=N_SUCCESS // 2 if task == "object_push" else N_SUCCESS, seed=0)
    s = res.summary
    assert not s["diverged"].any()
    assert s["success"].mean() >= 0.9, {k: v.mean() for k, v in s.items()}
    # The success criterion is the task's own threshold on its metric.
    if task == "near_ground":
        assert np.all(s["height_rmse"][s["success"]] <= env.config.success_rmse)
        assert s["min_ee_height"].min() < 0.1  # it really went near the ground
    elif task == "wall_contact":
        assert np.median(s["contact_fraction"]) > 0.95
        hold = res.trace["force_command"][:, 0] == env.config.normal_force
        assert abs(np.median(res.trace["normal_force"][hold]) - env.config.normal_force) < 0.3
    else:
        assert np.median(s["box_travel"]) > 0.3 and np.median(s["final_error"]) < env.config.success_distance
    assert 0.0 <= s["saturation_fraction"].max() <= 1.0


@pytest.mark.slow
def test_randomized_worlds_1000_steps_stay_finite():
    # Worlds are independent: a small batch checks the long flight; the
    # 1024-world batch runs in benchmarks/long_flights.py.
    n = N_SUCCESS
    env = tasks.make("near_ground", substeps=1, episode_length=1000, **{"randomization.enabled": True})
    res = run_episodes(env, n_worlds=n, seed=0)
    h = res.trace["ee_height"]
    assert h.shape == (1000, n)
    assert np.all(np.isfinite(h)) and not res.summary["diverged"].any()
    assert h.min() > 0.0 and h.max() < 1.0


def test_wrench_action_drives_the_chain_directly():
    """action_mode="wrench": the action is the desired body wrench; a
    weight-compensating wrench keeps the robot near its start, a weaker one
    lets it sink."""
    env = tasks.make("near_ground", action_mode="wrench", substeps=1, **{"randomization.enabled": False})
    state = env.reset(jax.random.key(0))
    mass = float(state.params.profile.mass)
    run = jax.jit(lambda s, w: jax.lax.fori_loop(0, 50, lambda i, s: env.step(s, w), s))
    hover = run(state, jnp.array([0.0, 0.0, mass * 9.81, 0.0, 0.0, 0.0]))
    sink = run(state, jnp.array([0.0, 0.0, 0.5 * mass * 9.81, 0.0, 0.0, 0.0]))
    z0 = float(state.world.data.qpos[2])
    assert abs(float(hover.world.data.qpos[2]) - z0) < 0.01
    assert float(sink.world.data.qpos[2]) < z0 - 0.01


# ----------------------------------------------------------------------------- robot profile files


EXAMPLE_PROFILE = "examples/profiles/quad_x_long_arm.toml"


def test_robot_profile_file_builds_the_task_with_its_airframe():
    """The shipped example profile: tasks take the file like a preset, and the
    world carries its mass and end-effector."""
    env = tasks.make("near_ground", robot=EXAMPLE_PROFILE)
    assert env.profile.name == "quad_x_long_arm" and env.config.robot_is_file
    assert float(env.profile.mass) == pytest.approx(1.7)
    np.testing.assert_allclose(env.nominal_params.profile.ee_position, [0.36, 0.0, 0.0])
    assert env.world.profile.n_rotors == 4


def test_bad_robot_profile_files_fail_at_configuration(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        tasks.make("near_ground", robot=str(tmp_path / "missing.toml"))
    bad = tmp_path / "bent.toml"
    text = open(EXAMPLE_PROFILE).read().replace("axis = [0.0, 0.0, 1.0]", "axis = [0.0, 0.5, 1.0]")
    bad.write_text(text)
    with pytest.raises(ConfigError, match=r"bent.toml.rotors\[0\].axis: must be a unit vector"):
        tasks.make("near_ground", robot=str(bad))
    with pytest.raises(ConfigError, match="robot"):
        tasks.make("near_ground", robot="octo")


def test_near_ground_reference_leaves_from_the_start_height():
    """The reference fades a randomized start offset out over the start
    window (so the metric scores tracking, not settling), and is the nominal
    profile from then on or for a nominal start."""
    env = tasks.make("near_ground", backend="rigid")
    c = env.config
    z0 = c.cruise_height - 0.04
    ref = lambda t, z=None: [float(x) for x in env.reference(jnp.asarray(t), z)]  # noqa: E731
    assert ref(0.0, z0)[:2] == pytest.approx([z0, 0.0])
    for t in (c.start_time, c.start_time + 0.3, c.start_time + c.descent_time + 0.2):
        assert ref(t, z0) == pytest.approx(ref(t), abs=1e-12)
    assert ref(0.2, c.cruise_height) == pytest.approx(ref(0.2), abs=1e-12)
    # Smooth: the rate is the derivative of the height.
    h = 1e-4
    for t in (0.1, 0.25, 0.4):
        assert ref(t, z0)[1] == pytest.approx((ref(t + h, z0)[0] - ref(t - h, z0)[0]) / (2 * h), rel=1e-5)
        assert ref(t, z0)[2] == pytest.approx((ref(t + h, z0)[1] - ref(t - h, z0)[1]) / (2 * h), rel=1e-4)


@pytest.mark.parametrize("task", ["near_ground", "object_push", "wall_contact"])
def test_step_returns_the_state_types_reset_made_so_jit_compiles_once(task):
    """Every leaf of the state keeps its shape, dtype and weak type through a
    step: otherwise ``jit(env.step)`` compiles a second program at the second
    step (a weakly typed ``inf`` start of a running minimum did)."""
    env = tasks.make(task, episode_length=4, substeps=1)
    s0 = jax.eval_shape(env.reset, jax.random.key(0))
    s1 = jax.eval_shape(env.step, s0, jnp.zeros(env.action_size, jnp.float32))

    def signature(state):
        return [(jax.tree_util.keystr(path), leaf.shape, leaf.dtype, leaf.weak_type)
                for path, leaf in jax.tree_util.tree_leaves_with_path(state)]

    assert jax.tree.structure(s0) == jax.tree.structure(s1)
    changed = [(a, b) for a, b in zip(signature(s0), signature(s1)) if a != b]
    assert not changed, changed


def test_object_push_observes_the_box_through_the_sensor_noise(push_env):
    """The box entries of the observation are the exact pose plus the
    sensor's position noise and heading noise, drawn after the robot's 12
    draws of the step; without noise they are the exact pose."""
    from flapjax import rng
    from flapjax.tasks.config import NoiseConfig

    env = push_env
    state = env.reset(jax.random.key(4))
    box, yaw = env.box_pose(state)
    seen, seen_yaw = env.observed_box_pose(state)
    sensor = state.params.noise.sensor
    z = rng.normals(state.task.common.obs_key, state.info["step"], 16, box.dtype)
    np.testing.assert_allclose(seen, box + sensor.position_std * z[12:15], rtol=1e-12)
    np.testing.assert_allclose(seen_yaw, yaw + sensor.attitude_std[2] * z[15], rtol=1e-12)
    assert float(jnp.min(sensor.position_std)) > 0 and float(jnp.linalg.norm(seen - box)) > 1e-5
    obs = np.asarray(state.obs, np.float64)
    np.testing.assert_allclose(obs[19:22], np.asarray(seen) - obs[0:3], atol=1e-6)
    np.testing.assert_allclose(obs[22:24], [np.cos(seen_yaw), np.sin(seen_yaw)], atol=1e-6)
    np.testing.assert_allclose(obs[24:26], np.asarray(state.task.goal - seen[:2]), atol=1e-6)

    quiet = tasks.make("object_push", noise=NoiseConfig.off(), **{"randomization.enabled": True})
    s = quiet.reset(jax.random.key(4))
    np.testing.assert_array_equal(quiet.observed_box_pose(s)[0], quiet.box_pose(s)[0])
