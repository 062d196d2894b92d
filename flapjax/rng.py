"""Counter-based random streams for per-step noise inside rollouts.

A world draws a few standard normals every step (sensor noise, command
noise, turbulence). Splitting a JAX key every step and drawing from the
halves costs four Threefry calls per step, and on CPU JAX lowers each one
as a rolled loop; in a batched rollout those loops took about half the step
time of the rigid-body backend. Here a stream is a fixed pair of 32-bit
words, and draw number ``counter`` (the step index) of a stream is the
Threefry-2x32 hash of ``(counter, j)``, j = 0, 1, ...: no key is split, no
state is carried besides the step index, and the hash is written out round
by round so XLA fuses it with the arithmetic around it.

The hash is Threefry-2x32 with 20 rounds, bit-identical to
``jax.extend.random.threefry2x32_p`` (tested); only its lowering differs.
Streams are derived from ordinary JAX keys with :func:`stream_words`, so
seeding, ``fold_in`` and ``split`` stay JAX's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray, UInt32

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)
_LANES = 8


def _rotl(x, r: int):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key: UInt32[Array, "... 2"], x0: UInt32[Array, "..."], x1: UInt32[Array, "..."]
                 ) -> tuple[UInt32[Array, "..."], UInt32[Array, "..."]]:
    """Threefry-2x32 (20 rounds) of the counter pairs ``(x0, x1)`` under ``key``.

    Args:
      key: (..., 2) uint32 key words (the last axis holds the pair).
      x0, x1: uint32 counter words; the key's leading shape and both
        counters broadcast against each other.

    Returns:
      The two uint32 output words, each of the broadcast shape.
    """
    k0, k1 = key[..., 0], key[..., 1]
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0, x1 = jnp.broadcast_arrays(jnp.asarray(x0, jnp.uint32) + k0, jnp.asarray(x1, jnp.uint32) + k1)
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def stream_words(key: PRNGKeyArray) -> UInt32[Array, "2"]:
    """(2,) uint32 words of a counter-based stream derived from a JAX key
    (typed or raw, any implementation)."""
    return jax.random.bits(key, (2,), jnp.uint32)


def _open_unit(hi, lo, dtype):
    """Uniform in the open interval (0, 1) from random words, centred on a
    grid of 2^23 (float32) or 2^52 (float64) cells so that ``2 u - 1`` is
    exact and symmetric about 0."""
    if jnp.dtype(dtype) == jnp.float64:
        k = (hi >> np.uint32(6)).astype(jnp.float64) * 2.0**26 + (lo >> np.uint32(6)).astype(jnp.float64)
        return (k + 0.5) * 2.0**-52
    k = ((hi ^ lo) >> np.uint32(9)).astype(dtype)
    return (k + 0.5) * jnp.asarray(2.0**-23, dtype)


def normal_lanes(key: UInt32[Array, "... 2"], counter, n: int, dtype=None) -> Float[Array, "... m"]:
    """:func:`normals` padded to whole vector lanes: (..., m) with m the
    multiple of 8 at or above ``n``; the first ``n`` lanes are the draw."""
    dtype = jnp.zeros(()).dtype if dtype is None else jnp.dtype(dtype)
    # On CPU, XLA vectorizes a batched (worlds, ..., m) computation only when
    # m fills whole vector registers (measured: 12 draws cost 2.2x as much as 16).
    m = -(-n // _LANES) * _LANES
    key = jnp.asarray(key)
    hi, lo = threefry2x32(key[..., None, :], jnp.asarray(counter).astype(jnp.uint32), jnp.arange(m, dtype=jnp.uint32))
    u = _open_unit(hi, lo, dtype)
    return jnp.sqrt(jnp.asarray(2.0, dtype)) * jax.lax.erf_inv(2.0 * u - 1.0)


def normals(key: UInt32[Array, "... 2"], counter, n: int, dtype=None) -> Float[Array, "... n"]:
    """Draw number ``counter`` of one or several streams: (..., n) independent
    standard normals.

    ``key`` is one stream's (2,) words or several streams' stacked (s, 2)
    words (one call for all of them is cheaper than one call each). Distinct
    counters give independent draws; the same ``(key, counter)`` always gives
    the same draw. ``counter`` is a uint32-convertible scalar (e.g. the step
    index). ``dtype`` defaults to JAX's default float. Inverse-CDF transform
    of a uniform on a symmetric open grid: float32 draws reach about 5.3
    standard deviations, float64 draws about 8.1.
    """
    return normal_lanes(key, counter, n, dtype)[..., :n]


def packed_lanes(keys: UInt32[Array, "s 2"], counter, sizes: tuple[int, ...], dtype=None) -> Float[Array, " m"]:
    """Draw number ``counter`` of several streams packed into one vector.

    Stream ``s`` fills ``sizes[s]`` consecutive lanes with exactly the values
    ``normals(keys[s], counter, sizes[s])``; the vector is padded to a
    multiple of 8 lanes (see :func:`normal_lanes`). One hash and one
    inverse-CDF evaluation serve all streams, so small draws from several
    streams cost one vector instead of one each.

    Returns:
      (m,) lanes; stream ``s`` occupies ``[sum(sizes[:s]), sum(sizes[:s+1]))``.
    """
    dtype = jnp.zeros(()).dtype if dtype is None else jnp.dtype(dtype)
    total = sum(sizes)
    m = -(-total // _LANES) * _LANES
    owner = np.concatenate([np.full(n, s) for s, n in enumerate(sizes)] + [np.zeros(m - total, int)])
    lane = np.concatenate([np.arange(n) for n in sizes] + [np.arange(m - total)]).astype(np.uint32)
    keys = jnp.asarray(keys)
    word = [keys[0, w] for w in (0, 1)]
    for s in range(1, len(sizes)):
        word = [jnp.where(owner == s, keys[s, w], word[w]) for w in (0, 1)]
    hi, lo = threefry2x32(jnp.stack(word, axis=-1), jnp.asarray(counter).astype(jnp.uint32), jnp.asarray(lane))
    u = _open_unit(hi, lo, dtype)
    return jnp.sqrt(jnp.asarray(2.0, dtype)) * jax.lax.erf_inv(2.0 * u - 1.0)
