"""Products of a few numbers per world, written so that XLA:CPU runs them well.

A batched rollout applies many 3 x 3 (or 4 x 6) matrices to vectors, one
per world. Under ``jax.vmap`` a ``@`` becomes a batched ``dot`` that XLA:CPU
runs as its own kernel, often behind a transposed copy of its operands (a
layout change of every world's numbers), and ``jnp.cross`` adds more. Here:

- :func:`matvec` and :func:`rotate_rows` multiply and sum over the last
  axis: the sum stays a small reduction kernel that reads the operands in
  place (no transposed copy), and it is computed once, not again inside
  each of its consumers;
- :func:`rmatvec`, :func:`sum_rows`, :func:`any_rows` and
  :func:`cross_rows` combine whole rows (slices along the leading axis) and
  fuse into the elementwise kernels around them.

In the rigid X-quad rollout (4096 worlds) this made the step about a
quarter cheaper than ``@`` (benchmarks/README.md, crazyflow section).
Results equal ``@`` up to float rounding (the summation order may differ).
"""

from __future__ import annotations

import functools
import operator

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float


def sum_rows(x: Float[Array, "k ..."]) -> Float[Array, "..."]:
    """Sum over the (small, static) leading axis, one add per row."""
    return functools.reduce(operator.add, [x[i] for i in range(x.shape[0])])


def any_rows(x: Bool[Array, "k ..."]) -> Bool[Array, "..."]:
    """Logical or over the (small, static) leading axis."""
    return functools.reduce(operator.or_, [x[i] for i in range(x.shape[0])])


def matvec(m: Float[Array, "r c"], x: Float[Array, " c"]) -> Float[Array, " r"]:
    """``m @ x`` for a small matrix (r, c) and vector (c,)."""
    return jnp.sum(m * x[None, :], axis=-1)


def rmatvec(m: Float[Array, "c r"], x: Float[Array, " c"]) -> Float[Array, " r"]:
    """``m.T @ x`` for a small matrix (c, r) and vector (c,)."""
    return functools.reduce(operator.add, [m[j] * x[j] for j in range(m.shape[0])])


def rotate_rows(points: Float[Array, "k 3"], rotation: Float[Array, "3 3"]) -> Float[Array, "k 3"]:
    """``points @ rotation.T``: each row (3,) rotated by ``rotation`` (3, 3)."""
    return jnp.sum(points[:, None, :] * rotation[None, :, :], axis=-1)


def cross_rows(a: Float[Array, "... 3"], b: Float[Array, "... 3"]) -> Float[Array, "... 3"]:
    """``jnp.cross(a, b)`` along the last axis, component by component."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return jnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
