"""The cycle-averaged model's control term of a robot steered by channels
(:mod:`flapjax.sim.flapper.channels`): a control matrix B (3, nc) from the
channel vector u (nc,) to body moments at f_ref, and a thrust tilt T (2, nc)
that turns the thrust direction (:mod:`flapjax.aero.cycle_averaged`).

The plate robot is the case ``B = [[k_roll, 0], [0, -k_pitch], [0, 0]]``,
``T = [[0, 1], [1, 0]]`` (u = (delta_p, delta_r)); its parameters keep
``control_matrix = None`` and the gains, so its files and numbers are those
it always had.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.validation import ConfigError


def check_control_matrix(matrix, tilt) -> None:
    """Shapes of the control matrix (3, nc) and thrust tilt (2, nc) (either
    may be None; a tilt needs a matrix); :class:`ConfigError` naming the field."""
    if matrix is None:
        if tilt is not None:
            raise ConfigError("CycleAveragedParams.thrust_tilt: needs a control_matrix (without one the plate "
                              "robot's plates tilt the thrust)")
        return
    if jnp.ndim(matrix) != 2 or jnp.shape(matrix)[0] != 3:
        raise ConfigError(f"CycleAveragedParams.control_matrix: expected shape (3, nc) (body x, y, z moment per "
                          f"channel), got shape {jnp.shape(matrix)}")
    if tilt is not None and jnp.shape(tilt) != (2, jnp.shape(matrix)[1]):
        raise ConfigError(f"CycleAveragedParams.thrust_tilt: expected shape (2, {jnp.shape(matrix)[1]}) (one column "
                          f"per control channel), got shape {jnp.shape(tilt)}")
    for name, value in (("control_matrix", matrix), ("thrust_tilt", tilt)):
        if value is not None and not isinstance(value, jax.core.Tracer) and not np.all(np.isfinite(value)):
            raise ConfigError(f"CycleAveragedParams.{name}: must be finite, got {np.asarray(value).tolist()}")


def channel_control(matrix: Float[Array, "3 nc"], tilt: Float[Array, "2 nc"] | None,
                    channels: Float[Array, " nc"]) -> tuple[Float[Array, "3"], Float[Array, "3"]]:
    """(thrust direction n_B (3,) [-], control moment at f_ref ``B u`` (3,)
    [N m]) of the channel vector u (nc,); ``tilt`` None: n_B = e_z."""
    nc = jnp.shape(matrix)[1]
    if jnp.shape(channels) != (nc,):
        raise ConfigError(f"plate: expected the channel vector, shape ({nc},) (the control matrix's columns), "
                          f"got shape {jnp.shape(channels)}")
    channels = jnp.asarray(channels)
    t = jnp.zeros((2,), dtype=jnp.result_type(channels, float)) if tilt is None else tilt @ channels
    n_body = jnp.stack([-t[0], -t[1], jnp.ones_like(t[0])]) / jnp.sqrt(1.0 + t @ t)
    return n_body, matrix @ channels
