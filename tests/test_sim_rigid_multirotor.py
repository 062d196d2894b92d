"""The multirotor on the rigid backend against MJX: contact-free flights near
a wall with every effect of the chain on."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import ConfigError, rotor
from flapjax import scene as sc
from flapjax.control.wrench import Reference
from flapjax.noise import CommandNoise, NoiseParams, SensorNoise
from flapjax.sim import multirotor as mr

YAW = np.pi / 2
STEPS = 1000  # 2 s at dt = 2 ms


def _every_effect(world):
    wind = rotor.WindParams(constant=(0.3, 0.2, 0.0), gust_amplitude=[[0.8, 0.0, -0.3]], gust_start=[0.8],
                            gust_duration=[0.6], turbulence_std=(0.3, 0.3, 0.2), turbulence_time=(0.5, 0.5, 0.5))
    noise = NoiseParams(SensorNoise((0.002,) * 3, (0.01,) * 3, (0.003,) * 3, (0.01,) * 3), CommandNoise(0.05))
    return eqx.tree_at(lambda p: (p.chain, p.noise), world.default_params(), (rotor.ChainParams(wind=wind), noise))


def _fly(backend, dtype, preset="quad_x", n_steps=STEPS):
    prof = rotor.profiles.preset(preset)
    world = mr.MultirotorWorld(prof, options=rotor.ChainOptions(command_noise=True), backend=backend, dtype=dtype)
    base = _every_effect(world)
    params = [world.randomize(base, jax.random.key(k), sc.SceneRanges(wall_pitch=(-0.3, 0.3))) for k in (1, 2)]
    starts = [sc.hover_position(p.scene, prof, ground_clearance=0.10, wall_clearance=0.15, yaw=YAW) for p in params]
    # step the reference 5 cm up and toward the wall half way: the flight is not a still hover
    refs = [Reference.hover(x + jnp.array([0.03, 0.0, 0.05]), YAW) for x in starts]
    stack = lambda xs: jax.tree.map(lambda *a: jnp.stack(a), *xs)  # noqa: E731
    params, refs = stack(params), stack(refs)
    states = world.batched_reset(params, jnp.stack([jax.random.key(5), jax.random.key(6)]), jnp.stack(starts),
                                 refs.yaw)
    return world.batched_rollout(params, states, refs, n_steps)


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-9), (jnp.float32, 2e-4)], ids=["float64", "float32"])
def test_rigid_backend_matches_mjx_near_a_wall_with_every_effect_on(dtype, tol):
    """2 s, quad_x, 10 cm above the ground and 15 cm from a pitched wall,
    ground and wall effects, actuator lag, drag, wind, gusts, turbulence,
    sensor and command noise: trajectories agree to ``tol`` [m, rad]."""
    _, ref = _fly("mjx", dtype)
    _, fast = _fly("rigid", dtype)
    assert not bool(ref.touching.any()) and not bool(fast.touching.any())
    assert not bool(ref.diverged.any())
    moved = np.abs(np.asarray(ref.position[:, -1] - ref.position[:, 0])).max()
    assert moved > 0.03
    assert float(jnp.abs(ref.wall_factor - 1).max()) > 1e-3  # the wall effect is really active
    np.testing.assert_allclose(fast.position, ref.position, rtol=0, atol=tol)
    np.testing.assert_allclose(fast.quat, ref.quat, rtol=0, atol=tol)
    np.testing.assert_allclose(fast.thrust_realized, ref.thrust_realized, rtol=0, atol=50 * tol)


def test_rigid_backend_flags_a_world_that_touches_the_wall():
    prof = rotor.profiles.quad_x()
    world = mr.MultirotorWorld(prof, backend="rigid")
    params = world.default_params()
    start = jnp.array([0.3, 0.0, 0.5])  # end-effector 0.4 m in front of the wall at x = 1
    into_wall = Reference.hover(start + jnp.array([0.5, 0.0, 0.0]), 0.0)
    state = world.reset(params, jax.random.key(0), start, 0.0)
    _, traj = jax.jit(lambda s: world.rollout(params, s, into_wall, 400))(state)
    assert not bool(traj.touching[0])
    assert bool(traj.touching.any())
    first = int(jnp.argmax(traj.touching))
    n, c = sc.wall_plane(params.scene)
    ee = traj.ee_position[first]
    assert float(jnp.dot(n, ee) - c) <= float(prof.ee_radius) + 0.01  # the end-effector reached the wall


def test_rigid_rollout_gradient_matches_finite_differences():
    prof = rotor.profiles.quad_x()
    world = mr.MultirotorWorld(prof, backend="rigid")
    params = world.default_params()
    start = jnp.array([0.0, 0.0, 0.5])
    state = world.reset(params, jax.random.key(0), start, 0.0)

    @jax.jit
    def height_after(mass):
        p = eqx.tree_at(lambda p: p.profile.mass, params, mass)
        final, _ = world.rollout(p, state, Reference.hover(start, 0.0), 150)
        return final.data.position[2]

    m0 = params.profile.mass
    g = float(jax.grad(height_after)(m0))
    h = 1e-4
    fd = (float(height_after(m0 + h)) - float(height_after(m0 - h))) / (2 * h)
    assert np.isfinite(g) and g < 0  # heavier sinks
    assert g == pytest.approx(fd, rel=1e-4)


def test_rigid_backend_refuses_a_box():
    with pytest.raises(ConfigError, match="with_box"):
        mr.MultirotorWorld(rotor.profiles.quad_x(), backend="rigid", with_box=True)


def test_sensor_noise_switch():
    """``sensor_noise=False`` is the zero-std world without the draws; with
    std > 0 the switch matters; command-noise lanes do not depend on it."""
    prof = rotor.profiles.quad_x()
    opts = rotor.ChainOptions(command_noise=True)
    on = mr.MultirotorWorld(prof, options=opts, backend="rigid")
    off = mr.MultirotorWorld(prof, options=opts, backend="rigid", sensor_noise=False)
    params = eqx.tree_at(lambda p: p.noise, on.default_params(), NoiseParams(command=CommandNoise(0.05)))
    start, ref = jnp.array([0.0, 0.0, 0.5]), Reference.hover(jnp.array([0.02, 0.0, 0.52]))

    def fly(world, p):
        s = world.reset(p, jax.random.key(3), start)
        return jax.jit(lambda s: world.rollout(p, s, ref, 200))(s)[1]

    a, b = fly(on, params), fly(off, params)
    np.testing.assert_allclose(a.position, b.position, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(b.sensor_position_noise, 0.0)
    noisy = eqx.tree_at(lambda p: p.noise.sensor, params, SensorNoise(position_std=(0.01,) * 3))
    with pytest.raises(ConfigError, match="sensor_noise=False"):
        off.reset(noisy, jax.random.key(3), start)
    c = fly(on, noisy)
    assert float(jnp.abs(c.position - a.position).max()) > 1e-4
    assert float(jnp.std(c.sensor_position_noise)) == pytest.approx(0.01, rel=0.2)
    ka, kb = jnp.array([1, 2], jnp.uint32), jnp.array([3, 4], jnp.uint32)
    np.testing.assert_array_equal(on._draws(ka, kb, 7, jnp.float64)[12:19], off._draws(ka, kb, 7, jnp.float64)[12:19])


def test_prepared_once_is_the_same_as_params_every_step():
    """``prepare`` builds what a step derives from the parameters once; a
    step given plain parameters prepares them on the spot, with the same
    result (to round-off: eager and jitted SVDs differ in the last bit), and
    a rollout accepts either."""
    prof = rotor.profiles.hexa_tilted()
    world = mr.MultirotorWorld(prof, options=rotor.ChainOptions(command_noise=True), backend="rigid")
    params = _every_effect(world)
    start = sc.hover_position(params.scene, prof, ground_clearance=0.10, wall_clearance=0.15, yaw=YAW)
    ref = Reference.hover(start + jnp.array([0.02, 0.0, 0.03]), YAW)
    state = world.reset(params, jax.random.key(4), start, YAW)
    prepared = world.prepare(params)
    assert isinstance(prepared, mr.Prepared)
    np.testing.assert_array_equal(prepared.allocation_inverse,
                                  rotor.allocation_inverse(prof, weights=params.chain.allocation_weights))
    a, info_a = jax.jit(lambda s: world.step(prepared, s, ref))(state)
    b, info_b = jax.jit(lambda s: world.step(params, s, ref))(state)
    for x, y in zip(jax.tree.leaves((a, info_a)), jax.tree.leaves((b, info_b))):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    fa, ta = jax.jit(lambda s: world.rollout(prepared, s, ref, 20))(state)
    fb, tb = jax.jit(lambda s: world.rollout(params, s, ref, 20))(state)
    np.testing.assert_allclose(ta.position, tb.position, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fa.data.qpos, fb.data.qpos, rtol=0, atol=1e-12)
    assert float(jnp.abs(ta.position[-1] - ta.position[0]).max()) > 1e-4  # it flew


def test_controller_assumes_the_nominal_airframe_unless_given_the_true_one():
    """A world 30 % heavier than nominal: the controller's weight
    feed-forward uses ``controller_profile`` (the nominal airframe by
    default), so the robot sags until the integral catches up; told the true
    airframe it holds its height from the start."""
    world = mr.MultirotorWorld("quad_x", backend="rigid", sensor_noise=False)
    nominal = world.default_params()
    assert nominal.controller_profile is nominal.profile
    heavy = eqx.tree_at(lambda q: q.profile.mass, nominal, nominal.profile.mass * 1.3)
    privileged = eqx.tree_at(lambda q: q.controller_profile, heavy, heavy.profile)
    start = jnp.array([0.0, 0.0, 1.0])
    run = jax.jit(lambda prm: world.rollout(prm, world.reset(prm, jax.random.key(0), start), Reference.hover(start),
                                            150)[1].position[:, 2] - start[2])
    sag_nominal, sag_heavy, sag_privileged = (float(jnp.min(run(p))) for p in (nominal, heavy, privileged))
    assert abs(sag_nominal) < 1e-3 and abs(sag_privileged) < 1e-3
    assert sag_heavy < -0.03  # 0.3 s with 30 % of the weight unannounced


def test_chain_sees_the_body_frame_velocity():
    """The drag and the air velocity act on ``R^T v``: the step hands the
    chain the world velocity rotated into the body frame (a yawed, rolled
    body; ``R v`` or ``v`` itself would differ)."""
    from types import SimpleNamespace

    from flapjax.math import quat_to_mat
    from flapjax.sim.multirotor import step as mstep

    q = jnp.array([np.cos(0.6), 0.3 * np.sin(0.6), 0.2 * np.sin(0.6), np.sqrt(0.87) * np.sin(0.6)])
    rot = quat_to_mat(q)
    v = jnp.array([1.0, -2.0, 0.5])
    body = SimpleNamespace(rotation=rot, velocity=v)
    inputs = mstep.chain_input(None, None, None, None, body, jnp.asarray(0.7), (None, None, jnp.zeros(3)))
    np.testing.assert_allclose(inputs.motion.velocity_body, np.asarray(rot).T @ np.asarray(v), rtol=1e-12)
    np.testing.assert_allclose(inputs.motion.rotation, rot, rtol=0)
    assert float(inputs.motion.time) == 0.7 and inputs.command_noise is None
    assert np.linalg.norm(np.asarray(rot) @ np.asarray(v) - np.asarray(rot).T @ np.asarray(v)) > 0.5
