"""Hover quality of the per-wing robot: the acceptance numbers of a hover
record (cycle-mean tilt, tilt RMS, altitude error over the last window)."""

from __future__ import annotations

import math

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from flapjax.validation import ConfigError

Scalar = Float[Array, ""]


class HoverQuality(eqx.Module):
    """Hover quality over the last ``window`` seconds of a record (leading
    axes: any batch axes of the records).

    Attributes:
      cycle_mean_tilt: () largest |tilt| of the tilt averaged over one
        wingbeat (a moving mean over ``1 / f`` of records) [rad].
      tilt_rms: () RMS of the instantaneous |tilt| [rad].
      altitude_error: () largest instantaneous |z - z*| [m].
      position_error: () largest horizontal |p - p*| [m].
      healthy: () the world stayed finite.
    """

    cycle_mean_tilt: Scalar
    tilt_rms: Scalar
    altitude_error: Scalar
    position_error: Scalar
    healthy: Bool[Array, ""]

    def meets(self, *, cycle_mean_tilt: float = math.radians(1.0), tilt_rms: float = math.radians(3.0),
              altitude_error: float = 0.005) -> Bool[Array, "..."]:
        """Whether each world meets the bounds [rad, rad, m]."""
        return (self.healthy & (self.cycle_mean_tilt < cycle_mean_tilt) & (self.tilt_rms < tilt_rms)
                & (self.altitude_error < altitude_error))


def hover_quality(records, target: Float[Array, "3"], *, frequency: float, record_dt: float,
                  window: float = 0.5) -> HoverQuality:
    """:class:`HoverQuality` of one world's :class:`~flapjax.sim.flapper.HoverRecord` (records every
    ``record_dt`` seconds, flapping frequency ``frequency`` [Hz])."""
    n_win = max(1, int(round(window / record_dt)))
    n_cyc = max(1, int(round(1.0 / (frequency * record_dt))))
    if records.tilt.shape[0] < n_win + n_cyc:
        raise ConfigError(f"records: need at least {n_win + n_cyc} records for window={window} s, "
                          f"got {records.tilt.shape[0]}")
    tilt = records.tilt[-n_win:]
    kernel = jnp.ones(n_cyc, dtype=tilt.dtype) / n_cyc
    mean = jnp.stack([jnp.convolve(records.tilt[-(n_win + n_cyc - 1):, i], kernel, mode="valid") for i in (0, 1)], axis=1)
    pos = records.position[-n_win:] - target
    return HoverQuality(
        cycle_mean_tilt=jnp.max(jnp.linalg.norm(mean, axis=1)),
        tilt_rms=jnp.sqrt(jnp.mean(jnp.sum(tilt**2, axis=1))),
        altitude_error=jnp.max(jnp.abs(pos[:, 2])),
        position_error=jnp.max(jnp.linalg.norm(pos[:, :2], axis=1)),
        healthy=records.healthy[-1],
    )
