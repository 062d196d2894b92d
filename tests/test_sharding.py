"""Sharding the world axis across devices must not change any world's result.

The check runs in a subprocess: forcing several CPU devices
(:func:`flapjax.devices.use_all_cores`) must happen before JAX starts its
backend, and this test session's conftest has already started it.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from flapjax.sim import sharding
from flapjax.validation import ConfigError

N_DEVICES = 4

SCRIPT = textwrap.dedent(
    """
    import json, os
    from flapjax import devices
    devices.use_all_cores(%d)   # before JAX starts: the library call under test
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    import equinox as eqx
    from flapjax import rotor
    from flapjax.control.wrench import Reference
    from flapjax.sim import flapper, sharding
    from flapjax.sim.multirotor import MultirotorWorld
    from flapjax.validation import ConfigError

    def same(a, b):
        return all(np.array_equal(np.asarray(x), np.asarray(y))
                   for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))

    robot = flapper.make_robot("lumped", "averaged")
    base = flapper.default_params(robot)
    n = 8
    params = jax.tree.map(lambda x: np.broadcast_to(np.asarray(x), (n,) + np.shape(x)).copy(), base)
    # Different worlds must stay different: one frequency and one plate tilt per world.
    freq = np.asarray(base.averaged.hover_frequency) * np.linspace(0.97, 1.03, n)
    params = eqx.tree_at(lambda p: (p.stroke.frequency, p.plate), params,
                         (freq, np.stack([np.linspace(-0.1, 0.1, n), np.linspace(0.05, -0.05, n)], 1)))
    state = jax.vmap(lambda p: flapper.init_state(robot, p))(params)
    observe = lambda s, o: o.force_world
    one_final, one_force = sharding.flapper_rollout(robot, params, state, 50, mesh=None, observe=observe)
    mesh = sharding.world_mesh()
    shard_final, shard_force = sharding.flapper_rollout(robot, params, state, 50, mesh=mesh, observe=observe)
    # The default splits over every device; 6 worlds are padded to 8 and cut back.
    default_final, default_force = sharding.flapper_rollout(robot, params, state, 50, observe=observe)
    first6 = lambda t: jax.tree.map(lambda x: x[:6], t)
    odd_final, odd_force = sharding.flapper_rollout(robot, first6(params), first6(state), 50, observe=observe)

    # The rigid multirotor (full chain, sensor noise on) through the same default.
    world = MultirotorWorld(rotor.profile.quad_x(), options=rotor.ChainOptions(), dt=0.002, backend="rigid")
    m = 6
    mp = jax.tree.map(lambda x: np.broadcast_to(np.asarray(x), (m,) + np.shape(x)).copy(), world.default_params())
    pos = np.array([0.6, 0.0, 0.3]) + np.linspace(-0.02, 0.02, m)[:, None]
    ms = jax.vmap(world.reset)(mp, jax.random.split(jax.random.PRNGKey(0), m), pos)
    ref = jax.vmap(Reference.hover)(pos)
    mr_one = sharding.multirotor_rollout(world, mp, ms, ref, 40, mesh=None)
    mr_all = sharding.multirotor_rollout(world, mp, ms, ref, 40)
    try:
        sharding.shard_worlds(np.zeros((6, 2)), mesh)
        uneven_rejected = False
    except ConfigError:
        uneven_rejected = True
    padded, n_before = sharding.pad_to_mesh({"a": np.arange(6.0)}, mesh)
    mr_q = np.asarray(mr_one[0].data.qpos)
    print(json.dumps(dict(
        padded=np.asarray(padded["a"]).tolist(), n_before=n_before,
        devices=len(jax.devices()),
        mesh=int(mesh.devices.size),
        spec=list(shard_force.sharding.spec),
        default_spec=list(default_force.sharding.spec),
        uneven_rejected=uneven_rejected,
        counts=sharding.shard_counts(shard_force),
        default_counts=sharding.shard_counts(default_force),
        odd_rows=int(np.shape(odd_force)[0]),
        odd_equal=same((odd_final, odd_force), first6((one_final, one_force))),
        qpos_equal=same(one_final.data.qpos, shard_final.data.qpos),
        force_equal=same(one_force, shard_force),
        default_equal=same((one_final, one_force), (default_final, default_force)),
        multirotor_rows=int(mr_q.shape[0]),
        multirotor_spread=float(np.ptp(mr_q[:, 0])),
        multirotor_equal=same(mr_one, mr_all),
        max_diff=float(np.max(np.abs(np.asarray(one_force) - np.asarray(shard_force)))),
        spread=float(np.ptp(np.asarray(one_final.data.qpos)[:, 2])),
    )))
    """
    % N_DEVICES
)


def test_sharded_rollout_equals_unsharded():
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "FLAPJAX_CORES")}
    env["JAX_PLATFORMS"] = "cpu"
    # Classic emitters (fast to compile); use_all_cores adds the device count. Not
    # FLAPJAX_TEST_XLA_FLAGS: with LLVM optimization off (level 0) the partitioned
    # program rounds a few float64 values differently (4e-19 m/s in a velocity).
    env["XLA_FLAGS"] = "--xla_cpu_use_fusion_emitters=false"
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == N_DEVICES and out["mesh"] == N_DEVICES
    # The world axis really is split: two worlds per device, not a replicated copy,
    # with an explicit mesh and by default.
    assert out["spec"] == ["worlds"] and out["default_spec"] == ["worlds"]
    assert out["counts"] == [2] * N_DEVICES and out["default_counts"] == [2] * N_DEVICES
    # Worlds differ from each other, so equality below is not trivially true.
    assert out["spread"] > 1e-6 and out["multirotor_spread"] > 1e-3
    assert out["qpos_equal"] and out["force_equal"], out["max_diff"]
    assert out["default_equal"] and out["multirotor_equal"]
    # 6 worlds through an entry point: padded to 8 inside, 6 rows out, the same 6 worlds.
    assert out["odd_rows"] == 6 and out["multirotor_rows"] == 6 and out["odd_equal"]
    # shard_worlds itself refuses an uneven split instead of silently replicating,
    # and pad_to_mesh fills up to 8 by repeating the last world.
    assert out["uneven_rejected"]
    assert out["padded"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 5.0, 5.0] and out["n_before"] == 6


def test_world_mesh_rejects_more_devices_than_exist():
    import jax

    with pytest.raises(ConfigError, match="n_devices"):
        sharding.world_mesh(len(jax.devices()) + 1)


def test_one_device_default_is_unsharded_and_bad_mesh_named():
    # This session has one CPU device: the default "all" means no mesh at all.
    import jax

    if len(jax.devices()) == 1:
        assert sharding.resolve_mesh(sharding.ALL_DEVICES) is None
    with pytest.raises(ConfigError, match="mesh"):
        sharding.resolve_mesh("every")
