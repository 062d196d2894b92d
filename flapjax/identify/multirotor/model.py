"""The hover model: logged commands -> chain -> predicted specific force.

For every logged instant ``k`` the rotor chain of :mod:`flapjax.rotor.chain`
runs on the logged thrust commands ``c_k``: saturation, the actuator lag
replayed over the log from the steady state of the first command (so the
rotor speed ``u_k`` is the one the logged command history produced), ground
and near-wall factors and the lateral wall force from the per-rotor
distances of the logged pose in the logged scene
(:func:`flapjax.rotor.rotor_proximity`), the realized rotor wrench and the
body drag on the logged velocity (no wind: an indoor flight). The
accelerometer then reads::

    a_pred,k = F_B,k / m + b          [m/s^2, body frame]

with ``F_B`` the chain's body force and ``b`` the accelerometer bias. The
identified coefficients enter :class:`flapjax.rotor.ChainParams` as traced
leaves, so the loss is differentiated straight through the chain.

Parameters (the fit's dict; SI units, dimensionless unless stated):
``ground_coeff`` k_g, ``wall_thrust_coeff`` c_T, ``wall_lateral_coeff`` c_L,
``wall_fade_start`` d_fade / R, ``wall_fade_width`` (d_max - d_fade) / R,
``drag_linear_{x,y,z}`` [N s/m], ``drag_quadratic_{x,y,z}`` [N s^2/m^2],
``accel_bias_{x,y,z}`` [m/s^2]; all scalars.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax import rotor
from flapjax.data.hover_log import HoverLog
from flapjax.math import quat_to_mat
from flapjax.validation import ConfigError

#: Chain switches of the hover model: everything but wind (indoor flights).
HOVER_OPTIONS = rotor.ChainOptions(saturation=True, actuator=True, ground_effect=True, wall_effect=True, drag=True,
                                   wind=False, gusts=False, turbulence=False, command_noise=False)

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


class HoverInputs(eqx.Module):
    """What the model needs per logged instant (leading axis N).

    Attributes:
      thrust_command: (N, n) logged thrust commands [N].
      speed: (N, n) replayed normalized rotor speed before each instant [-].
      proximity: per-rotor distances and wall normals (body frame).
      rotation: (N, 3, 3) body-to-world rotation [-].
      velocity_body: (N, 3) body-frame velocity [m/s].
      dt: (N,) step to the next instant [s].
    """

    thrust_command: Float[Array, "N n"]
    speed: Float[Array, "N n"]
    proximity: rotor.ProximityInput
    rotation: Float[Array, "N 3 3"]
    velocity_body: Float[Array, "N 3"]
    dt: Float[Array, " N"]

    def rows(self, index) -> "HoverInputs":
        """The rows ``index`` (a slice or an index array)."""
        return jax.tree.map(lambda x: x[index], self)


def replay_actuator(prof: rotor.RotorProfile, commands, dt) -> Float[Array, "N n"]:
    """(N, n) rotor speeds before each instant: the actuator of the chain
    driven by the clamped logged ``commands`` (N, n) [N] with steps ``dt``
    (N,) [s], from the steady state of the first command."""
    clamped = jnp.clip(commands, prof.thrust_min, prof.thrust_max)
    start = rotor.ActuatorState.at_thrust(prof, clamped[0])

    def body(state, x):
        c, h = x
        nxt, _ = rotor.actuator_step(prof, state, c, dt=h)
        return nxt, state.speed

    _, speeds = jax.lax.scan(body, start, (clamped, dt))
    return speeds


@jax.jit
def _inputs(prof, scene, dt, quat, position, velocity, cmd):
    rot = jax.vmap(quat_to_mat)(quat)
    prox = jax.vmap(lambda x, r: rotor.rotor_proximity(scene, prof, x, r))(position, rot)
    v_body = jnp.einsum("kji,kj->ki", rot, velocity)
    return HoverInputs(thrust_command=cmd, speed=replay_actuator(prof, cmd, dt), proximity=prox, rotation=rot,
                       velocity_body=v_body, dt=dt)


def hover_inputs(prof: rotor.RotorProfile, log: HoverLog, *, length: int | None = None) -> HoverInputs:
    """The model inputs of a whole log (float64 under x64).

    With ``length`` (at least the log's row count) the inputs have that many
    rows: the log is extended by holding its last row, time advancing one
    sample period per row. The replay is causal, so the log's own rows are
    unchanged; logs padded to one length share one compiled fit."""
    n = log.n_samples
    m = n if length is None else int(length)
    if m < n:
        raise ConfigError(f"length: must be at least the log's {n} rows, got {length!r}")

    def f(x):
        x = np.asarray(x)
        return jnp.asarray(np.concatenate([x, np.repeat(x[-1:], m - n, axis=0)]) if m > n else x)

    dt = np.concatenate([np.diff(log.time), np.full(m - n + 1, log.dt)])  # the last row's step: the median
    return _inputs(prof, log.scene_model(), jnp.asarray(dt), f(log.quat), f(log.position), f(log.velocity),
                   f(log.thrust_command))


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
    """(N, 3) predicted accelerometer specific force, body frame [m/s^2]."""
    chain = chain_params(params)

    def one(cmd, speed, prox, rot, v_body, dt):
        inp = rotor.ChainInput(actuator=rotor.ActuatorState(speed=speed), proximity=prox,
                               motion=rotor.BodyMotion(rotation=rot, velocity_body=v_body, time=jnp.zeros_like(dt)))
        out = rotor.realize_thrusts(prof, cmd, inp, HOVER_OPTIONS, dt=dt, params=chain)
        return out.wrench[:3]

    force = jax.vmap(one)(inputs.thrust_command, inputs.speed, inputs.proximity, inputs.rotation,
                          inputs.velocity_body, inputs.dt)
    return force / prof.mass + _vec(params, "accel_bias")


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
