"""Entry points users call in a loop compile once: a second call with new
values of the same shapes lowers no new program (lowerings are counted, so
a persistent compilation cache cannot hide a retrace)."""

from __future__ import annotations

import chex
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
    """Counted twice: Python traces of the step (chex) and XLA lowerings."""
    env = tasks.make("near_ground", episode_length=4, substeps=1, backend="rigid")
    chex.clear_trace_counter()
    step = jax.jit(chex.assert_max_traces(env.step, n=1))
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


def test_an_edited_profile_file_gets_its_own_program(tmp_path):
    """Programs are shared by the task, its configuration and the numbers it
    loaded: the same file path with other contents is another program."""
    import pathlib

    source = pathlib.Path(__file__).resolve().parent.parent / "examples" / "profiles" / "quad_x_long_arm.toml"
    path = tmp_path / "robot.toml"
    path.write_text(source.read_text())
    first = tasks.make("near_ground", robot=str(path), episode_length=4, substeps=1, backend="rigid")
    again = tasks.make("near_ground", robot=str(path), episode_length=4, substeps=1, backend="rigid")
    assert first.program_key == again.program_key
    path.write_text(source.read_text().replace("mass = 1.7", "mass = 1.9"))
    edited = tasks.make("near_ground", robot=str(path), episode_length=4, substeps=1, backend="rigid")
    assert float(edited.profile.mass) == pytest.approx(1.9)
    assert edited.program_key != first.program_key and edited.config == first.config


def test_tree_digest_sees_values_shapes_and_types():
    from flapjax.programs import tree_digest

    base = {"a": np.arange(3.0), "b": 2}
    assert tree_digest(base) == tree_digest({"a": np.arange(3.0), "b": 2})
    for other in ({"a": np.arange(3.0) * 2, "b": 2}, {"a": np.arange(3.0, dtype=np.float32), "b": 2},
                  {"a": np.arange(3.0).reshape(3, 1), "b": 2}, {"a": np.arange(3.0), "b": 3}):
        assert tree_digest(other) != tree_digest(base)


def test_tree_key_compares_static_fields_rather_than_printing_them():
    """A static field whose ``repr`` is an address (a ``mujoco.MjModel``)
    must not make two equal trees two keys; other values must."""
    from flapjax.programs import tree_digest, tree_key

    class Spec:  # equal by value, printed with its address
        def __init__(self, n):
            self.n = n

        def __eq__(self, other):
            return isinstance(other, Spec) and other.n == self.n

        def __hash__(self):
            return hash(self.n)

    class Holder(eqx.Module):
        x: jax.Array
        spec: Spec = eqx.field(static=True)

    a, b = Holder(jnp.arange(3.0), Spec(1)), Holder(jnp.arange(3.0), Spec(1))
    assert tree_digest(a) != tree_digest(b)  # why tree_key exists
    assert tree_key(a) == tree_key(b) and hash(tree_key(a)) == hash(tree_key(b))
    assert tree_key(Holder(jnp.arange(3.0), Spec(2))) != tree_key(a)
    assert tree_key(Holder(jnp.arange(3.0) + 1, Spec(1))) != tree_key(a)
