"""Saturation use over a multirotor trajectory (seed: report it with task success)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.sim.multirotor.types import StepInfo


class SaturationReport(eqx.Module):
    """Saturation use over a trajectory (seed: report it with task success).

    Attributes:
      time_fraction: (..., n) fraction of steps each rotor's command was at or
        beyond a limit [-].
      min_margin: (...) smallest control margin over the trajectory [-]
        (fraction of the thrust range; negative when saturated).
    """

    time_fraction: Float[Array, "... n"]
    min_margin: Float[Array, "..."]


def saturation_report(traj: StepInfo) -> SaturationReport:
    """Per-rotor saturation time fraction and smallest control margin of a
    trajectory with time axis ``-2`` for per-rotor fields (batched or not)."""
    return SaturationReport(time_fraction=jnp.mean(traj.saturated.astype(traj.control_margin.dtype), axis=-2),
                            min_margin=jnp.min(traj.control_margin, axis=-1))
