"""The identified parameters of a flight log and their normalized form:
positive ones fitted as ``start * exp(z)``, signed ones as
``start + scale * z``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams

#: Identified model parameters: name -> unit.
FLIGHT_PARAMETERS = {
    "k_f": "N/Hz^2",
    "k_v": "N s/m",
    "k_roll": "N m/rad",
    "k_pitch": "N m/rad",
    "D_w_x": "N m s/rad",
    "D_w_y": "N m s/rad",
    "L_v": "N m s/m",
    "M_u": "N m s/m",
    "roll_offset": "rad",
    "pitch_offset": "rad",
}
_POSITIVE = ("k_f", "k_v", "k_roll", "k_pitch", "D_w_x", "D_w_y")
_LINEAR_SCALE = {"L_v": 1e-3, "M_u": 1e-3, "roll_offset": 1e-2, "pitch_offset": 1e-2}


def start_values(base: CycleAveragedParams) -> dict[str, float]:
    """The parameters' start values: ``base``'s, zero attitude offsets."""
    return {
        "k_f": float(base.lift_coefficient), "k_v": float(base.horizontal_damping), "k_roll": float(base.roll_gain),
        "k_pitch": float(base.pitch_gain), "D_w_x": float(base.rate_damping[0]), "D_w_y": float(base.rate_damping[1]),
        "L_v": float(base.roll_speed_coupling), "M_u": float(base.pitch_speed_coupling),
        "roll_offset": 0.0, "pitch_offset": 0.0,
    }


def decode(z, start: dict[str, float]) -> dict[str, jax.Array]:
    """Physical values from the normalized vector: positive ones
    ``start * exp(z)``, signed ones ``start + scale * z``."""
    out = {}
    for i, name in enumerate(FLIGHT_PARAMETERS):
        out[name] = start[name] * jnp.exp(z[i]) if name in _POSITIVE else start[name] + _LINEAR_SCALE[name] * z[i]
    return out


#: A positive parameter fitted below this fraction of its start value is at its bound, zero.
AT_BOUND = 1e-3


def at_bound(values: dict[str, float], start: dict[str, float]) -> list[str]:
    """The positive parameters the fit drove to their bound, zero (below
    :data:`AT_BOUND` times their start value): the data ask for a value at
    or below zero, which the model does not allow, and a linearized standard
    deviation there (value x that of the exponent) would read as a precise
    zero."""
    return [name for name in _POSITIVE if values[name] < AT_BOUND * start[name]]


def std_physical(values: dict[str, float], std_z: np.ndarray, bounded=()) -> dict[str, float | None]:
    """Standard deviations [SI] from those of the normalized vector ``std_z``;
    ``None`` for the parameters ``bounded`` (:func:`at_bound`)."""
    return {name: None if name in bounded else
            float(values[name] * std_z[i]) if name in _POSITIVE else float(_LINEAR_SCALE[name] * std_z[i])
            for i, name in enumerate(FLIGHT_PARAMETERS)}
