"""One exploding world must not touch the others: inject NaN into one of 256
worlds mid-rollout and compare every other world bit for bit."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import rotor
from flapjax.control.wrench import Reference
from flapjax.sim import multirotor as mr

N_WORLDS, BAD, HALF = 256, 37, 25


def _run(backend, on_divergence, inject):
    prof = rotor.profiles.quad_x()
    world = mr.MultirotorWorld(prof, backend=backend, on_divergence=on_divergence, dtype=jnp.float32)
    base = world.default_params()
    params = jax.tree.map(lambda x: jnp.broadcast_to(x, (N_WORLDS,) + jnp.shape(x)), base)
    keys = jax.random.split(jax.random.key(3), N_WORLDS)
    starts = jnp.stack([jnp.linspace(-0.5, 0.5, N_WORLDS), jnp.zeros(N_WORLDS), jnp.full(N_WORLDS, 0.6)], axis=1)
    refs = jax.vmap(lambda x: Reference.hover(x + jnp.array([0.05, 0.0, 0.05]), 0.0))(starts)
    state = world.batched_reset(params, keys, starts, refs.yaw)
    state, first = world.batched_rollout(params, state, refs, HALF)
    if inject:
        if backend == "mjx":
            state = eqx.tree_at(lambda s: s.data.qvel, state, state.data.qvel.at[BAD].set(jnp.nan))
        else:
            state = eqx.tree_at(lambda s: s.data.velocity, state, state.data.velocity.at[BAD].set(jnp.nan))
    state, second = world.batched_rollout(params, state, refs, HALF)
    return jax.tree.map(lambda a, b: np.concatenate([np.asarray(a), np.asarray(b)], axis=1), first, second)


@pytest.mark.parametrize("backend, on_divergence", [("mjx", "freeze"), ("rigid", "freeze"), ("rigid", "reset")])
def test_nan_in_one_world_leaves_the_others_bit_identical(backend, on_divergence):
    clean = _run(backend, on_divergence, inject=False)
    hurt = _run(backend, on_divergence, inject=True)
    others = np.arange(N_WORLDS) != BAD
    for name in ("position", "quat", "velocity", "thrust_realized", "wrench"):
        np.testing.assert_array_equal(getattr(hurt, name)[others], getattr(clean, name)[others], err_msg=name)
    assert not clean.diverged.any()
    # which world and when: exactly the injected one, at the first step after the injection
    assert np.array_equal(np.flatnonzero(hurt.diverged.any(axis=1)), [BAD])
    assert int(np.argmax(hurt.diverged[BAD])) == HALF
    if on_divergence == "freeze":
        assert hurt.diverged[BAD, HALF:].all()  # stays flagged, frozen
    else:
        assert hurt.diverged[BAD].sum() == 1  # reset once, then flies again
        assert np.isfinite(hurt.position[BAD, -1]).all()
        target = np.array([np.linspace(-0.5, 0.5, N_WORLDS)[BAD] + 0.05, 0.0, 0.65])
        assert np.abs(hurt.position[BAD, -1] - target).max() < 0.05
