"""Gradients through MJX contact: a quadrotor pressed against the wall, in
float64, a few steps. Forward mode passes MJX's solver loop at any iteration
count; reverse mode passes with one solver iteration, or at any count
through :func:`flapjax.sim.multirotor.gradient.step_fixed_iterations`, and
fails inside ``mjx.step``'s solver ``while_loop`` otherwise. Each gradient is
checked against central finite differences (docs/mjx_notes.md, Reverse
mode through the solver)."""

from __future__ import annotations

import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mujoco import mjx

from flapjax import rotor
from flapjax.control.wrench import Reference
from flapjax.sim.multirotor import MultirotorWorld
from flapjax.sim.multirotor.gradient import step_fixed_iterations
from flapjax.validation import ConfigError

#: Base x where the end effector (0.3 m ahead, radius 15 mm) presses 3 mm into the wall at x = 1 m.
PRESSED_X = 0.688
N_STEPS = 3
FD_STEP = 1e-6
REL = 1e-4


def _world(iterations: int, unrolled_solver: bool = False) -> MultirotorWorld:
    return MultirotorWorld(rotor.profile.quad_x(), dt=0.002, iterations=iterations, dtype=jnp.float64,
                           sensor_noise=False, unrolled_solver=unrolled_solver)


def _central_differences(f, x, h=FD_STEP):
    return jnp.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in jnp.eye(x.shape[0], dtype=x.dtype)])


def _assert_matches(grad, fd):
    """Every component within ``REL`` of the gradient's largest component."""
    grad, fd = np.asarray(grad), np.asarray(fd)
    assert np.all(np.isfinite(grad)) and np.max(np.abs(fd)) > 0
    np.testing.assert_allclose(grad, fd, rtol=0, atol=REL * np.max(np.abs(fd)))


# --- the bare MJX step: a pushed body, the solver's iterations fixed -----------------------------------------------


@pytest.fixture(scope="module")
def pressed():
    """The world's MJX model (Newton solver, 3 iterations) and data with the
    quadrotor pressed into the wall; a model with the wall 4 m further."""
    world = _world(3)
    d0 = world.data0.replace(qpos=world.data0.qpos.at[0:3].set(jnp.array([PRESSED_X, 0.0, 0.5])))
    params = world.default_params()
    far = world.world_model(eqx.tree_at(lambda p: p.scene.wall_x, params, params.scene.wall_x + 4.0))
    return world.world_model(params), far, d0


def _pushed(m, d0, push, stepper):
    """``N_STEPS`` steps under the body push ``push`` = (F_x, F_z) [N]; the final data."""
    def body(d, _):
        f = jnp.zeros((m.nbody, 6), d.qpos.dtype).at[1, 0].set(push[0]).at[1, 2].set(push[1])
        return stepper(d.replace(xfrc_applied=f)), None

    return jax.lax.scan(body, d0, None, length=N_STEPS)[0]


def _score(d):
    """A scalar of the final state that the wall contact shapes [m, m/s]."""
    return d.qpos[0] + 0.3 * d.qpos[2] + 0.01 * d.qvel[0] + 0.1 * d.qvel[4]


PUSH = jnp.array([5.0, 16.0])


@pytest.mark.slow  # three forward and one reverse compilation of the MJX step: 12-40 s on 2 cores
def test_fixed_iteration_step_is_mjx_step_and_reverse_mode_passes(pressed):
    m, far, d0 = pressed
    fixed = lambda push: _pushed(m, d0, push, lambda d: step_fixed_iterations(m, d, 3))  # noqa: E731
    run_fixed = jax.jit(fixed)
    a = run_fixed(PUSH)
    b = jax.jit(lambda push: _pushed(m, d0, push, lambda d: mjx.step(m, d)))(PUSH)
    np.testing.assert_allclose(np.asarray(a.qpos), np.asarray(b.qpos), rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.asarray(a.qvel), np.asarray(b.qvel), rtol=0, atol=1e-12)
    free = jax.jit(lambda push: _pushed(far, d0, push, lambda d: mjx.step(far, d)))(PUSH)
    assert float(free.qvel[0]) > float(a.qvel[0]) + 1e-3  # the wall holds the pushed robot back
    loss = lambda push: _score(run_fixed(push))  # noqa: E731
    _assert_matches(jax.jit(jax.grad(lambda push: _score(fixed(push))))(PUSH), _central_differences(loss, PUSH))


@pytest.mark.slow  # tracing the JVP of the step: 10-14 s on 2 cores
def test_reverse_mode_through_mjx_step_fails_in_the_solver_loop(pressed):
    m, _, d0 = pressed
    with pytest.raises(ValueError, match=re.escape("Reverse-mode differentiation does not work for lax.while_loop")):
        jax.grad(lambda push: _score(_pushed(m, d0, push, lambda d: mjx.step(m, d))))(PUSH)


def test_the_chain_needs_newton_and_the_warm_start(pressed):
    m, _, d0 = pressed
    with pytest.raises(ConfigError, match="iterations: .* only for the Newton solver"):
        step_fixed_iterations(m.replace(opt=m.opt.replace(solver=mjx.SolverType.CG)), d0, 3)
    cold = m.replace(opt=m.opt.replace(disableflags=m.opt.disableflags | mjx.DisableBit.WARMSTART))
    with pytest.raises(ConfigError, match="warm start"):
        step_fixed_iterations(cold, d0, 3)


# --- the multirotor world's own rollout (controller, rotor chain, contacts) ------------------------------------------


def _rollout_score(world: MultirotorWorld):
    """Final-state score after ``N_STEPS`` world steps from the pressed pose,
    as a function of the hover reference (3,) [m] (ahead of the wall: the
    controller pushes into it)."""
    params = world.default_params()
    state = world.reset(params, jax.random.PRNGKey(0), jnp.array([PRESSED_X, 0.0, 0.5]))

    def score(x):
        final, _ = world.rollout(params, state, Reference.hover(x), N_STEPS)
        return _score(final.data)

    return jax.jit(score)


REFERENCE = jnp.array([PRESSED_X + 0.06, 0.0, 0.5])


@pytest.mark.slow  # two compilations of the full world step: 6-12 s on 2 cores
def test_forward_mode_through_a_world_rollout_in_contact_matches_finite_differences():
    score = _rollout_score(_world(3))
    _assert_matches(jax.jit(jax.jacfwd(score))(REFERENCE), _central_differences(score, REFERENCE))


@pytest.mark.slow  # a reverse-mode compilation of the full world step: 10-17 s on 2 cores
def test_reverse_mode_through_a_one_iteration_world_in_contact_matches_finite_differences():
    score = _rollout_score(_world(1))
    _assert_matches(jax.jit(jax.grad(score))(REFERENCE), _central_differences(score, REFERENCE))


@pytest.mark.slow  # a reverse-mode compilation of the full world step with three unrolled solver iterations
def test_reverse_mode_through_a_world_with_the_unrolled_solver_matches_finite_differences():
    """``unrolled_solver=True``: the world's own rollout at three solver
    iterations, in contact, differentiated in reverse mode; the same rollout
    stepped by ``mjx.step`` gives the same score (its loop runs all three)."""
    unrolled, looped = _rollout_score(_world(3, unrolled_solver=True)), _rollout_score(_world(3))
    np.testing.assert_allclose(unrolled(REFERENCE), looped(REFERENCE), rtol=1e-9)
    _assert_matches(jax.jit(jax.grad(unrolled))(REFERENCE), _central_differences(unrolled, REFERENCE))


def test_unrolled_solver_takes_a_bool():
    with pytest.raises(ConfigError, match="unrolled_solver"):
        MultirotorWorld(rotor.profile.quad_x(), unrolled_solver="yes")
