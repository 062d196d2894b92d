"""The pytrees of a task's worlds: :class:`EnvState` (one world's whole
state, what ``reset`` returns and ``step`` maps) and :class:`TaskCommon`
(the per-world constants every task has)."""

from __future__ import annotations

from typing import Any

import equinox as eqx
from jaxtyping import Array, Float, UInt32

from flapjax.sim.multirotor import WorldParams, WorldState


class EnvState(eqx.Module):
    """State of one environment world.

    Attributes:
      world: physics state (MJX data, actuator, turbulence, controller).
      params: this world's randomized physical parameters.
      task: task-specific constants of this world (goal, colours, keys).
      obs: (obs_size,) observation.
      reward: () reward of the last step.
      done: () 1.0 at the end of the episode or after divergence.
      metrics: per-step values, ``{name: ()}``.
      info: episode accumulators, ``{name: ()}`` (``step`` counts env steps).
    """

    world: WorldState
    params: WorldParams
    task: Any
    obs: Float[Array, " obs"]
    reward: Float[Array, ""]
    done: Float[Array, ""]
    metrics: dict
    info: dict


class TaskCommon(eqx.Module):
    """Per-world constants every task has.

    Attributes:
      rgba: (ngeom, 4) geom colours written into the world's MJX model.
      obs_key: (2,) uint32 words of the observation-noise stream
        (:mod:`flapjax.rng`; step k draws counter k).
      start: (3,) CoM start position [m]; yaw: () start heading [rad].
    """

    rgba: Float[Array, "g 4"]
    obs_key: UInt32[Array, "2"]
    start: Float[Array, "3"]
    yaw: Float[Array, ""]
