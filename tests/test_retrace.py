"""Entry points users call in a loop compile once: a second call with new
values of the same shapes lowers no new program (lowerings are counted, so
a persistent compilation cache cannot hide a retrace)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import tasks
from flapjax.sim import flapper as fl
from tests.compile_events import lowered_programs as lowered


@pytest.fixture(scope="module")
def lumped():
    robot = fl.make_robot("lumped", "averaged", backend="rigid")
    params = fl.default_params(robot)
    return robot, params, fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 0.5]))


def test_hover_rollout_compiles_once_for_new_values(lumped):
    robot, params, state = lumped
    first = lowered(lambda: fl.hover_rollout(robot, params, state, 60, record_every=20, hover_frequency=41.0,
                                             target=jnp.array([0.0, 0.0, 0.5])))
    assert any("hover_rollout" in n for n in first), first
    heavier = eqx.tree_at(lambda p: p.averaged.lift_coefficient, params, params.averaged.lift_coefficient * 1.1)
    again = lowered(lambda: fl.hover_rollout(robot, heavier, state, 60, record_every=20, hover_frequency=43.5,
                                             target=jnp.array([0.01, 0.0, 0.5])))
    assert again == [], again


def test_hover_study_compiles_once_for_new_keys():
    run = lambda k: fl.hover_study(jax.random.key(k), 2, duration=0.1, settle_window=0.05, record_every=20).settled  # noqa: E731
    run(0)
    assert lowered(lambda: run(1)) == []


def test_task_step_compiles_once_over_an_episode():
    env = tasks.make("near_ground", episode_length=4, substeps=1, backend="rigid")
    step = jax.jit(env.step)
    state = jax.jit(env.reset)(jax.random.key(0))
    state = step(state, jnp.zeros(env.action_size))
    assert lowered(lambda: step(step(state, jnp.zeros(env.action_size)), jnp.ones(env.action_size)).obs) == []


def test_eager_task_steps_run_one_compiled_program():
    """``env.step`` called outside ``jit`` (a notebook loop) compiles once,
    and a second environment of the same configuration reuses it."""
    env = tasks.make("near_ground", episode_length=4, substeps=1, backend="rigid")
    state = env.step(env.reset(jax.random.key(0)), jnp.zeros(env.action_size))
    other = tasks.make("near_ground", episode_length=4, substeps=1, backend="rigid")
    assert lowered(lambda: other.step(env.step(state, np.full(env.action_size, 0.1)), jnp.zeros(env.action_size)).obs) == []


def test_program_cache_keeps_the_most_recently_used_programs():
    from flapjax.programs import ProgramCache

    built = []
    cache = ProgramCache(limit=2)
    get = lambda k: cache.get(k, lambda: built.append(k) or f"program {k}")  # noqa: E731
    assert get("a") == "program a" and get("b") == "program b" and get("a") == "program a"
    get("c")  # evicts b, the least recently used
    assert built == ["a", "b", "c"] and len(cache) == 2 and "b" not in cache and "a" in cache
    get("b")
    assert built == ["a", "b", "c", "b"]
    with pytest.raises(ValueError, match="limit"):
        ProgramCache(limit=0)
