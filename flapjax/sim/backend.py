"""One step of the dynamics, for each backend, and the divergence guard.

A robot chooses its backend once, at construction, and then calls one
``advance`` function per step; nothing inside a step asks which backend it
runs on. Every robot turns its physics into one body wrench ``[F; tau]``
(world frame, about the centre of mass, the convention of MuJoCo's
``xfrc_applied``), so the backends share that input:

- :func:`advance_mjx`: the wrench into ``xfrc_applied`` of one body, then
  ``mjx.step`` (contacts, constraint solver);
- :func:`advance_mjx_smooth`: the constraint-free step of a model without
  contact or equality rows, after the caller wrote ``xfrc_applied``,
  ``qfrc_applied`` and ``ctrl`` and ran ``fwd_position``/``fwd_velocity``
  (actuation, smooth acceleration, semi-implicit Euler);
- :func:`advance_rigid`: :func:`flapjax.sim.rigid.step`, the same
  semi-implicit Euler for one free body in pure JAX.

:func:`keep_good` and :func:`is_finite_state` make the guard that freezes a
world whose state turned non-finite, so one bad world cannot poison a batch.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float
from mujoco import mjx

from flapjax.sim import rigid

BACKENDS = ("mjx", "rigid")


def keep_good(ok: Bool[Array, ""], new: Any, old: Any) -> Any:
    """``new`` where ``ok``, else ``old``, leaf by leaf over two pytrees of the
    same structure (the divergence guard)."""
    return jax.tree.map(lambda a, b: jnp.where(ok, a, b), new, old)


def is_finite_state(qpos: Float[Array, " nq"], qvel: Float[Array, " nv"]) -> Bool[Array, ""]:
    """() True when every entry of ``qpos`` and ``qvel`` is finite."""
    return jnp.all(jnp.isfinite(qpos)) & jnp.all(jnp.isfinite(qvel))


def advance_mjx(model: mjx.Model, data: mjx.Data, body: int, wrench_world: Float[Array, "6"]) -> mjx.Data:
    """``mjx.step`` with ``wrench_world`` (6,) ``[F; tau]`` [N, N m] (world
    frame, about the CoM) on ``body`` and no other applied body wrench.

    The kinematic fields of the result describe the configuration before the
    step (``mjx.step`` integrates last): read the state from ``qpos``/``qvel``
    (docs/mjx_notes.md, One-step lag).
    """
    return mjx.step(model, with_body_wrench(data, body, wrench_world))


def with_body_wrench(data: mjx.Data, body: int, wrench_world: Float[Array, "6"]) -> mjx.Data:
    """``data`` with ``wrench_world`` (6,) ``[F; tau]`` [N, N m] as the only
    applied body wrench, on ``body`` (``xfrc_applied``)."""
    xfrc = jnp.zeros_like(data.xfrc_applied).at[body].set(wrench_world.astype(data.xfrc_applied.dtype))
    return data.replace(xfrc_applied=xfrc)


def advance_mjx_smooth(model: mjx.Model, data: mjx.Data) -> mjx.Data:
    """Constraint-free step: actuation, smooth acceleration (``qacc =
    qacc_smooth``) and MJX's semi-implicit Euler.

    For a model without contact or equality rows; the caller has run
    ``fwd_position`` and ``fwd_velocity`` and written ``xfrc_applied``,
    ``qfrc_applied`` and ``ctrl``.
    """
    data = mjx.fwd_actuation(model, data)
    data = mjx.fwd_acceleration(model, data)
    data = data.replace(qacc=data.qacc_smooth)
    return mjx.euler(model, data)


def advance_rigid(body: rigid.PreparedBody | rigid.RigidBody, state: rigid.RigidState,
                  wrench_world: Float[Array, "6"], dt) -> rigid.RigidState:
    """One semi-implicit Euler step of the free body under ``wrench_world``
    (6,) ``[F; tau]`` [N, N m] (world frame, about the CoM) for ``dt`` [s]."""
    return rigid.step(body, state, wrench_world, dt)
