"""Wrench allocation: desired body wrench -> rotor thrust commands (chain step 1).

Column ``i`` of the 6 x n allocation matrix is ``[a_i; p_i x a_i - s_i kappa_i a_i]``
(docs/physics.md, Allocation), so the body wrench ``[F; tau]`` about
the centre of mass produced by thrusts ``T`` is ``B @ T``.

Commands are the weighted minimum-norm least-squares solution
``T = W^-1/2 (B W^-1/2)^+ w``: for a fully actuated layout ``B T = w`` exactly;
for an under-actuated one (coplanar rotors: collective thrust and three
torques) ``B T`` is the projection of ``w`` on the reachable subspace
``range(B)`` and the remainder is reported as unreachable. Thrust limits are
not considered here; the saturation step clamps afterwards, as in the seed.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.rotor.profile import RotorProfile
from flapjax.rotor.unrolled import matvec, rmatvec


class Allocation(eqx.Module):
    """Result of :func:`allocate_with_residual`.

    Attributes:
      thrust: (n,) rotor thrust commands [N] (before saturation).
      reachable: (6,) body wrench ``B @ thrust`` [N, N m].
      unreachable: (6,) requested minus reachable wrench [N, N m]; zero for a
        fully actuated layout.
    """

    thrust: Float[Array, " n"]
    reachable: Float[Array, "6"]
    unreachable: Float[Array, "6"]


def rotor_moment_arms(prof: RotorProfile) -> Float[Array, "n 3"]:
    """Per-rotor body torque per newton of thrust, ``p_i x a_i - s_i kappa_i a_i`` [m]."""
    return jnp.cross(prof.positions, prof.axes) - (prof.spins * prof.torque_coeff)[:, None] * prof.axes


def allocation_matrix(prof: RotorProfile) -> Float[Array, "6 n"]:
    """The 6 x n matrix ``B`` with body wrench ``[F; tau] = B @ T`` [N, N m]."""
    return jnp.concatenate([prof.axes.T, rotor_moment_arms(prof).T], axis=0)


def _pinv_rtol(dtype) -> float:
    """Relative cut-off for singular values of ``B``: sqrt(machine epsilon).

    The unreachable directions of coplanar layouts have singular values that
    are zero up to rounding (~eps); the smallest genuine one of a multirotor
    is a few percent of the largest. ``sqrt(eps)`` (1.5e-8 in float64, 3.5e-4
    in float32) separates the two in both precisions; a fixed tiny cut-off
    would invert float32 rounding noise into huge thrusts.
    """
    return float(jnp.finfo(dtype).eps) ** 0.5


def allocation_inverse(prof: RotorProfile, *, weights: Float[Array, " n"] | None = None) -> Float[Array, "n 6"]:
    """(n, 6) weighted minimum-norm inverse ``A`` with thrusts ``T = A @ w`` [N per N, N m].

    A pseudo-inverse costs an SVD: rollouts compute it once per world (the
    airframe does not change during a rollout) and pass it to
    :func:`allocate_with_residual` / :func:`flapjax.rotor.realize_wrench`.

    Args:
      prof: the airframe.
      weights: (n,) positive cost weights ``W`` of ``sum W_i T_i^2`` [-];
        ``None`` means equal weights (plain pseudo-inverse).
    """
    b = allocation_matrix(prof)
    if weights is None:
        scale = jnp.ones(prof.n_rotors, dtype=b.dtype)
    else:
        scale = 1.0 / jnp.sqrt(weights)
    bs = b * scale[None, :]
    return scale[:, None] * jnp.linalg.pinv(bs, rtol=_pinv_rtol(bs.dtype))


def allocate_with_residual(
    prof: RotorProfile,
    wrench: Float[Array, "6"],
    *,
    weights: Float[Array, " n"] | None = None,
    inverse: Float[Array, "n 6"] | None = None,
) -> Allocation:
    """Weighted minimum-norm thrust commands and the unreachable part of ``wrench``.

    Args:
      prof: the airframe.
      wrench: (6,) desired body wrench ``[F; tau]`` about the CoM [N, N m].
      weights: (n,) positive cost weights ``W`` of ``sum W_i T_i^2`` [-];
        ``None`` means equal weights (plain pseudo-inverse).
      inverse: (n, 6) precomputed :func:`allocation_inverse` (then ``weights``
        is not used); ``None`` computes it here.
    """
    if inverse is None:
        inverse = allocation_inverse(prof, weights=weights)
    thrust = matvec(inverse, wrench)
    reachable = jnp.concatenate([rmatvec(prof.axes, thrust), rmatvec(rotor_moment_arms(prof), thrust)])
    return Allocation(thrust=thrust, reachable=reachable, unreachable=wrench - reachable)


def allocate(
    prof: RotorProfile,
    wrench: Float[Array, "6"],
    *,
    weights: Float[Array, " n"] | None = None,
) -> Float[Array, " n"]:
    """(n,) thrust commands [N] realizing the reachable part of body ``wrench``."""
    return allocate_with_residual(prof, wrench, weights=weights).thrust


def reachable_projector(prof: RotorProfile) -> Float[Array, "6 6"]:
    """(6, 6) orthogonal projector ``B B^+`` onto the reachable wrench subspace."""
    b = allocation_matrix(prof)
    return b @ jnp.linalg.pinv(b, rtol=_pinv_rtol(b.dtype))
