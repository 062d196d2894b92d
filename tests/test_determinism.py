"""Determinism: same keys, same bits; independent streams; float32 vs float64."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax import rotor
from flapjax import scene as sc
from flapjax.control.wrench import Reference
from flapjax.noise import NoiseParams
from flapjax.sim import multirotor as mr
from tests.test_sim_rigid_multirotor import _every_effect

STEPS = 500  # 1 s


def _fly(dtype, world_key=5, scene_key=1, stochastic=True):
    prof = rotor.profiles.hexa_tilted()
    options = rotor.ChainOptions(command_noise=stochastic, turbulence=stochastic)
    world = mr.MultirotorWorld(prof, options=options, backend="rigid", dtype=dtype)
    params = _every_effect(world)
    if not stochastic:  # random draws differ between float32 and float64 by design
        params = eqx.tree_at(lambda p: p.noise, params, NoiseParams())
    params = world.randomize(params, jax.random.key(scene_key), sc.SceneRanges(wall_pitch=(-0.3, 0.3)))
    start = jnp.array([0.2, 0.0, 0.5], dtype=dtype)
    state = world.reset(params, jax.random.key(world_key), start, 0.3)
    run = jax.jit(lambda s: world.rollout(params, s, Reference.hover(start + 0.05, 0.3), STEPS))
    return params, run(state)[1]


def test_same_keys_give_bit_identical_rollouts_across_compilations():
    _, a = _fly(jnp.float64)
    jax.clear_caches()  # recompile from scratch
    _, b = _fly(jnp.float64)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_noise_key_changes_noise_not_scene_and_scene_key_changes_scene_not_noise():
    p_a, a = _fly(jnp.float64, world_key=5, scene_key=1)
    p_b, b = _fly(jnp.float64, world_key=6, scene_key=1)
    p_c, c = _fly(jnp.float64, world_key=5, scene_key=2)
    assert float(p_a.scene.wall_pitch) == float(p_b.scene.wall_pitch)  # noise key: same scene
    assert not np.array_equal(a.sensor_position_noise, b.sensor_position_noise)
    assert float(p_a.scene.wall_pitch) != float(p_c.scene.wall_pitch)  # scene key: same noise draws
    np.testing.assert_array_equal(a.sensor_position_noise, c.sensor_position_noise)


def test_float32_and_float64_rollouts_agree_within_documented_tolerance():
    """1 s of flight near a pitched wall with ground and wall effects, actuator,
    drag, wind and a gust (random streams off: float32 and float64 draw
    different samples by design): float32 tracks float64 to 1e-5 m in position
    and 1e-6 in the attitude quaternion (measured 7e-7 m, 5e-8). The float32 run uses JAX's default
    mode (x64 off), so every operation runs in float32."""
    with jax.enable_x64(False):
        _, lo = _fly(jnp.float32, stochastic=False)
        lo = jax.tree.map(np.asarray, lo)
    _, hi = _fly(jnp.float64, stochastic=False)
    assert lo.position.dtype == jnp.float32 and hi.position.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(lo.position, float), np.asarray(hi.position), atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.asarray(lo.quat, float), np.asarray(hi.quat), atol=1e-6, rtol=0)
