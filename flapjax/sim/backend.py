"""The backend protocol: the stages every physics backend provides to a robot,
the shared steps they are built from, and the divergence guard.

A robot chooses its backend by name (one of :data:`BACKENDS`: ``"mjx"``,
MuJoCo MJX; ``"rigid"``, pure JAX) once, at construction, and then runs its
step through the four stages of that backend's :class:`Backend`; nothing
inside a step asks which backend it runs on. Both robots register their
backends under the same names with :func:`registry`
(:data:`flapjax.sim.flapper.backends.STAGES`,
:data:`flapjax.sim.multirotor.backends.STAGES`) and look one up as
``STAGES[robot.backend]``.

Every robot turns its physics into body wrenches ``[F; tau]`` (world frame,
about the centre of mass, the convention of MuJoCo's ``xfrc_applied``), so
the backends' advance stages share these steps:

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

import dataclasses
import types
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float
from mujoco import mjx

from flapjax.sim import rigid
from flapjax.validation import ConfigError, check_choice

#: The backend names a robot is built with.
BACKENDS = ("mjx", "rigid")


@dataclasses.dataclass(frozen=True)
class Backend:
    """The stages one physics backend provides to one robot.

    Each stage takes the robot handle first (a
    :class:`flapjax.sim.flapper.FlapperRobot` or a
    :class:`flapjax.sim.multirotor.MultirotorWorld`); the arguments after it
    are the robot's own. ``data`` is the backend's state of one world
    (``mjx.Data``, or :class:`flapjax.sim.rigid.RigidState` for a single
    pure-JAX body); ``model`` is what the ``model`` stage built (the
    multirotor passes its ``Prepared`` world, which holds it next to the
    parameters). No stage has a batch axis: ``jax.vmap`` adds it.

    Attributes:
      name: the backend's name, one of :data:`BACKENDS`.
      model: ``(robot, params) -> model``: the backend's model of one world
        built from that world's parameters (an ``mjx.Model``, or the
        pure-JAX body or joint tree's model).
      initial: ``(robot, params, *pose) -> data``: the backend's state of one
        world at the start pose the robot's ``init_state``/``reset`` was given.
      read: ``(robot, model, data) -> (data, ...)`` or the robot's state
        record: the current state with fresh kinematics and velocities, as
        the step's later stages read it (what a ``mjx.step`` left stale is
        recomputed: docs/mjx_notes.md, One-step lag).
      advance: ``(robot, model, data, *loads) -> data`` or ``(data, ...)``:
        one step of length ``dt`` under the applied loads (at least one body
        wrench ``[F; tau]`` [N, N m], world frame, about the CoM).
    """

    name: str
    model: Callable
    initial: Callable
    read: Callable
    advance: Callable

    def __post_init__(self):
        check_choice("Backend.name", self.name, BACKENDS)


def registry(*backends: Backend) -> Mapping[str, Backend]:
    """One robot's backends by name, read-only: each of :data:`BACKENDS`
    exactly once (a robot without one of them would fail only when built
    with it)."""
    names = [b.name for b in backends]
    if sorted(names) != sorted(BACKENDS):
        raise ConfigError(f"backends: one Backend for each of {BACKENDS} expected, got {tuple(names)}")
    return types.MappingProxyType({b.name: b for b in sorted(backends, key=lambda b: BACKENDS.index(b.name))})


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
