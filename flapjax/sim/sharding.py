"""Shard the world axis of batched rollouts across devices.

Every batched function in flapjax vmaps one world over a leading world axis.
This module places that axis on a 1-D :class:`jax.sharding.Mesh` and lets
XLA's SPMD partitioner split the compiled rollout: each device steps its own
slice of worlds, with no communication (worlds are independent). It wraps
the rollout functions of :mod:`flapjax.sim.rollout`,
:mod:`flapjax.sim.flapper` and :mod:`flapjax.sim.multirotor` without
changing them.

Single host, several devices (GPUs, or one CPU device per core with
:func:`flapjax.devices.use_all_cores` called before JAX starts, as the
``flapjax`` command does)::

    final, trace = sharding.batch_rollout(step, params, state, 1000)  # all devices
    mesh = sharding.world_mesh(2)                # or a mesh of your own
    final, trace = sharding.batch_rollout(step, params, state, 1000, mesh=mesh)

The rollout entry points (:func:`batch_rollout`, :func:`flapper_rollout`,
:func:`flapper_cycle_means`, :func:`multirotor_rollout`) split the worlds
over every device by default (``mesh="all"``; ``mesh=None`` keeps them on
one device). A world count that does not divide the device count is padded
by repeating the last world, and the padding is cut from the results, so
they always hold exactly one row per input world. Splitting does not change
any world's result (tested bit for bit in float64).

Several hosts: start one process per host and call
``jax.distributed.initialize(coordinator_address=..., num_processes=...,
process_id=...)`` before anything else; ``jax.devices()`` then lists every
device of every host and :func:`world_mesh` spans them all. Each process
builds the same global batch (or its own slice with
``jax.make_array_from_process_local_data``) and calls the same functions; no
process pool or hand-written communication is involved.

The mesh axis is ``Auto`` (GSPMD propagation): in JAX 0.10 ``jax.make_mesh``
defaults to ``Explicit`` axes, under which MJX fails with a
``ShardingTypeError``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from flapjax.sim import rollout as _rollout
from flapjax.validation import ConfigError

WORLD_AXIS = "worlds"


def world_mesh(n_devices: int | None = None, *, devices: Sequence[Any] | None = None,
               axis_name: str = WORLD_AXIS) -> Mesh:
    """A 1-D mesh over ``devices`` (default: the first ``n_devices`` of
    ``jax.devices()``, all of them when None) with one ``Auto`` axis."""
    devs = list(jax.devices() if devices is None else devices)
    if n_devices is not None:
        if int(n_devices) != n_devices or not 1 <= n_devices <= len(devs):
            raise ConfigError(f"n_devices: must be an integer in [1, {len(devs)}], got {n_devices!r}")
        devs = devs[: int(n_devices)]
    return jax.make_mesh((len(devs),), (axis_name,), axis_types=(jax.sharding.AxisType.Auto,), devices=devs)


def _axis(mesh: Mesh) -> str:
    if len(mesh.axis_names) != 1:
        raise ConfigError(f"mesh: expected a 1-D mesh over the world axis, got axes {mesh.axis_names}")
    return mesh.axis_names[0]


def world_sharding(mesh: Mesh) -> NamedSharding:
    """Sharding that splits a leading world axis over the mesh."""
    return NamedSharding(mesh, PartitionSpec(_axis(mesh)))


def replicated(mesh: Mesh) -> NamedSharding:
    """Sharding that keeps a full copy on every device of the mesh."""
    return NamedSharding(mesh, PartitionSpec())


def _check_divisible(tree: Any, mesh: Mesh) -> int:
    n = _rollout.world_count(tree)
    k = mesh.devices.size
    if n % k:
        raise ConfigError(
            f"n_worlds: {n} worlds cannot be split evenly over {k} devices; pad with "
            f"flapjax.sim.sharding.pad_to_mesh (or flapjax.sim.rollout.pad_worlds) first"
        )
    return n


def pad_to_mesh(tree: Any, mesh: Mesh) -> tuple[Any, int]:
    """Pad the leading world axis to a multiple of the device count by
    repeating the last world; returns ``(padded, n_worlds_before)``."""
    n = _rollout.world_count(tree)
    k = mesh.devices.size
    return _rollout.pad_worlds(tree, -(-n // k) * k), n


def shard_worlds(tree: Any, mesh: Mesh, axes: Any = 0) -> Any:
    """Place a batched pytree on the mesh.

    ``axes`` is a ``jax.vmap`` ``in_axes`` prefix: leaves under 0 are split
    along their leading world axis, leaves under None are replicated.
    """
    split, full = world_sharding(mesh), replicated(mesh)
    if axes is None:
        return jax.device_put(tree, full)
    if axes == 0:
        _check_divisible(tree, mesh)
        return jax.device_put(tree, split)
    prefix = jax.tree.map(lambda a: split if a == 0 else full, axes, is_leaf=lambda a: a is None)
    batched = jax.tree.map(lambda a, t: t if a == 0 else None, axes, tree, is_leaf=lambda a: a is None)
    if jax.tree.leaves(batched):
        _check_divisible(batched, mesh)
    return jax.device_put(tree, prefix)


def sharded(fn: Callable, mesh: Mesh, *, in_axes: Any = 0, static_argnums: Sequence[int] = ()) -> Callable:
    """``jax.jit(fn)`` whose array arguments are placed on ``mesh`` first.

    ``in_axes`` (one entry per positional argument, or one for all) says
    which arguments carry a leading world axis (0, split over the mesh) and
    which are shared (None, replicated), as for ``jax.vmap``. The compiled
    function is partitioned by XLA along that axis; outputs keep the world
    axis split (leaves without one are replicated).
    """
    static = tuple(static_argnums)
    jitted = jax.jit(fn, static_argnums=static)

    def call(*args):
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ConfigError(f"in_axes: {len(axes)} entries for {len(args)} arguments")
        placed = [a if i in static else shard_worlds(a, mesh, ax) for i, (a, ax) in enumerate(zip(args, axes))]
        return jitted(*placed)

    call.jitted = jitted  # for .lower(...) and compile statistics
    return call


MeshArg = Union[Mesh, str, None]
#: Default ``mesh`` of the rollout entry points: every device JAX has.
ALL_DEVICES = "all"


def resolve_mesh(mesh: MeshArg) -> Mesh | None:
    """The mesh an entry point uses: ``"all"`` -> :func:`world_mesh` over
    every device (None when there is only one), a :class:`Mesh` as given,
    None -> one device."""
    if isinstance(mesh, str):
        if mesh != ALL_DEVICES:
            raise ConfigError(f"mesh: must be a jax.sharding.Mesh, None or {ALL_DEVICES!r}, got {mesh!r}")
        return world_mesh() if len(jax.devices()) > 1 else None
    if mesh is not None and not isinstance(mesh, Mesh):
        raise ConfigError(f"mesh: must be a jax.sharding.Mesh, None or {ALL_DEVICES!r}, got {type(mesh).__name__}")
    return mesh


def _split(axes: Any, tree: Any) -> Any:
    """The leaves of ``tree`` that ``axes`` (a vmap in_axes prefix) batches."""
    if axes is None:
        return None
    if axes == 0:
        return tree
    return jax.tree.map(lambda a, t: t if a == 0 else None, axes, tree, is_leaf=lambda a: a is None)


def _pad_batched(tree: Any, axes: Any, n_target: int) -> Any:
    if axes is None:
        return tree
    if axes == 0:
        return _rollout.pad_worlds(tree, n_target)
    return jax.tree.map(lambda a, t: _rollout.pad_worlds(t, n_target) if a == 0 else t, axes, tree,
                        is_leaf=lambda a: a is None)


def _place(mesh: Mesh, trees: Sequence[Any], axes: Sequence[Any]) -> tuple[list[Any], int | None]:
    """Pad the batched leaves of ``trees`` to a multiple of the mesh size and
    place them on it; returns the placed trees and the world count before
    padding (None when nothing needed padding)."""
    batched = [b for b in (_split(a, t) for a, t in zip(axes, trees)) if b is not None and jax.tree.leaves(b)]
    n = _rollout.world_count(batched) if batched else 0
    k = mesh.devices.size
    target = -(-n // k) * k
    if target != n:
        trees = [_pad_batched(t, a, target) for t, a in zip(trees, axes)]
    return [shard_worlds(t, mesh, a) for t, a in zip(trees, axes)], (n if target != n else None)


def _unpad(out: Any, n: int | None) -> Any:
    return out if n is None else jax.tree.map(lambda x: x[:n], out)


@eqx.filter_jit
def _batch_rollout(step, params, state, n_steps, params_axes, state_axes, observe, checkpoint):
    return _rollout.batch_rollout(step, params, state, n_steps, params_axes=params_axes, state_axes=state_axes,
                                  observe=observe, checkpoint=checkpoint)


def batch_rollout(step, params, state, n_steps: int, *, mesh: MeshArg = ALL_DEVICES, params_axes: Any = 0,
                  state_axes: Any = 0, observe=None, checkpoint: bool = True):
    """:func:`flapjax.sim.rollout.batch_rollout`, jitted, with the world axis
    split over ``mesh`` (default every device; one device when None).

    ``step`` and ``observe`` are static: pass the same function objects
    again to reuse the compilation.
    """
    mesh = resolve_mesh(mesh)
    n = None
    if mesh is not None:
        (params, state), n = _place(mesh, (params, state), (params_axes, state_axes))
    return _unpad(_batch_rollout(step, params, state, int(n_steps), params_axes, state_axes, observe, checkpoint), n)


@eqx.filter_jit
def _flapper_rollout(robot, params, state, n_steps, observe, checkpoint):
    from flapjax.sim import flapper

    return jax.vmap(lambda p, s: flapper.rollout(robot, p, s, n_steps, observe=observe, checkpoint=checkpoint))(
        params, state)


def flapper_rollout(robot, params, state, n_steps: int, *, mesh: MeshArg = ALL_DEVICES, observe=None,
                    checkpoint: bool = True):
    """Open-loop rollout of batched flapper worlds (:func:`flapjax.sim.flapper.rollout`
    vmapped), world axis split over ``mesh`` (default every device)."""
    mesh = resolve_mesh(mesh)
    n = None
    if mesh is not None:
        (robot, params, state), n = _place(mesh, (robot, params, state), (None, 0, 0))
    return _unpad(_flapper_rollout(robot, params, state, int(n_steps), observe, checkpoint), n)


@eqx.filter_jit
def _flapper_cycle_means(robot, params, n_steps, discard_steps):
    from flapjax.sim import flapper

    return jax.vmap(lambda q: flapper.cycle_mean(robot, q, n_steps, discard_steps))(params)


def flapper_cycle_means(robot, params, n_steps: int, discard_steps: int, *, mesh: MeshArg = ALL_DEVICES):
    """Cycle-mean loads of batched flapper worlds (:func:`flapjax.sim.flapper.cycle_mean`
    vmapped; ``params`` from :func:`flapjax.sim.flapper.sweep_params`), world
    axis split over ``mesh`` (default every device). Pads to a multiple of
    the device count and returns exactly one row per input world."""
    mesh = resolve_mesh(mesh)
    n = None
    if mesh is not None:
        (robot, params), n = _place(mesh, (robot, params), (None, 0))
    return _unpad(_flapper_cycle_means(robot, params, int(n_steps), int(discard_steps)), n)


@eqx.filter_jit
def _multirotor_rollout(world, params, state, reference, n_steps, checkpoint):
    return jax.vmap(lambda a, b, c: world.rollout(a, b, c, n_steps, checkpoint=checkpoint))(params, state, reference)


def multirotor_rollout(world, params, state, reference, n_steps: int, *, mesh: MeshArg = ALL_DEVICES,
                       checkpoint: bool = True):
    """:meth:`flapjax.sim.multirotor.MultirotorWorld.rollout` vmapped over
    batched params (:class:`~flapjax.sim.multirotor.WorldParams`, prepared
    once per world inside, or :meth:`~flapjax.sim.multirotor.MultirotorWorld.prepare`-d),
    states and references, world axis split over ``mesh`` (default every device)."""
    mesh = resolve_mesh(mesh)
    n = None
    if mesh is not None:
        params = _prepare_unsharded(world, params)
        (params, state, reference), n = _place(mesh, (params, state, reference), (0, 0, 0))
    return _unpad(_multirotor_rollout(world, params, state, reference, int(n_steps), checkpoint), n)


@eqx.filter_jit
def _prepare_batch(world, params):
    return jax.vmap(world.prepare)(params)


def _prepare_unsharded(world, params):
    """``prepare`` (the allocation inverse: a batched LAPACK SVD) on one
    device, before the worlds are split. XLA:CPU runs every device's program
    on one shared thread pool of one thread per core, and a large batched
    LAPACK call splits its batch over that pool and waits: two devices doing
    so at once each wait for the other's thread, forever (seen at 4096
    worlds on 2 devices)."""
    from flapjax.sim.multirotor.types import Prepared

    return params if isinstance(params, Prepared) else _prepare_batch(world, params)


def shard_counts(x: jax.Array) -> list[int]:
    """Rows of the leading axis held by each device (diagnostic)."""
    return [int(np.shape(s.data)[0]) for s in x.addressable_shards]


__all__ = [
    "ALL_DEVICES",
    "WORLD_AXIS",
    "batch_rollout",
    "flapper_cycle_means",
    "flapper_rollout",
    "multirotor_rollout",
    "pad_to_mesh",
    "replicated",
    "resolve_mesh",
    "shard_counts",
    "shard_worlds",
    "sharded",
    "world_mesh",
    "world_sharding",
]
