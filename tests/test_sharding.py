"""Sharding the world axis across devices must not change any world's result.

The check runs in a subprocess: forcing several CPU devices needs
``XLA_FLAGS`` before JAX is imported, and this test session's conftest has
already imported it.
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
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=%d"
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    from flapjax.sim import flapper, sharding

    robot = flapper.make_robot("lumped", "averaged")
    base = flapper.default_params(robot)
    n = 8
    params = jax.tree.map(lambda x: np.broadcast_to(np.asarray(x), (n,) + np.shape(x)).copy(), base)
    # Different worlds must stay different: one frequency and one plate tilt per world.
    freq = np.asarray(base.averaged.hover_frequency) * np.linspace(0.97, 1.03, n)
    import equinox as eqx
    params = eqx.tree_at(lambda p: (p.stroke.frequency, p.plate), params,
                         (freq, np.stack([np.linspace(-0.1, 0.1, n), np.linspace(0.05, -0.05, n)], 1)))
    state = jax.vmap(lambda p: flapper.init_state(robot, p))(params)
    observe = lambda s, o: o.force_world
    plain_final, plain_force = sharding.flapper_rollout(robot, params, state, 50, observe=observe)
    mesh = sharding.world_mesh()
    shard_final, shard_force = sharding.flapper_rollout(robot, params, state, 50, mesh=mesh, observe=observe)
    from flapjax.validation import ConfigError
    try:
        sharding.shard_worlds(np.zeros((6, 2)), mesh)
        uneven_rejected = False
    except ConfigError:
        uneven_rejected = True
    padded, n_before = sharding.pad_to_mesh({"a": np.arange(6.0)}, mesh)
    print(json.dumps(dict(
        padded=np.asarray(padded["a"]).tolist(), n_before=n_before,
        devices=len(jax.devices()),
        mesh=int(mesh.devices.size),
        spec=list(shard_force.sharding.spec),
        uneven_rejected=uneven_rejected,
        counts=sharding.shard_counts(shard_force),
        qpos_equal=bool(np.array_equal(np.asarray(plain_final.data.qpos), np.asarray(shard_final.data.qpos))),
        force_equal=bool(np.array_equal(np.asarray(plain_force), np.asarray(shard_force))),
        max_diff=float(np.max(np.abs(np.asarray(plain_force) - np.asarray(shard_force)))),
        spread=float(np.ptp(np.asarray(plain_final.data.qpos)[:, 2])),
    )))
    """
    % N_DEVICES
)


def test_sharded_rollout_equals_unsharded():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == N_DEVICES and out["mesh"] == N_DEVICES
    # The world axis really is split: two worlds per device, not a replicated copy.
    assert out["spec"] == ["worlds"]
    assert out["counts"] == [2] * N_DEVICES
    # Worlds differ from each other, so equality below is not trivially true.
    assert out["spread"] > 1e-6
    assert out["qpos_equal"] and out["force_equal"], out["max_diff"]
    # 6 worlds do not split over 4 devices: refused instead of silently replicated,
    # and pad_to_mesh fills up to 8 by repeating the last world.
    assert out["uneven_rejected"]
    assert out["padded"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 5.0, 5.0] and out["n_before"] == 6


def test_world_mesh_rejects_more_devices_than_exist():
    import jax

    with pytest.raises(ConfigError, match="n_devices"):
        sharding.world_mesh(len(jax.devices()) + 1)
