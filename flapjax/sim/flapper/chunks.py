"""Running a batch of worlds in fixed-size chunks, one compiled program per
chunk shape: :func:`map_in_chunks`, keyed by :func:`program_key` so a few
rows reuse an already compiled chunk (padded) instead of compiling another.
"""

from __future__ import annotations

from typing import Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.sim.rollout import pad_worlds, slice_worlds, world_count
from flapjax.validation import check_int

#: Chunk sizes of the programs compiled so far, per program (see :func:`map_in_chunks`).
_COMPILED_CHUNKS: dict[Any, set[int]] = {}

#: A compiled chunk of up to this many worlds is reused for fewer rows.
REUSE_CHUNK_MAX = 16


def program_key(*static: Any, per_world: Any) -> Any:
    """A hashable key of the program that ``static`` (robots, step counts)
    and one world of ``per_world`` (leading world axis dropped) compile to:
    tree structure, shapes and dtypes; None when something is unhashable."""
    leaves, treedef = jax.tree.flatten((static, per_world))
    n_static = len(jax.tree.leaves(static))

    def leaf(i, x):
        if eqx.is_array(x):
            shape = np.shape(x)[1:] if i >= n_static else np.shape(x)
            return (shape, str(jnp.result_type(x)), bool(getattr(x, "weak_type", False)))
        return x

    key = (treedef, tuple(leaf(i, x) for i, x in enumerate(leaves)))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def map_in_chunks(fn: Callable[[Any], Any], batched: Any, batch_size: int, *, key: Any = None) -> Any:
    """``fn`` over the leading world axis of ``batched`` in chunks of
    ``batch_size`` worlds (the last chunk padded by repeating its last world,
    so every chunk has one shape and one compilation); results concatenated
    with the padding dropped.

    With a program ``key`` (:func:`program_key`), rows that fit in one chunk
    of a size already compiled for that key (up to :data:`REUSE_CHUNK_MAX`
    worlds) run padded in that chunk instead of compiling another program:
    running a few padded worlds costs far less than a compilation.
    """
    size = check_int("batch_size", batch_size, 1)
    n = world_count(batched)
    if key is not None:
        compiled = _COMPILED_CHUNKS.setdefault(key, set())
        fits = [c for c in compiled if n <= c <= REUSE_CHUNK_MAX]
        if size not in compiled and n <= size and fits:
            size = min(fits)
        compiled.add(size)
    n_pad = -(-n // size) * size
    padded = pad_worlds(batched, n_pad)
    chunks = [fn(slice_worlds(padded, i, i + size)) for i in range(0, n_pad, size)]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs)[:n], *chunks)
