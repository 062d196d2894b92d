"""Counter-based random streams: the hash is JAX's Threefry, the draws are
standard normal, streams and counters are independent, nothing loops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.random import threefry2x32_p
from scipy import stats

from flapjax import rng


def test_threefry_is_bit_identical_to_jax():
    keys = jax.random.bits(jax.random.key(0), (5, 2), jnp.uint32)
    x0 = jax.random.bits(jax.random.key(1), (5, 257), jnp.uint32)
    x1 = jax.random.bits(jax.random.key(2), (5, 257), jnp.uint32)
    for k, a, b in zip(keys, x0, x1):
        ours = rng.threefry2x32(k, a, b)
        ref = threefry2x32_p.bind(k[0], k[1], a, b)
        np.testing.assert_array_equal(np.asarray(ours[0]), np.asarray(ref[0]))
        np.testing.assert_array_equal(np.asarray(ours[1]), np.asarray(ref[1]))
    # Known-answer vector of the Threefry-2x32 reference (Salmon et al. 2011, 20 rounds).
    out = rng.threefry2x32(jnp.array([0x13198A2E, 0x03707344], jnp.uint32), jnp.uint32(0x243F6A88),
                           jnp.uint32(0x85A308D3))
    assert (int(out[0]), int(out[1])) == (0xC4923A9C, 0x483DF7A0)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_normals_are_standard_normal(dtype):
    key = rng.stream_words(jax.random.key(3))
    z = np.asarray(jax.jit(jax.vmap(lambda c: rng.normals(key, c, 5, dtype)))(jnp.arange(40000)))
    assert z.dtype == dtype and z.shape == (40000, 5)
    flat = z.ravel()
    assert abs(flat.mean()) < 0.01 and abs(flat.std() - 1.0) < 0.01
    assert stats.kstest(flat, "norm").pvalue > 1e-3
    # Lanes and consecutive counters are uncorrelated.
    assert np.abs(np.corrcoef(z.T) - np.eye(5)).max() < 0.03
    assert abs(np.corrcoef(z[:-1, 0], z[1:, 0])[0, 1]) < 0.03


def test_draws_are_deterministic_and_differ_between_counters_and_streams():
    k1, k2 = rng.stream_words(jax.random.key(4)), rng.stream_words(jax.random.key(5))
    a = rng.normals(k1, 7, 12)
    np.testing.assert_array_equal(a, rng.normals(k1, 7, 12))
    assert not np.any(np.asarray(a) == np.asarray(rng.normals(k1, 8, 12)))
    assert not np.any(np.asarray(a) == np.asarray(rng.normals(k2, 7, 12)))
    # A prefix of a longer draw is the shorter draw (lane j depends only on j).
    np.testing.assert_array_equal(rng.normals(k1, 7, 3), a[:3])


def test_stacked_streams_equal_separate_calls():
    k1, k2 = rng.stream_words(jax.random.key(4)), rng.stream_words(jax.random.key(5))
    both = rng.normals(jnp.stack([k1, k2]), 11, 6)
    np.testing.assert_array_equal(both[0], rng.normals(k1, 11, 6))
    np.testing.assert_array_equal(both[1], rng.normals(k2, 11, 6))


@pytest.mark.parametrize("sizes", [(12, 3), (16, 3), (2, 5, 1)])
def test_packed_streams_equal_separate_calls(sizes):
    keys = jnp.stack([rng.stream_words(jax.random.key(k)) for k in range(len(sizes))])
    packed = rng.packed_lanes(keys, 13, sizes)
    assert packed.shape[0] % 8 == 0 and packed.shape[0] >= sum(sizes)
    start = 0
    for s, n in enumerate(sizes):
        np.testing.assert_array_equal(packed[start:start + n], rng.normals(keys[s], 13, n))
        start += n


def test_stream_words_accept_typed_and_raw_keys():
    typed = rng.stream_words(jax.random.key(9))
    raw = rng.stream_words(jax.random.PRNGKey(9))
    assert typed.shape == (2,) and typed.dtype == jnp.uint32
    np.testing.assert_array_equal(typed, raw)


def test_draws_compile_without_loops():
    """JAX's own Threefry lowers to a rolled loop on CPU; these draws must not."""
    keys = jnp.zeros((64, 2, 2), jnp.uint32)
    f = jax.jit(jax.vmap(lambda k: rng.normals(k, 3, 15, jnp.float32)))
    text = f.lower(keys).compile().as_text()
    assert " while(" not in text
