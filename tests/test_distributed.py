"""Several processes, one mesh: the world axis split over two JAX processes
(``jax.distributed.initialize``, CPU collectives over gloo) must give every
world bit for bit the result of a single process (float64).

Three subprocesses on this machine: a reference run in one process, then two
processes joined through a coordinator on a free localhost port, each with
one CPU device, running the same sharded rigid multirotor rollout.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import jax
    mode, out_path = sys.argv[1], sys.argv[2]
    if mode == "worker":
        port, pid = int(sys.argv[3]), int(sys.argv[4])
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2, process_id=pid,
                                   initialization_timeout=120)
        # MJX's make_data (called by MultirotorWorld) puts its data on
        # jax.devices()[0], a device of process 0 only: point it at this
        # process's own device.
        from mujoco.mjx._src import io as mjx_io
        resolve = mjx_io._resolve_impl_and_device
        mjx_io._resolve_impl_and_device = lambda impl=None, device=None: resolve(
            impl, device if device is not None else jax.local_devices()[0])
    jax.config.update("jax_enable_x64", True)
    from jax.experimental import multihost_utils
    from flapjax import rotor
    from flapjax.control.wrench import Reference
    from flapjax.sim import sharding
    from flapjax.sim.multirotor import MultirotorWorld

    world = MultirotorWorld(rotor.profile.quad_x(), options=rotor.ChainOptions(), dt=0.002, backend="rigid")
    m = 4
    # Every process builds the same global batch as host (NumPy) arrays.
    params = jax.tree.map(lambda x: np.broadcast_to(np.asarray(x), (m,) + np.shape(x)).copy(),
                          world.default_params())
    pos = np.array([0.6, 0.0, 0.3]) + np.linspace(-0.02, 0.02, m)[:, None]
    keys = jax.random.split(jax.random.PRNGKey(0), m)
    local = jax.local_devices()[0]
    state = jax.jit(jax.vmap(world.reset), device=local)(params, keys, pos)
    state, ref = jax.tree.map(np.asarray, (state, jax.vmap(Reference.hover)(pos)))
    if mode == "worker":
        mesh = sharding.world_mesh()               # every device of both processes
        final, info = sharding.multirotor_rollout(world, params, state, ref, 40, mesh=mesh)
        qpos, trace = multihost_utils.process_allgather((final.data.qpos, info.wrench), tiled=True)
        meta = dict(processes=jax.process_count(), global_devices=len(jax.devices()),
                    local_devices=len(jax.local_devices()), mesh=int(mesh.devices.size),
                    local_rows=sharding.shard_counts(final.data.qpos))
    else:
        final, info = sharding.multirotor_rollout(world, params, state, ref, 40, mesh=None)
        qpos, trace = np.asarray(final.data.qpos), np.asarray(info.wrench)
        meta = dict(processes=jax.process_count(), global_devices=len(jax.devices()))
    np.savez(out_path, qpos=np.asarray(qpos), wrench=np.asarray(trace))
    print(json.dumps(meta))
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "FLAPJAX_CORES")}
    env.update(JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_cpu_use_fusion_emitters=false --xla_force_host_platform_device_count=1")
    return env


def test_two_processes_equal_one(tmp_path):
    ref = subprocess.run([sys.executable, "-c", SCRIPT, "single", str(tmp_path / "single.npz")],
                         capture_output=True, text=True, env=_env(), timeout=600)
    assert ref.returncode == 0, ref.stderr[-3000:]
    port = _free_port()
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, "worker", str(tmp_path / f"worker{i}.npz"), str(port),
                               str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
             for i in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    metas = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    # Really two processes with one device each, one mesh over both, two worlds each.
    for meta in metas:
        assert meta["processes"] == 2 and meta["global_devices"] == 2 and meta["local_devices"] == 1
        assert meta["mesh"] == 2 and meta["local_rows"] == [2]
    single = np.load(tmp_path / "single.npz")
    assert np.ptp(single["qpos"][:, 0]) > 1e-3  # the worlds differ
    for i in range(2):
        got = np.load(tmp_path / f"worker{i}.npz")
        assert got["qpos"].shape == single["qpos"].shape == (4, 7)
        np.testing.assert_array_equal(got["qpos"], single["qpos"])
        np.testing.assert_array_equal(got["wrench"], single["wrench"])
