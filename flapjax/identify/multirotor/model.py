"""The hover model: logged commands -> chain -> predicted specific force.

The logged flight replayed through the rotor chain
(:mod:`flapjax.sim.multirotor.log_replay`) gives the body force ``F_B`` at
every logged instant ``k``; the accelerometer then reads::

    a_pred,k = F_B,k / m + b          [m/s^2, body frame]

with ``b`` the accelerometer bias. The identified coefficients enter
:class:`flapjax.rotor.ChainParams` as traced leaves, so the loss is
differentiated straight through the chain.

Parameters (the fit's dict; SI units, dimensionless unless stated):
``ground_coeff`` k_g, ``wall_thrust_coeff`` c_T, ``wall_lateral_coeff`` c_L,
``wall_fade_start`` d_fade / R, ``wall_fade_width`` (d_max - d_fade) / R,
``drag_linear_{x,y,z}`` [N s/m], ``drag_quadratic_{x,y,z}`` [N s^2/m^2],
``accel_bias_{x,y,z}`` [m/s^2]; all scalars.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax import rotor
from flapjax.sim.multirotor.log_replay import HoverInputs, specific_force

AXES = ("x", "y", "z")
#: Fit parameters (scalars), in report order.
PARAMETERS = ("ground_coeff", "wall_thrust_coeff", "wall_lateral_coeff", "wall_fade_start", "wall_fade_width",
              *(f"drag_linear_{a}" for a in AXES), *(f"drag_quadratic_{a}" for a in AXES),
              *(f"accel_bias_{a}" for a in AXES))
#: Values a results file reports (the chain's names, each with ``_std``).
REPORTED = ("ground_coeff", "wall_thrust_coeff", "wall_lateral_coeff", "wall_fade_start", "wall_range",
            *(f"drag_linear_{a}" for a in AXES), *(f"drag_quadratic_{a}" for a in AXES),
            *(f"accel_bias_{a}" for a in AXES))

#: Units of :data:`REPORTED`.
UNITS = {"ground_coeff": "-", "wall_thrust_coeff": "-", "wall_lateral_coeff": "-",
         "wall_fade_start": "rotor radii", "wall_range": "rotor radii",
         **{f"drag_linear_{a}": "N s/m" for a in AXES}, **{f"drag_quadratic_{a}": "N s^2/m^2" for a in AXES},
         **{f"accel_bias_{a}": "m/s^2" for a in AXES}}

#: Parameters trained in log space (positive, nonlinear); the others enter the model linearly or nearly so.
LOG_SPACE = ("wall_fade_start", "wall_fade_width")


def _vec(params, name):
    return jnp.stack([jnp.asarray(params[f"{name}_{a}"]) for a in AXES])


def chain_params(params: dict[str, Any], base: rotor.ChainParams | None = None) -> rotor.ChainParams:
    """The :class:`~flapjax.rotor.ChainParams` of a fit parameter dict
    (allocation weights and wind from ``base``)."""
    base = rotor.ChainParams() if base is None else base
    prox = rotor.ProximityParams(
        wall_thrust_coeff=params["wall_thrust_coeff"], wall_lateral_coeff=params["wall_lateral_coeff"],
        wall_fade_start=params["wall_fade_start"],
        wall_range=params["wall_fade_start"] + params["wall_fade_width"], ground_coeff=params["ground_coeff"])
    drag = rotor.DragParams(linear=_vec(params, "drag_linear"), quadratic=_vec(params, "drag_quadratic"))
    return rotor.ChainParams(proximity=prox, drag=drag, wind=base.wind, allocation_weights=base.allocation_weights)


def predict(prof: rotor.RotorProfile, params: dict[str, Any], inputs: HoverInputs) -> Float[Array, "N 3"]:
    """(N, 3) predicted accelerometer specific force, body frame [m/s^2]:
    the chain's (:func:`flapjax.sim.multirotor.log_replay.specific_force`)
    plus the accelerometer bias."""
    return specific_force(prof, chain_params(params), inputs) + _vec(params, "accel_bias")


def initial_values() -> dict[str, float]:
    """Start values: the chain's defaults (placeholders), zero bias."""
    d = rotor.ChainParams()
    out = {
        "ground_coeff": float(d.proximity.ground_coeff),
        "wall_thrust_coeff": float(d.proximity.wall_thrust_coeff),
        "wall_lateral_coeff": float(d.proximity.wall_lateral_coeff),
        "wall_fade_start": float(d.proximity.wall_fade_start),
        "wall_fade_width": float(d.proximity.wall_range - d.proximity.wall_fade_start),
    }
    for j, a in enumerate(AXES):
        out[f"drag_linear_{a}"] = float(d.drag.linear[j])
        out[f"drag_quadratic_{a}"] = float(d.drag.quadratic[j])
        out[f"accel_bias_{a}"] = 0.0
    return out
