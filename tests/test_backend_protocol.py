"""One backend protocol for both robots: the stages every backend provides
(:class:`flapjax.sim.backend.Backend`: model, initial, read, advance),
registered by both robots under the same names, and driven here stage by
stage: from the same start under the same wrench the two backends of each
robot agree, and the wrench acts in the world frame about the CoM."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mujoco import mjx

from flapjax import ConfigError
from flapjax.control.wrench import Reference
from flapjax.sim import backend, rigid, tree
from flapjax.sim import flapper as fl
from flapjax.sim import multirotor as mr
from flapjax.sim.flapper import backends as flapper_backends
from flapjax.sim.flapper.step_types import Actuation
from flapjax.sim.multirotor import backends as multirotor_backends
from flapjax.sim.multirotor.step import to_world

REGISTRIES = {"flapper": flapper_backends.STAGES, "multirotor": multirotor_backends.STAGES}
#: (3,) world force [N] and (3,) torque [N m] of the one-step checks: lift
#: near the weight, a push sideways, a small torque.
FORCE_FLAPPER, TORQUE_FLAPPER = np.array([2e-4, -1e-4, 1.1e-3]), np.array([1e-7, -2e-7, 3e-8])
FORCE_ROTOR, TORQUE_ROTOR = np.array([0.4, -0.2, 16.0]), np.array([0.01, -0.02, 0.005])


@pytest.mark.parametrize("robot", REGISTRIES)
def test_each_robot_registers_every_backend_name_once(robot):
    stages = REGISTRIES[robot]
    assert tuple(stages) == backend.BACKENDS
    assert all(isinstance(b, backend.Backend) and b.name == name for name, b in stages.items())
    assert [f.name for f in dataclasses.fields(backend.Backend)] == ["name", "model", "initial", "read", "advance"]
    with pytest.raises(TypeError):
        stages["tree"] = stages["rigid"]  # read-only: no third backend name slips in


def test_registry_refuses_a_missing_duplicate_or_unknown_backend():
    mjx_b, rigid_b = flapper_backends.MJX, flapper_backends.RIGID
    for backends in [(mjx_b,), (mjx_b, mjx_b), (mjx_b, rigid_b, rigid_b)]:
        with pytest.raises(ConfigError, match="backends: one Backend for each of"):
            backend.registry(*backends)
    with pytest.raises(ConfigError, match="Backend.name"):
        dataclasses.replace(rigid_b, name="tree")
    assert tuple(backend.registry(rigid_b, mjx_b)) == backend.BACKENDS  # in the order of BACKENDS


@pytest.mark.parametrize("root, start_type, frames_type", [("lumped", rigid.RigidState, type(None)),
                                                           ("fixed", mjx.Data, tree.Frames)])
def test_the_flapper_rigid_backend_picks_the_body_or_the_joint_tree_by_root(root, start_type, frames_type):
    robot = fl.make_robot(root, "averaged" if root == "lumped" else "wing", backend="rigid")
    params = fl.default_params(robot)
    stages = flapper_backends.STAGES[robot.backend]
    data = stages.initial(robot, params, None, None, None, None)
    assert isinstance(data, start_type)
    _, _, frames = stages.read(robot, stages.model(robot, params), data)
    assert isinstance(frames, frames_type)  # the tree hands its frames on to its advance; the body has none


def _flapper_step(name):
    """The lumped flapper's base frame before and after one step of backend
    ``name`` under the world wrench, stage by stage."""
    robot = fl.make_robot("lumped", "averaged", backend=name)
    params = fl.default_params(robot)
    stages = flapper_backends.STAGES[robot.backend]
    pose = (jnp.array([0.02, -0.01, 0.48]), jnp.array([0.999, 0.03, -0.02, 0.01]), jnp.array([0.05, 0.0, -0.05]),
            jnp.array([0.5, -0.3, 0.2]))

    @jax.jit
    def run(wrench):
        m = stages.model(robot, params)
        data, before, frames = stages.read(robot, m, stages.initial(robot, params, *pose))
        xfrc = jnp.zeros((m.nbody, 6)).at[robot.base_body].set(wrench)
        act = Actuation(ctrl=jnp.zeros((m.nu,)), qfrc=jnp.zeros((m.nv,)))
        _, after, _ = stages.read(robot, m, stages.advance(robot, m, data, xfrc, act, frames))
        return before, after

    mass = float(np.sum(np.asarray(robot.model.body_mass)))
    return run(jnp.concatenate([FORCE_FLAPPER, TORQUE_FLAPPER])), mass, np.asarray(robot.model.opt.gravity), robot.dt


def test_both_flapper_backends_take_one_step_alike_under_the_world_wrench():
    """Semi-implicit Euler: the CoM velocity gains ``dt (F / m + g)`` (a
    world-frame force at the CoM), on both backends, up to the turn of the
    CoM's offset from the body origin (``omega x r``: 3e-13 m/s measured,
    against 7e-7 m/s from the sideways force); the frames agree."""
    (mjx_before, mjx_after), mass, gravity, dt = _flapper_step("mjx")
    (rigid_before, rigid_after), _, _, _ = _flapper_step("rigid")
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-12), mjx_before, rigid_before)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-10), mjx_after, rigid_after)
    for before, after in ((mjx_before, mjx_after), (rigid_before, rigid_after)):
        dv = np.asarray(after.v_com - before.v_com)
        np.testing.assert_allclose(dv, dt * (FORCE_FLAPPER / mass + gravity), rtol=1e-9, atol=1e-11)


def _rotor_step(name):
    """The quadrotor's body state before and after one step of backend ``name``
    under the world wrench, stage by stage, in the air."""
    world = mr.MultirotorWorld("quad_x", backend=name, sensor_noise=False)
    prepared = world.prepare(world.default_params())
    stages = multirotor_backends.STAGES[world.backend]

    @jax.jit
    def run(wrench):
        data = stages.initial(world, prepared.params, jnp.array([0.1, -0.2, 1.5]), 0.3)
        new, touching, contact_force = stages.advance(world, prepared, data, wrench)
        return stages.read(world, prepared, data), stages.read(world, prepared, new), touching, contact_force

    return run(jnp.concatenate([FORCE_ROTOR, TORQUE_ROTOR])), float(world.profile.mass), world.dt


def test_both_multirotor_backends_take_one_step_alike_under_the_world_wrench():
    (mjx_before, mjx_after, mjx_touch, mjx_force), mass, dt = _rotor_step("mjx")
    (rigid_before, rigid_after, rigid_touch, rigid_force), _, _ = _rotor_step("rigid")
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-12), mjx_before, rigid_before)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-10), mjx_after, rigid_after)
    assert not bool(mjx_touch) and not bool(rigid_touch)  # 1.5 m up: no contact on either
    np.testing.assert_array_equal(np.asarray(mjx_force), 0.0)
    np.testing.assert_array_equal(np.asarray(rigid_force), 0.0)
    np.testing.assert_allclose(np.asarray(mjx_before.position), [0.1, -0.2, 1.5])
    for before, after in ((mjx_before, mjx_after), (rigid_before, rigid_after)):
        dv = np.asarray(after.velocity - before.velocity)
        np.testing.assert_allclose(dv, dt * (FORCE_ROTOR / mass + [0.0, 0.0, -9.81]), rtol=1e-9, atol=1e-15)


def test_a_world_steps_through_its_backend_stages():
    """:meth:`MultirotorWorld.step` moves the state as the backend's
    ``advance`` does under the step's realized wrench, rotated to the world."""
    world = mr.MultirotorWorld("quad_x", backend="rigid", sensor_noise=False)
    params = world.default_params()
    state = world.reset(params, jax.random.PRNGKey(0), jnp.array([0.0, 0.0, 1.0]))
    tilted = jnp.array([np.cos(0.1), np.sin(0.1), 0.0, 0.0])  # 0.2 rad of roll
    state = eqx.tree_at(lambda s: s.data.quat, state, tilted)
    new, info = jax.jit(lambda p, s: world.step(p, s, Reference.hover(jnp.array([0.1, 0.0, 1.0]))))(params, state)
    prepared = world.prepare(params)
    stages = multirotor_backends.STAGES[world.backend]
    body = stages.read(world, prepared, state.data)
    wrench_world = to_world(body.rotation, info.wrench)
    assert float(jnp.abs(wrench_world - info.wrench).max()) > 1.0  # tilted thrust: the rotation matters
    expected, _, _ = stages.advance(world, prepared, state.data, wrench_world)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-12), new.data, expected)
